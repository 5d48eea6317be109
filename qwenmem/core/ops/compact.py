"""`compact`: QwenPaw's three-tier compaction of named sessions or of every one (--all), both generations.

`compact --check` is its own operation (qwenmem/core/ops/compact_check.py): it writes nothing and needs no LLM.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from qwenmem.core.errors import UsageError
from qwenmem.core.events import recording
from qwenmem.core.ops import compact_check
from qwenmem.core.ops.outcome import CodedError, ExitAs, Outcome, Status
from qwenmem.core.workspace import Workspace

#: fields of CompactResult that are not in the document: the summarizer's announcement is for people only
OMITTED_FIELDS = frozenset({"announcement"})
#: how compaction names a session's failure (CompactReport.error_kind) when it has an exit of its own
NAMED_FAILURES: dict[str, ExitAs] = {"llm": "llm", "changed": "busy", "busy": "busy"}


@dataclass(frozen=True)
class Options(compact_check.Options):
    """Every flag of `qwenmem compact` but --check and the output's (--quiet, --json, --format), with the CLI's
    defaults: a check's flags (one list, qwenmem.core.ops.compact_check.Options) and the LLM's. The flag rules are
    checked when the options are made."""

    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_timeout: float | None = None
    llm_retries: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.session and not self.all_sessions:
            raise UsageError("name a session, or pass --all (see `qwenmem sessions list`)")

    @property
    def check(self) -> compact_check.Options:
        """The same flags as a check's."""
        return compact_check.Options(**{f.name: getattr(self, f.name) for f in fields(compact_check.Options)})


@dataclass
class CompactResult:
    """`compact --json` result."""

    workspace: str
    dry_run: bool
    sessions: list[Any]  # qwenmem.core.compaction.check.CompactReport
    announcement: str = ""  # which summarizer runs, for people (not in the document)


def run(ws: Workspace, options: Options) -> Outcome[CompactResult]:
    """Compact; a single named session's failure raises (its exit code says why). With --all each session's
    failure is an error of the outcome and the others still run: problems (exit 1), or the failure's own exit when
    every session failed the same named way (an LLM 5, a lock or a change underneath 4)."""
    from qwenmem.core.compaction.run import compact_sessions
    from qwenmem.core.sessions import find_session, iter_session_refs
    from qwenmem.core.settings import load_settings

    with recording() as log:
        settings = load_settings(ws)
        opts = compact_check.compact_options(options.check)
        if options.session:
            refs = [find_session(ws, options.session)]
        else:
            refs = [r for r in iter_session_refs(ws) if not r.stale_flat_copy]
        if options.summarizer != "extractive" and not options.prune_only:
            from qwenmem.core.llm import resolve_llm_config

            opts.llm = resolve_llm_config(ws, settings, options.llm_base_url, options.llm_model, options.llm_api_key,
                                          options.llm_timeout, retries=options.llm_retries)
        # a single damaged 1.x session is refused (exit 3) rather than reported as skipped
        reports, announcement = compact_sessions(ws, refs, settings, opts, refuse_damaged=len(refs) == 1)
    data = CompactResult(str(ws.path), options.dry_run, reports, "" if options.prune_only else announcement)
    return _outcome(data, log.events)


def _outcome(data: CompactResult, events: Any) -> Outcome[CompactResult]:
    from qwenmem.core.compaction.check import PARTIAL

    reports = data.sessions
    failed = [r for r in reports if r.status == "failed"]
    skipped = [r for r in reports if r.status == "skipped"]  # damaged sessions: repair first; a partial run
    partial = [r for r in reports if r.status != "failed" and r.error_kind == PARTIAL]  # written, not all done
    warnings = [f"{r.key}: {w}" for r in reports for w in r.warnings]
    warnings += [f"{r.key}: skipped, {r.error}" for r in skipped]
    warnings += [f"{r.key}: partly done, {r.error}" for r in partial]
    errors = tuple(CodedError(r.error_kind, f"{r.key}: {r.error}") for r in failed)
    kinds = {r.error_kind for r in failed}
    exit_as = None
    if failed and len(failed) == len(reports) and len(kinds) == 1:  # all failed the same way: that way's exit
        exit_as = NAMED_FAILURES.get(next(iter(kinds)))
    status: Status = "problems" if failed or skipped or partial else "ok"
    return Outcome(status, data, tuple(warnings), errors, events, exit_as=exit_as)
