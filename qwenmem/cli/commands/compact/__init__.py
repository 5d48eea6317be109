"""`qwenmem compact`: QwenPaw's three-tier compaction, run from outside the assistant, safely."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from qwenmem.cli import output
from qwenmem.cli.choices import Summarizer, Tokenizer
from qwenmem.cli.context import open_workspace
from qwenmem.cli.errors import exit_code_for_compaction_failures
from qwenmem.cli.output import OutputFormat
from qwenmem.cli.result import CommandResult, ErrorItem, status_for
from qwenmem.cli.tables import Cell, Column, Kind, number
from qwenmem.cli.tables import render as render_table
from qwenmem.cli.runner import command
from qwenmem.core.ops import compact_check
from qwenmem.core.ops.compact_check import CompactCheckResult  # noqa: F401 - the result the JSON contract pins
from qwenmem.core.compaction.tiers import (Gen2Decision, LongtermDetail, NativeDetail, PruneDetail, ScrollDetail,
                                           SummaryDetail)
from qwenmem.cli.options import (AgentOpt, DryRunFlag, FormatOpt, JsonFlag, LLMBaseOpt, LLMKeyOpt, LLMModelOpt, LLMRetriesOpt,
                                 LLMTimeoutOpt, QuietFlag, TokenizerOpt, WorkspaceOpt)

if TYPE_CHECKING:
    from qwenmem.core.compaction.check import CompactReport

_Opt = typer.Option
SessionArg = Annotated[Optional[str], typer.Argument(help="Session key, file name, path, or QwenPaw session id.")]
AllFlag = Annotated[bool, _Opt("--all", help="Every session in the workspace.")]
CheckFlag = Annotated[bool, _Opt("--check", help="Only report tokens, threshold and the split; write nothing.")]
ForceFlag = Annotated[bool, _Opt("--force", help="Compact even below the threshold (like QwenPaw's /compact).")]
MaxInputOpt = Annotated[Optional[int], _Opt("--max-input-length", min=1, help=(
    "Model context size M (default: the active model's provider config, else 131072)."))]
ThresholdOpt = Annotated[Optional[float], _Opt("--threshold-ratio", help="Compact at this share of M (default 0.8; "
                                                                          "legacy agent.json 0.75).")]
ReserveOpt = Annotated[Optional[float], _Opt("--reserve-ratio", help="Keep this share of M as the newest messages "
                                                                     "(default 0.1).")]
SummarizerOpt = Annotated[Summarizer, _Opt("--summarizer", help="auto (LLM if configured, else extractive), llm or "
                                                                "extractive.")]
PruneFlag = Annotated[bool, _Opt("--prune/--no-prune", help="Tier 1: cut large tool outputs.")]
PruneOnlyFlag = Annotated[bool, _Opt("--prune-only", help="Only tier 1: cut tool outputs, never summarize.")]
LongtermFlag = Annotated[Optional[bool], _Opt("--longterm/--no-longterm", help=(
    "Tier 3: note in memory/<date>.md (default: agent.json summarize_when_compact)."))]
RecentNOpt = Annotated[Optional[int], _Opt("--recent-n", min=1, help="Tool outputs in this many newest messages get "
                                                                     "the recent limit (default 2).")]
OldBytesOpt = Annotated[Optional[int], _Opt("--old-max-bytes", min=100, help="Limit for older tool outputs "
                                                                             "(default 3000).")]
RecentBytesOpt = Annotated[Optional[int], _Opt("--recent-max-bytes", min=1000, help="Limit for recent tool outputs "
                                                                                    "(default 50000).")]
SystemTokensOpt = Annotated[Optional[int], _Opt("--system-tokens", min=0, help=(
    "2.x: tokens of the system prompt (not stored in 2.x files; default: rebuilt from the workspace as QwenPaw's "
    "prompt builder makes it)."))]
ToolsTokensOpt = Annotated[Optional[int], _Opt("--tools-tokens", min=0, help=(
    "2.x: tokens of the tool schemas (not stored in 2.x files; default: those of the tools agent.json enables, "
    "as measured from QwenPaw)."))]
InstructionOpt = Annotated[str, _Opt("--instruction", help="Extra instruction for the LLM summary (like "
                                                           "/compact <text>).")]


@dataclass
class CompactResult:
    """`compact --json` result."""

    workspace: str
    dry_run: bool
    sessions: list[Any]


def register(app: typer.Typer) -> None:
    command(app, "compact")(compact)


def compact(
    ctx: typer.Context,
    session: SessionArg = None,
    all_sessions: AllFlag = False,
    check: CheckFlag = False,
    force: ForceFlag = False,
    dry_run: DryRunFlag = False,
    max_input_length: MaxInputOpt = None,
    threshold_ratio: ThresholdOpt = None,
    reserve_ratio: ReserveOpt = None,
    tokenizer: TokenizerOpt = Tokenizer.ESTIMATE,
    summarizer: SummarizerOpt = Summarizer.AUTO,
    prune: PruneFlag = True,
    prune_only: PruneOnlyFlag = False,
    longterm: LongtermFlag = None,
    recent_n: RecentNOpt = None,
    old_max_bytes: OldBytesOpt = None,
    recent_max_bytes: RecentBytesOpt = None,
    instruction: InstructionOpt = "",
    system_tokens: SystemTokensOpt = None,
    tools_tokens: ToolsTokensOpt = None,
    llm_base_url: LLMBaseOpt = None,
    llm_model: LLMModelOpt = None,
    llm_api_key: LLMKeyOpt = None,
    llm_timeout: LLMTimeoutOpt = None,
    llm_retries: LLMRetriesOpt = None,
    quiet: QuietFlag = False,
    json_out: JsonFlag = False,
    output_format: FormatOpt = OutputFormat.TABLE,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """Compact sessions the way QwenPaw does: cut old tool outputs, summarize what leaves the context,
    and note it in the day's memory log. Removed messages go to dialog/<date>.jsonl; originals are backed up.

    Exit 1 on a partial success: a 2.x scroll session whose history.db stays locked has only the messages that
    already had rows evicted. Exit 4 when the lock (or a change on disk) let nothing be written.

    Examples:

      qwenmem compact --check --all

      qwenmem compact console/default_1764235442381 --dry-run

      qwenmem compact console/default_1764235442381 --summarizer extractive

      QWENMEM_LLM_BASE_URL=http://localhost:8000/v1 QWENMEM_LLM_MODEL=qwen3 qwenmem compact --all --json
    """
    params = dict(locals())
    from qwenmem.core.compaction.options import Check2Options, CompactOptions
    from qwenmem.core.compaction.run import compact_sessions
    from qwenmem.core.errors import UsageError
    from qwenmem.core.sessions import find_session, iter_session_refs
    from qwenmem.core.settings import load_settings

    compact_check.validate(session, all_sessions, prune, prune_only, force)
    if check:  # the library operation fleet runs too (qwenmem/core/ops/compact_check.py)
        outcome = compact_check.run(open_workspace(ctx, workspace, agent), check_options(params))
        return CommandResult.of(outcome, command="compact check",
                                render=lambda: _render_check(outcome.data.sessions, detailed=bool(session)))
    ws = open_workspace(ctx, workspace, agent)
    settings = load_settings(ws)
    opts = CompactOptions(max_input_length=max_input_length, threshold_ratio=threshold_ratio,
                          reserve_ratio=reserve_ratio, tokenizer=tokenizer.value, force=force, dry_run=dry_run,
                          prune=prune, summarize=not prune_only, longterm=longterm, summarizer=summarizer.value,
                          recent_n=recent_n,
                          old_max_bytes=old_max_bytes, recent_max_bytes=recent_max_bytes,
                          extra_instruction=instruction,
                          gen2_check=Check2Options(max_input_length, threshold_ratio, reserve_ratio, system_tokens,
                                                   tools_tokens, force))
    if session:
        refs = [find_session(ws, session)]
    elif all_sessions:
        refs = [r for r in iter_session_refs(ws) if not r.stale_flat_copy]
    else:
        raise UsageError("name a session, or pass --all (see `qwenmem sessions list`)")

    if summarizer != Summarizer.EXTRACTIVE and not prune_only:
        from qwenmem.core.llm import resolve_llm_config

        opts.llm = resolve_llm_config(ws, settings, llm_base_url, llm_model, llm_api_key, llm_timeout,
                                      retries=llm_retries)
    # a single damaged 1.x session is refused (exit 3) rather than reported as skipped
    results, announcement = compact_sessions(ws, refs, settings, opts, refuse_damaged=len(refs) == 1)
    if announcement and not quiet and not prune_only:
        output.note(announcement)
    failed = [r for r in results if r.status == "failed"]
    skipped = [r for r in results if r.status == "skipped"]  # damaged sessions: repair first; a partial run
    warnings = [f"{r.key}: {w}" for r in results for w in r.warnings]
    warnings += [f"{r.key}: skipped, {r.error}" for r in results if r.status == "skipped"]
    from qwenmem.core.compaction.check import PARTIAL

    partial = [r for r in results if r.status != "failed" and r.error_kind == PARTIAL]  # written, not all done: 1
    warnings += [f"{r.key}: partly done, {r.error}" for r in partial]
    failures = [ErrorItem(r.error_kind, f"{r.key}: {r.error}") for r in failed]
    code = exit_code_for_compaction_failures([r.error_kind for r in failed], len(results)) if failed else None
    return CommandResult(CompactResult(str(ws.path), dry_run, results), status_for(bool(failed or skipped or partial)),
                         warnings=warnings, errors=failures, exit_code=code, quiet=False,
                         render=None if quiet else lambda: _render_results(results, dry_run))


#: the `compact` flags fleet takes with --check: everything but where the workspace is and how output looks
CHECK_FLEET_PARAMS = frozenset({"session", "all_sessions", "check", "force", "dry_run", "max_input_length",
                                "threshold_ratio", "reserve_ratio", "tokenizer", "summarizer", "prune", "prune_only",
                                "longterm", "recent_n", "old_max_bytes", "recent_max_bytes", "instruction",
                                "system_tokens", "tools_tokens", "llm_base_url", "llm_model", "llm_api_key",
                                "llm_timeout", "llm_retries"})


def check_options(params: dict[str, Any]) -> compact_check.Options:
    """`compact --check`'s parsed flags (as the command function receives them) as the operation's Options."""
    return compact_check.Options(
        session=params["session"], all_sessions=params["all_sessions"], force=params["force"],
        dry_run=params["dry_run"], max_input_length=params["max_input_length"],
        threshold_ratio=params["threshold_ratio"], reserve_ratio=params["reserve_ratio"],
        tokenizer=Tokenizer(params["tokenizer"]).value, summarizer=Summarizer(params["summarizer"]).value,
        prune=params["prune"], prune_only=params["prune_only"], longterm=params["longterm"],
        recent_n=params["recent_n"], old_max_bytes=params["old_max_bytes"],
        recent_max_bytes=params["recent_max_bytes"], instruction=params["instruction"],
        system_tokens=params["system_tokens"], tools_tokens=params["tools_tokens"])


CHECK_COLUMNS = (Column("session", Kind.KEY), Column("in ctx", Kind.NUMBER, "right"),
                 Column("system", Kind.NUMBER, "right", drop=2), Column("summary", Kind.NUMBER, "right", drop=1),
                 Column("messages", Kind.NUMBER, "right"), Column("tool out", Kind.NUMBER, "right", drop=1),
                 Column("threshold", Kind.NUMBER, "right"), Column("room", Kind.NUMBER, "right"),
                 Column("compact?", Kind.LABEL), Column("keep", Kind.NUMBER, "right"))


def _render_check(reports: list[Any], detailed: bool) -> None:
    con = output.out()
    if not reports:
        output.note("no sessions to check")
        return
    gen2_reports = [r for r in reports if getattr(r, "generation", "") == "2.x"]
    if gen2_reports:
        from qwenmem.cli.compact2_render import render_check2

        render_check2(gen2_reports, detailed)
        reports = [r for r in reports if r not in gen2_reports]
        if not reports:
            return
    render_table(CHECK_COLUMNS, [
        [r.key, str(r.message_count), number(r.tokens.system), number(r.tokens.summary), number(r.tokens.messages),
         number(r.tokens.tool_outputs), number(r.budget.left), number(r.room),
         Cell("yes", "bold red") if r.would_compact else "no", f"{len(r.kept_ids)}/{r.message_count}"]
        for r in reports])
    if output.table_format() == "tsv":
        return
    first = reports[0]
    b = first.budget
    output.para(f"[dim]QwenPaw 1.x rules, agent.json {first.config_layout} keys, {first.tokenizer}: M={b.max_input_length:,}, "
              f"T=int(M×{b.threshold_ratio:g})={b.threshold:,}, R=int(M×{b.reserve_ratio:g})={b.reserve:,}; "
              f"threshold = T − (system + summary); room = threshold − messages; in ctx: messages in the context "
              f"(`sessions list` msgs: every message in the file)[/dim]", width=con.width)
    if detailed:
        for r in reports:
            con.print(f"\n{output.escape(r.reason)}")
            if r.legacy_compressed:
                con.print(f"{r.legacy_compressed} legacy 'compressed' message(s) are not in context and are not counted")
            if r.would_compact:
                con.print(f"keeps {len(r.kept_ids)} message(s) ({r.keep_tokens:,} tokens), "
                          f"compacts {len(r.removed_ids)}")
                con.print("kept ids: " + output.escape(", ".join(r.kept_ids) or "(none)"), soft_wrap=True)
            if r.fallback:
                con.print(output.escape(r.fallback))
            if r.prunable_outputs:
                con.print(f"tier 1 would cut {r.prunable_outputs} tool output(s): "
                          f"{r.tokens.messages:,} → {r.tokens_after_prune:,} message tokens")


def _render_results(reports: list[CompactReport], dry_run: bool) -> None:
    con = output.out()
    for r in reports:
        if r.status in ("failed", "skipped"):
            continue
        con.print(f"[bold]{output.escape(r.key)}[/bold]: {r.status}")
        for line, id_list in _tier_lines(r, dry_run):
            con.print(line, soft_wrap=id_list)  # an id list is never wrapped mid-id
        con.print(f"  context tokens {r.context_tokens_before:,} → {r.context_tokens_after:,}"
                  + (f"; original kept at {r.backup}" if r.backup else ""))


def _tier_lines(r: CompactReport, dry_run: bool) -> list[tuple[str, bool]]:
    """(line, whether it is an id list) per tier, from the typed tier reports."""
    verb = "would " if dry_run else ""
    lines: list[tuple[str, bool]] = []
    t1, d1 = r.tier1, r.tier1.detail
    if t1.ran and isinstance(d1, PruneDetail) and (d1.outputs_cut or d1.outputs_recut):
        lines.append((f"  tier 1: {verb}cut {d1.outputs_cut} tool output(s), re-cut {d1.outputs_recut} "
                     f"({d1.bytes_removed:,} bytes; full texts in {len(d1.offload_files)} new offload file(s)); "
                     f"message tokens {t1.tokens_before:,} → {t1.tokens_after:,}", False))
    d2 = r.tier2.detail
    if r.tier2.ran and isinstance(d2, ScrollDetail):  # QwenPaw 2.x scroll: evicted, rows in history.db
        lines.append((f"  scroll: {'would evict' if dry_run else 'evicted'} {d2.removed_messages} message(s) "
                     f"(seq {d2.evicted_seq[0]}–{d2.evicted_seq[1]}, rows in history.db), kept "
                     f"{d2.kept_messages} + placeholder", False))
    elif r.tier2.ran and isinstance(d2, (SummaryDetail, NativeDetail)):
        lines.append((f"  tier 2: {'would remove' if dry_run else 'removed'} {d2.removed_messages} message(s) to "
                     f"{', '.join(d2.dialog_files) or 'dialog/ (already there)'}, kept {d2.kept_messages}; "
                     f"summary by {d2.summarizer}" + (f" in {d2.chunks} chunk(s)" if d2.chunks else ""), False))
        lines.append(("  removed ids: " + output.escape(", ".join(r.removed_ids)), True))
        lines.append(("  kept ids: " + output.escape(", ".join(r.kept_ids) or "(none)"), True))
    else:
        reason = d2.reason if isinstance(d2, (SummaryDetail, Gen2Decision)) else ""
        lines.append((f"  tier 2: not needed ({output.escape(reason)})", False))
    d3 = r.tier3.detail
    if r.tier3.ran and isinstance(d3, LongtermDetail):
        state = ("already noted (rerun)" if d3.duplicate else "written" if d3.written else
                 "would be written" if dry_run and d3.chars else "nothing to note")
        lines.append((f"  tier 3: {d3.path}: {state}", False))
    return lines
