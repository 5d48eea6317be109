"""`qwenmem doctor`: one screen over every agent of a QwenPaw root that says what needs attention (read-only;
qwenmem/core/ops/doctor.py)."""

from __future__ import annotations

from typing import Any

import typer

from qwenmem.cli import output
from qwenmem.cli.context import state
from qwenmem.cli.options import AgentOpt, JsonFlag, QuietFlag, WorkspaceOpt
from qwenmem.cli.result import CommandResult


def doctor(ctx: typer.Context, quiet: QuietFlag = False, json_out: JsonFlag = False, workspace: WorkspaceOpt = None,
           agent: AgentOpt = None) -> CommandResult:
    """Check every agent of a QwenPaw root: sessions, search index, last dream, quarantine and backups, QwenPaw's
    own dream schedule, the 2.x history database. Writes nothing; exit 1 if anything needs attention. With --quiet,
    nothing is printed unless something needs attention (then only what does), so cron mails only then.

    Examples:

      qwenmem doctor

      qwenmem -w ~/.qwenpaw doctor --json

      qwenmem doctor --quiet   # from cron: prints (and cron mails) only what needs attention
    """
    from qwenmem.core.doctor import to_json
    from qwenmem.core.ops import doctor as doctor_op

    st = state(ctx)
    outcome = doctor_op.run(workspace or st.workspace, doctor_op.Options(agent or st.agent))
    report = outcome.data
    document = outcome.with_data(to_json(report))
    if quiet and not report.needs_attention:
        return CommandResult.of(document, quiet=True)
    return CommandResult.of(document, quiet=quiet, render=lambda: _render(report, attention_only=quiet))


VALUE_HANG = " " * 12  # under the value of `  sessions  …`
FINDING_HANG = " " * 4  # under the area of `  note index: …`
_LEVEL_STYLE = {"attention": "bold red", "note": "yellow"}


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _day(stamp: str | None) -> str:
    return stamp[:10] if stamp else "-"


def _index_line(idx: Any) -> str:
    if idx.state == "missing":
        return "none"
    model = idx.embedder or "full text only"
    extra = f", {len(idx.stale_files)} file(s) changed" if idx.stale_files else ""
    vectors = ", vectors missing" if idx.vectors_missing else ""
    return f"{idx.state} ({idx.chunks:,} chunks in {idx.files} file(s), {model}{extra}{vectors})"


def _dream_line(d: Any) -> str:
    if not d.runs:
        return "never (by qwenmem)"
    changes = ", ".join(f"{n} {a}" for a, n in sorted(d.last_changes.items())) or "no changes"
    return f"{_day(d.last_time)} {d.last_kind or 'dream'} ({d.last_mode or '?'}): {changes}; {d.runs} run(s) logged"


def _render(report: Any, attention_only: bool = False) -> None:
    con = output.out()
    say = output.para
    for a in report.agents:
        if attention_only and not a.needs_attention:
            continue
        head = f"agent {a.agent}" if a.agent else "workspace"
        mark = "[bold red]needs attention[/bold red]" if a.needs_attention else "[green]ok[/green]"
        say(f"[bold]{output.escape(head)}[/bold]  {mark}  [dim]{output.escape(a.workspace)}[/dim]", "  ")
        if a.error is None and not attention_only:
            s = a.sessions
            say(f"  sessions  {s.total} ({s.ok} ok, {len(s.corrupt)} damaged, {len(s.needs_flag)} need a "
                      f"flag, {len(s.near_threshold)} near the {s.compact_threshold:,}-token threshold)", VALUE_HANG)
            say(f"  index     {output.escape(_index_line(a.index))}", VALUE_HANG)
            say(f"  dream     {output.escape(_dream_line(a.dream))}", VALUE_HANG)
            cron = (f"QwenPaw's dream_cron {a.schedule.dream_cron!r}" if a.schedule.qwenpaw_dreams
                    else "QwenPaw's dream_cron off")
            say(f"  schedule  {output.escape(cron)}", VALUE_HANG)
            for ar in a.storage:
                say(f"  kept      {output.escape(ar.name)}: {ar.files} file(s), {_size(ar.bytes)}, "
                    f"oldest {_day(ar.oldest)}", VALUE_HANG)
            if a.history.status != "not_applicable":
                rows = f", {a.history.rows:,} rows" if a.history.rows is not None else ""
                say(f"  history   {a.history.status} ({_size(a.history.size)}{rows})", VALUE_HANG)
        for f in a.findings:
            if attention_only and f.level != "attention":
                continue
            style = _LEVEL_STYLE.get(f.level, "")
            say(f"  [{style}]{f.level}[/{style}] {f.area}: {output.escape(f.message)}", FINDING_HANG)
    n = report.attention_count
    summary = (f"{n} thing(s) need attention" if n else "nothing needs attention")
    con.print(f"[bold]{summary}[/bold] in {len(report.agents)} agent(s) ({report.elapsed_ms} ms)")
