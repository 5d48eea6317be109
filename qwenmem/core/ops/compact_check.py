"""`compact --check`: each session's tokens, threshold and split, for both generations; writes nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from qwenmem.core.errors import UsageError
from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:  # a name for the result's field only: every command's start-up imports this module
    from qwenmem.core.settings.gen1 import ConfigLayout

TokenizerName = Literal["estimate", "o200k", "cl100k"]  # qwenmem.core.tokens.TOKENIZERS
Summarizer = Literal["auto", "llm", "extractive"]  # qwenmem.core.compaction.options.SUMMARIZERS


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem compact` that bears on --check, with the CLI's defaults. (The LLM and --dry-run
    flags are taken by the command and mean nothing to a check: it writes nothing and summarizes nothing.)"""

    session: str | None = None  # one session (key, file name, path or id); None: every session
    all_sessions: bool = False
    force: bool = False
    dry_run: bool = False
    max_input_length: int | None = None
    threshold_ratio: float | None = None
    reserve_ratio: float | None = None
    tokenizer: TokenizerName = "estimate"
    summarizer: Summarizer = "auto"
    prune: bool = True
    prune_only: bool = False
    longterm: bool | None = None
    recent_n: int | None = None
    old_max_bytes: int | None = None
    recent_max_bytes: int | None = None
    instruction: str = ""
    system_tokens: int | None = None
    tools_tokens: int | None = None

    def __post_init__(self) -> None:
        validate(self.session, self.all_sessions, self.prune, self.prune_only, self.force)


def validate(session: str | None, all_sessions: bool, prune: bool, prune_only: bool, force: bool) -> None:
    """The flag rules of `qwenmem compact` (with or without --check), in one place for the CLI and fleet."""
    if session and all_sessions:
        raise UsageError("name one session or pass --all, not both")
    if prune_only and (not prune or force):
        raise UsageError("--prune-only cannot be combined with --no-prune or --force")


@dataclass
class CompactCheckResult:
    """`compact --check --json` result."""

    workspace: str
    config_layout: ConfigLayout  # agent.json key layout
    sessions: list[Any]  # CheckReport (1.x) | Gen2CheckReport (2.x)


def compact_options(o: Options) -> Any:
    """The compaction run's options for these flags (qwenmem.core.compaction.options.CompactOptions)."""
    from qwenmem.core.compaction.options import Gen2CheckOptions, CompactOptions

    return CompactOptions(max_input_length=o.max_input_length, threshold_ratio=o.threshold_ratio,
                          reserve_ratio=o.reserve_ratio, tokenizer=o.tokenizer, force=o.force, dry_run=o.dry_run,
                          prune=o.prune, summarize=not o.prune_only, longterm=o.longterm, summarizer=o.summarizer,
                          recent_n=o.recent_n, old_max_bytes=o.old_max_bytes, recent_max_bytes=o.recent_max_bytes,
                          extra_instruction=o.instruction,
                          gen2_check=Gen2CheckOptions(o.max_input_length, o.threshold_ratio, o.reserve_ratio,
                                                   o.system_tokens, o.tools_tokens, o.force))


def run(ws: Workspace, options: Options) -> Outcome[CompactCheckResult]:
    """Check one named session (a failure raises: its exit code says why) or every session (a session that cannot
    be checked is a warning)."""
    from qwenmem.core.compaction.context import CompactRun
    from qwenmem.core.compaction.run import check_one
    from qwenmem.core.errors import WorkspaceError
    from qwenmem.core.sessions import find_session, iter_session_refs
    from qwenmem.core.settings import load_settings

    with recording() as log:
        settings = load_settings(ws)
        refs = [find_session(ws, options.session)] if options.session else list(iter_session_refs(ws))
        run_ = CompactRun(ws, settings, compact_options(options))  # one counter, limits and 2.x settings for all
        reports: list[Any] = []
        warnings: list[str] = []
        for ref in refs:
            try:
                reports.append(check_one(run_, ref))
            except WorkspaceError as exc:
                if options.session:
                    raise
                warnings.append(str(exc))
    data = CompactCheckResult(str(ws.path), settings.config_layout, reports)
    # a session that could not be checked is a warning, as it always was for the CLI (exit 0): `sessions repair
    # --check` is the command that reports damage
    return Outcome("ok", data, tuple(warnings), events=log.events)
