"""The maintenance commands a fleet run can apply to one workspace, called through the core library directly.

The driver (qwenmem/cli/fleet.py) parses `COMMAND …` with the single-workspace CLI's own command, with its flags
and its validation, into the frozen options below; a worker runs the operation on each workspace and returns an
`Outcome` whose data is plain, so it crosses a process pool or a Dask cluster unchanged. `compact --check` runs
the very operation the CLI runs (qwenmem.core.ops.compact_check); the others call the same core functions as
their commands, not yet through an operation of their own (issue 25).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from qwenmem.core.fleet.plain import to_plain
from qwenmem.core.ops import compact_check
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

OK: Final = "ok"
PROBLEMS: Final = "problems"
Plain = Outcome[dict[str, Any]]


@dataclass(frozen=True)
class Operation:
    name: str  # as typed after `--`, e.g. "sessions repair"
    usage: str
    run: Callable[[Workspace, Any], Plain]


@dataclass(frozen=True)
class RepairOptions:
    mode: str  # check | dry-run | repair (qwenmem.core.repair)
    fix_tool_pairs: bool = False
    from_backup: bool = False
    convert_1x: bool = False


def _repair(ws: Workspace, o: RepairOptions) -> Plain:
    from qwenmem.core.repair import run_repair
    from qwenmem.core.sessions import iter_session_refs

    run = run_repair(ws, list(iter_session_refs(ws)), o.mode, o.fix_tool_pairs, o.from_backup,
                     convert_gen1=o.convert_1x)
    if run.changed_underneath:
        from qwenmem.core.errors import ChangedUnderneathError

        changed = [f.key for f in run.files if f.status == "changed"]
        raise ChangedUnderneathError(f"changed while repairing: {', '.join(changed)}")
    result = {"workspace": run.workspace, "mode": run.mode, "run": run.run_id, "quarantine": run.quarantine,
              "counts": run.counts, "statuses": run.statuses, "files": to_plain(run.files)}
    return Outcome(PROBLEMS if run.needs_attention else OK, result)


@dataclass(frozen=True)
class CompactAllOptions:
    """`compact --all` as fleet runs it."""

    dry_run: bool = False
    summarizer: str = "auto"
    longterm: bool | None = None


def _compact(ws: Workspace, o: compact_check.Options | CompactAllOptions) -> Plain:
    if isinstance(o, compact_check.Options):  # the CLI's own operation
        outcome = compact_check.run(ws, o)
        return Outcome(outcome.status, to_plain(outcome.data), outcome.warnings, outcome.errors, outcome.events)
    from qwenmem.core.compaction.run import CompactOptions, compact_sessions
    from qwenmem.core.sessions import iter_session_refs
    from qwenmem.core.settings import load_settings

    settings = load_settings(ws)
    opts = CompactOptions(dry_run=o.dry_run, summarizer=o.summarizer, longterm=o.longterm)
    refs = [r for r in iter_session_refs(ws) if not r.stale_flat_copy]
    if o.summarizer != "extractive":
        from qwenmem.core.llm import resolve_llm_config

        opts.llm = resolve_llm_config(ws, settings, None, None, None, None)
    done, _ = compact_sessions(ws, refs, settings, opts)
    bad = [r for r in done if r.status in ("failed", "skipped")]
    warnings = [f"{r.key}: {w}" for r in done for w in r.warnings]
    warnings += [f"{r.key}: {r.status}, {r.error}" for r in bad]
    result = {"workspace": str(ws.path), "dry_run": o.dry_run, "sessions": to_plain(done)}
    return Outcome(PROBLEMS if bad else OK, result, tuple(warnings))


@dataclass(frozen=True)
class ReindexOptions:
    full: bool = False
    dry_run: bool = False
    embedder: str | None = None
    model: str | None = None
    sources: str | None = None
    recursive: bool | None = None  # None: QwenPaw's recursive_file_watcher, as the CLI
    verify: bool = False


def _reindex(ws: Workspace, o: ReindexOptions) -> Plain:
    from qwenmem.core.index import reindex
    from qwenmem.core.settings import load_settings

    result = reindex(ws, load_settings(ws), full=o.full, sources=o.sources, recursive=o.recursive,
                     backend=o.embedder, model=o.model, dry_run=o.dry_run, verify=o.verify)
    # as `qwenmem reindex --json`: the notices are the warnings, not part of the result; chunks left without vectors
    # (the embedder failed) is a partial success
    document = {k: v for k, v in to_plain(result).items() if k != "notices"}
    return Outcome(PROBLEMS if result.chunks_without_vectors else OK, document, tuple(result.notices))


@dataclass(frozen=True)
class DreamOptions:
    dry_run: bool = False
    date: str | None = None
    mode: str = "auto"  # auto | llm | deterministic
    keep: int | None = None
    promote: str = "facts"  # facts | all | none
    use_embeddings: bool = True
    similarity: float = 0.9
    max_shrink: float = 0.5
    allow_shrink: bool = False


def _dream(ws: Workspace, o: DreamOptions) -> Plain:
    from qwenmem.core.dream.run import DreamOptions as RunOptions
    from qwenmem.core.dream.run import dream
    from qwenmem.core.errors import UsageError
    from qwenmem.core.settings import load_settings

    settings = load_settings(ws)
    llm = None
    if o.mode != "deterministic":
        from qwenmem.core.llm import resolve_llm_config

        llm = resolve_llm_config(ws, settings, None, None, None, None)
        if llm is None and o.mode == "llm":
            raise UsageError("--mode llm: no LLM configured for this workspace")
    result = dream(ws, settings, RunOptions(date=o.date, dry_run=o.dry_run, promote=o.promote,
                                            use_embeddings=o.use_embeddings, similarity=o.similarity,
                                            max_shrink=o.max_shrink, allow_shrink=o.allow_shrink, keep=o.keep,
                                            llm=llm))
    # as `qwenmem dream --json`: the warnings are the record's, not part of the result
    document = {k: v for k, v in to_plain(result).items() if k != "warnings"}
    return Outcome(OK, document, tuple(result.warnings))


@dataclass(frozen=True)
class DoctorOptions:
    """doctor takes no options of its own."""


def _doctor(ws: Workspace, o: DoctorOptions) -> Plain:
    from qwenmem.core.doctor import run_doctor, to_json

    report = run_doctor(ws.path)
    return Outcome(PROBLEMS if report.needs_attention else OK, to_json(report))


@dataclass(frozen=True)
class HistoryCheckOptions:
    deep: bool = False


def _history_check(ws: Workspace, o: HistoryCheckOptions) -> Plain:
    from qwenmem.core.history.check import check_history
    from qwenmem.core.history.maintain import live_history_path
    from qwenmem.core.session_rows import rows_locator
    from qwenmem.core.settings2 import load_gen2_settings

    result = check_history(live_history_path(ws), ws.sessions_dir, load_gen2_settings(ws).history_retention_days,
                           deep=o.deep, locate=rows_locator(ws))
    return Outcome(PROBLEMS if result.needs_attention else OK, to_plain(result))


def _upgrade(ws: Workspace, o: Any) -> Plain:
    from qwenmem.core.ops import upgrade

    outcome = upgrade.run_undo(ws, o) if o.undo else upgrade.run(ws, o)
    return Outcome(outcome.status, to_plain(outcome.data), outcome.warnings, outcome.errors, outcome.events)


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation("doctor", "doctor", _doctor),
        Operation("sessions repair", "sessions repair --check | --all | --dry-run [--fix-tool-pairs] "
                                     "[--from-backup] [--convert-1x]", _repair),
        Operation("compact", "compact --check [every flag of compact --check] | --all [--dry-run] "
                             "[--summarizer auto|llm|extractive] [--no-longterm]", _compact),
        Operation("reindex", "reindex [--full] [--dry-run] [--verify] [--embedder NAME] [--model NAME] "
                             "[--sources LIST] [--recursive/--no-recursive]", _reindex),
        Operation("dream", "dream [--dry-run] [--date DATE] [--mode auto|llm|deterministic] [--keep N] "
                           "[--promote WHAT] [--no-embeddings] [--similarity X] [--max-shrink X] [--allow-shrink]",
                  _dream),
        Operation("history check", "history check [--deep]", _history_check),
        Operation("upgrade", "upgrade [--strategy scroll|native] [--dry-run] [--undo] [--retention-days N]",
                  _upgrade),
    )
}


@dataclass(frozen=True)
class Command:
    """A parsed command line after `--`: the operation, the words as typed, and the options they parse to."""

    name: str
    argv: tuple[str, ...]
    options: Any  # the operation's frozen options (picklable: they cross to the workers)

    @property
    def text(self) -> str:
        return " ".join((self.name, *self.argv))


def command_words() -> set[str]:
    """The first words of the operations: where the workspace list ends on the command line."""
    return {name.split()[0] for name in OPERATIONS}
