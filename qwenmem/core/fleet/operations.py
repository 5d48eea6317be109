"""The maintenance commands a fleet run can apply to one workspace: a table of library operations.

The driver (qwenmem/cli/commands/fleet.py) parses `COMMAND …` with the single-workspace CLI's own command, with
its flags and its validation, into the frozen `Options` of a qwenmem.core.ops module; a worker runs that module's
`run` on each workspace, the very operation the single command runs, and returns its `Outcome` with the data as
plain JSON, the same document `--json` prints, so it crosses a process pool or a Dask cluster unchanged.
The entries not yet switched to `ops(…)` call their hand-written functions below (issue 25).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from qwenmem.core.fleet.plain import to_plain
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.repair.run import RepairMode

OK: Final = "ok"
PROBLEMS: Final = "problems"
Plain = Outcome[dict[str, Any]]


OPS_PACKAGE: Final = "qwenmem.core.ops"


@dataclass(frozen=True)
class Operation:
    name: str  # as typed after `--`, e.g. "sessions repair"
    usage: str
    run: Callable[[Workspace, Any], Plain]


@dataclass(frozen=True)
class OpsRun:
    """The run of a table entry whose command is qwenmem.core.ops modules (Options + run): the module the parsed
    options belong to runs, and its data becomes the document `--json` prints."""

    modules: tuple[str, ...]  # e.g. ("compact", "compact_check"): `compact` parses to either one's Options

    def __call__(self, ws: Workspace, options: Any) -> Plain:
        module_name = type(options).__module__
        assert module_name.removeprefix(OPS_PACKAGE + ".") in self.modules, type(options).__qualname__
        module = importlib.import_module(module_name)
        outcome: Outcome[Any] = module.run(ws, options)
        return outcome.with_data(document(outcome.data, getattr(module, "OMITTED_FIELDS", ())))


def ops(*modules: str) -> OpsRun:
    return OpsRun(modules)


def document(data: Any, omitted: Any = ()) -> Any:
    """An operation's data as plain JSON, minus the fields its module leaves out of the document (OMITTED_FIELDS:
    the warnings it also has as the outcome's, what only people's view needs)."""
    plain = to_plain(data)
    return {k: v for k, v in plain.items() if k not in omitted} if isinstance(plain, dict) else plain


@dataclass(frozen=True)
class RepairOptions:
    mode: RepairMode
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


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation("doctor", "doctor", _doctor),
        Operation("sessions repair", "sessions repair --check | --all | --dry-run [--fix-tool-pairs] "
                                     "[--from-backup] [--convert-1x]", _repair),
        Operation("compact", "compact --check | --all | SESSION [every flag of compact]", ops("compact", "compact_check")),
        Operation("reindex", "reindex [every flag of reindex]", ops("reindex")),
        Operation("dream", "dream [every flag of dream but --restore, --list-backups, --log-file]", ops("dream")),
        Operation("history check", "history check [--deep]", _history_check),
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
