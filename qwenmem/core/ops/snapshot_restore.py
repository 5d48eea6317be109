"""`snapshot restore`: put memory/, digest/ and MEMORY.md back as a snapshot holds them (the current state is
snapshotted first, so the restore is itself undoable)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.snapshot import RestoreResult

#: as the snapshot's (qwenmem/core/ops/snapshot.py): the warnings are the outcome's
OMITTED_FIELDS = frozenset({"warnings"})


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem snapshot restore` but the output's (--quiet, --json), with the CLI's defaults."""

    ident: str | None = None  # a snapshot id or a unique prefix; None: the newest
    paths: tuple[str, ...] = ()  # only these files or directories (workspace-relative); none: everything
    exact: bool = False  # also remove files that are not in the snapshot (they are kept in the undo snapshot)
    keep: int | None = None
    dry_run: bool = False


def run(ws: Workspace, options: Options) -> Outcome[RestoreResult]:
    from qwenmem.core.snapshot import restore

    with recording() as log:
        result = restore(ws, options.ident, dry_run=options.dry_run, exact=options.exact,
                         paths=list(options.paths) or None, keep=options.keep)
    return Outcome("ok", result, tuple(result.warnings), events=log.events)
