"""`qwenmem dream`: nightly consolidation of MEMORY.md (dedupe, replace, merge, promote), safe for cron.

Three library operations: qwenmem/core/ops/dream.py, dream_restore.py (--restore) and dream_list_backups.py
(--list-backups); --log-file is the command's own (it appends what people would read).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional, cast

import typer

from qwenmem.cli import output
from qwenmem.cli.choices import DreamMode, Promote
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import (AgentOpt, DryRunFlag, JsonFlag, LLMBaseOpt, LLMKeyOpt, LLMModelOpt, LLMRetriesOpt,
                                 LLMTimeoutOpt, QuietFlag, WorkspaceOpt)
from qwenmem.cli.result import CommandResult, document_of
from qwenmem.cli.runner import command
from qwenmem.core.ops import dream as dream_op
from qwenmem.core.ops import dream_list_backups, dream_restore

if TYPE_CHECKING:
    from qwenmem.core.dream.run import DreamResult, RestoreResult
    from qwenmem.core.ops.dream_list_backups import ListBackupsResult

#: parameters of the command function that are not options of a dream
NOT_OPTIONS = frozenset({"ctx", "log_file", "quiet", "json_out", "workspace", "agent"})
#: the parameters that ask for another operation than a dream: a restore, or the list of backups
RESTORE_PARAMS = frozenset({"backup", "restore_flag", "list_flag"})


def dream(
    ctx: typer.Context,
    backup: Annotated[Optional[str], typer.Argument(help="With --restore: the backup to restore (default: newest).",
                                                    show_default=False)] = None,
    date: Annotated[Optional[str], typer.Option("--date", help="Which day's log memory/YYYY-MM-DD.md to read: a date, "
                                                "today or yesterday (default: today in the user's timezone).")] = None,
    mode: Annotated[DreamMode, typer.Option("--mode", help="auto (LLM if configured, else deterministic), llm or "
                                            "deterministic.")] = DreamMode.AUTO,
    promote: Annotated[Promote, typer.Option("--promote", help="Deterministic mode: which log entries become long-term "
                                             "facts: facts (under Facts/Decisions/Lessons… headings), all, or none.")
                       ] = Promote.FACTS,
    embeddings: Annotated[bool, typer.Option("--embeddings/--no-embeddings", help="Find near-duplicates with the "
                                             "search index's embedding model when an index exists.")] = True,
    similarity: Annotated[float, typer.Option("--similarity", min=0.5, max=1.0, help="Cosine similarity two entries "
                                              "need to be near-duplicates; one must also restate the other word for "
                                              "word.")] = 0.9,
    max_shrink: Annotated[float, typer.Option("--max-shrink", min=0.01, max=1.0, help="LLM mode: reject a rewrite "
                                              "that shrinks MEMORY.md by more than this fraction.")] = 0.5,
    allow_shrink: Annotated[bool, typer.Option("--allow-shrink", help="LLM mode: accept any shrinkage.")] = False,
    keep: Annotated[Optional[int], typer.Option("--keep", min=1, help="Afterwards, delete MEMORY.md backups beyond "
                                                "the newest N (default: keep all).")] = None,
    restore_flag: Annotated[bool, typer.Option("--restore", help="Put a backup back as MEMORY.md (the current "
                                               "file is backed up first).")] = False,
    list_flag: Annotated[bool, typer.Option("--list-backups", help="List MEMORY.md backups and recent dreams.")] = False,
    dry_run: DryRunFlag = False,
    llm_base_url: LLMBaseOpt = None,
    llm_model: LLMModelOpt = None,
    llm_api_key: LLMKeyOpt = None,
    llm_timeout: LLMTimeoutOpt = None,
    llm_retries: LLMRetriesOpt = None,
    log_file: Annotated[Optional[Path], typer.Option("--log-file", help="Also append the summary (or the error) "
                                                     "to this file, even with --quiet.")] = None,
    quiet: QuietFlag = False,
    json_out: JsonFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """Consolidate MEMORY.md with the day's log: remove duplicates, let newer facts replace older ones, promote new
    facts under a dated heading. Backs up first (backup/memory_backup_*.md), writes atomically, and records every
    change in backup/dream_changelog.jsonl. Only MEMORY.md and backup/ are ever written.

    Exit codes: 0 done or nothing to do, 4 another qwenmem holds the lock (or MEMORY.md changed meanwhile),
    5 the LLM failed or its rewrite was rejected (nothing written).

    Examples:

      qwenmem dream --dry-run

      qwenmem dream --date 2026-11-27 --mode deterministic

      qwenmem dream --quiet --log-file ~/.qwenpaw/dream.log --keep 30

      qwenmem dream --restore

      qwenmem dream --restore memory_backup_20261127_230000.md
    """
    params = dict(locals())
    from qwenmem.core.errors import QwenmemError

    try:
        dream_op.validate(backup, restore_flag)
        options = options_from(params)
        ws = open_workspace(ctx, workspace, agent)
        if list_flag:
            return _list(ws)
        if restore_flag:
            restored = dream_restore.run(ws, dream_restore.Options(backup, dry_run, keep))
            _log(log_file, _restore_lines(restored.data))
            return CommandResult.of(restored, command="dream restore",
                                    render=None if quiet else lambda: _render_restore(restored.data))
        outcome = dream_op.run(ws, options)
    except QwenmemError as exc:
        _log(log_file, [f"error: {exc}"])
        raise
    result = outcome.data
    _log(log_file, _summary_lines(result) + [f"  warning: {w}" for w in result.warnings])
    document = outcome.with_data(document_of(result, dream_op.OMITTED_FIELDS))
    return CommandResult.of(document, quiet=quiet, warnings_first=True, render=None if quiet else lambda: _render(result))


def options_from(params: dict[str, Any]) -> dream_op.Options:
    """The parsed flags (as the command function receives them, for fleet too) as a dream's options."""
    words = {k: v for k, v in params.items() if k not in NOT_OPTIONS | RESTORE_PARAMS}
    words["mode"] = cast(dream_op.Mode, DreamMode(words["mode"]).value)
    words["promote"] = cast(dream_op.Promote, Promote(words["promote"]).value)
    return dream_op.Options(**words)


