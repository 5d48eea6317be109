"""`qwenmem compact`: QwenPaw's three-tier compaction, run from outside the assistant, safely.

The flags become the options of one of two library operations, qwenmem/core/ops/compact.py (the run) or
qwenmem/core/ops/compact_check.py (--check); fleet builds them from the same flags (options_from). The people's
view is render.py.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional, cast

import typer

from qwenmem.cli import output
from qwenmem.cli.choices import Summarizer, Tokenizer
from qwenmem.cli.commands.compact import render
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import (AgentOpt, DryRunFlag, FormatOpt, JsonFlag, LLMBaseOpt, LLMKeyOpt, LLMModelOpt,
                                 LLMRetriesOpt, LLMTimeoutOpt, QuietFlag, TokenizerOpt, WorkspaceOpt)
from qwenmem.cli.output import OutputFormat
from qwenmem.cli.result import CommandResult, document_of
from qwenmem.cli.runner import command
from qwenmem.core.ops import compact as compact_op
from qwenmem.core.ops import compact_check
from qwenmem.core.ops.compact import CompactResult  # noqa: F401 - the result the JSON contract pins
from qwenmem.core.ops.compact_check import CompactCheckResult  # noqa: F401 - the result the JSON contract pins

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
    options = options_from(dict(locals()))
    if not isinstance(options, compact_op.Options):  # a check (compact_op.Options is a check's flags and more)
        checked = compact_check.run(open_workspace(ctx, workspace, agent), options)
        return CommandResult.of(checked, command="compact check",
                                render=lambda: render.check(checked.data.sessions, detailed=bool(session)))
    outcome = compact_op.run(open_workspace(ctx, workspace, agent), options)
    result = outcome.data
    if result.announcement and not quiet:
        output.note(result.announcement)
    document = outcome.with_data(document_of(result, compact_op.OMITTED_FIELDS))
    return CommandResult.of(document, render=None if quiet else lambda: render.results(result.sessions,
                                                                                         result.dry_run))


#: parameters of the command function that are not options of the operations: where the workspace is, how the
#: output looks, and --check, which picks the operation
NOT_OPTIONS = frozenset({"ctx", "check", "quiet", "json_out", "output_format", "workspace", "agent"})


def options_from(params: dict[str, Any]) -> compact_op.Options | compact_check.Options:
    """The parsed flags (as the command function receives them, for fleet too) as the operation's options: a
    check's, or a run's. The flag rules are checked here, before any workspace is looked for."""
    words = {k: v for k, v in params.items() if k not in NOT_OPTIONS}
    words["tokenizer"] = cast(compact_check.TokenizerName, Tokenizer(words["tokenizer"]).value)
    words["summarizer"] = cast(compact_check.Summarizer, Summarizer(words["summarizer"]).value)
    if params["check"]:  # the LLM flags mean nothing to a check: it summarizes nothing
        return compact_check.Options(**{k: v for k, v in words.items() if not k.startswith("llm_")})
    return compact_op.Options(**words)