def _log(path: Path | None, lines: list[str]) -> None:
    if path is None:
        return
    from qwenmem.core.errors import WorkspaceError
    from qwenmem.core.fsio import append_durably

    stamp = datetime.now().astimezone().isoformat(timespec="seconds")
    from qwenmem.core.redact import redact

    text = redact("".join(f"{stamp} {line}\n" for line in lines))  # an endpoint's error may echo the key
    try:
        append_durably(path.expanduser(), text.encode("utf-8", "replace"))
    except (OSError, WorkspaceError) as exc:  # the dream itself succeeded: a bad --log-file only warns
        output.warn(f"cannot write the log file {path}: {getattr(exc, 'strerror', None) or exc}")


def _short(text: str | None, limit: int = 90) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _summary_lines(r: DreamResult) -> list[str]:
    counts = r.counts()
    what = ", ".join(f"{n} {action}" for action, n in sorted(counts.items())) or "no changes"
    verb = {"changed": "updated", "unchanged": "already tidy, nothing to do", "dry-run": "would be updated (dry run)"}
    lines = [f"dream {r.date} ({r.mode}): MEMORY.md {verb[r.status]}" + ("" if r.status == "unchanged" else f": {what}")
             + _skipped_summary(r.skipped)]
    if r.status != "unchanged":
        lines.append(f"  size {r.bytes_before:,} → {r.bytes_after:,} bytes")
    for c in r.changes + r.flagged:
        where = f"line {c.line}" if c.line else (c.section or "")
        lines.append(f"  {c.action:<8} {where}: {_short(c.old or c.new, 70)} ({_short(c.reason, 100)})")
    if getattr(r, "snapshot", None):
        lines.append(f"  snapshot of memory/, digest/, MEMORY.md: {r.snapshot} (`qwenmem snapshot restore` undoes)")
    if r.backup:
        lines.append(f"  backup: {r.backup}")
    if r.changelog:
        lines.append(f"  change log: {r.changelog}")
    if r.pruned:
        lines.append(f"  {'would prune' if r.status == 'dry-run' else 'pruned'} {len(r.pruned)} old backup(s)")
    if r.index_refreshed:
        lines.append("  search index refreshed")
    return lines


def _skipped_summary(skipped: list[str]) -> str:
    """What the day's log held that did not become a fact, and why, in one clause (the entries: `--json` skipped)."""
    from qwenmem.core.dream.consolidate import NOT_UNDER_A_FACT_HEADING

    outside = sum(s.endswith(NOT_UNDER_A_FACT_HEADING) for s in skipped)
    if not outside:
        return ""
    return (f"; {outside} log entr{'y' if outside == 1 else 'ies'} skipped: not under a Facts/Decisions/Lessons… "
            f"heading (the `facts` rule); `--promote all` would add {'it' if outside == 1 else 'them'}")


def _render(r: DreamResult) -> None:
    if r.status == "dry-run":
        output.out().print(output.escape(r.diff), end="", soft_wrap=True)
    for line in _summary_lines(r):
        output.para(output.escape(line), "    " if line.startswith("  ") else "  ")


def _restore_lines(r: RestoreResult) -> list[str]:
    verb = {"restored": "restored from", "unchanged": "already identical to", "dry-run": "would be restored from"}
    lines = [f"MEMORY.md {verb[r.status]} {r.restored_from}"]
    if r.backup:
        lines.append(f"  the replaced MEMORY.md was backed up to {r.backup}")
    if r.changelog:
        lines.append(f"  change log: {r.changelog}")
    return lines


def _render_restore(r: RestoreResult) -> None:
    if r.status == "dry-run":
        output.out().print(output.escape(r.diff), end="", soft_wrap=True)
    for line in _restore_lines(r):
        output.out().print(output.escape(line), soft_wrap=True)


def _list(ws: Any) -> CommandResult:
    listed = dream_list_backups.run(ws, dream_list_backups.Options())
    return CommandResult.of(listed, command="dream list-backups", render=lambda: _render_list(ws, listed.data))


def _render_list(ws: Any, listed: ListBackupsResult) -> None:
    if not listed.backups:
        output.note(f"no MEMORY.md backups in {ws.backup_dir}")
    for b in listed.backups:
        output.out().print(f"{output.escape(b.name)}  {output.human_size(b.size)}")
    for e in listed.recent:
        n = len(e.get("changes") or [])
        output.out().print(output.escape(f"{e.get('time')}  {e.get('kind')} ({e.get('mode')}): {n} change(s), "
                                         f"backup {e.get('backup')}"))


def register(app: typer.Typer) -> None:
    command(app, "dream")(dream)
