"""`history rebuild-fts`: history.db's full-text table rebuilt from its rows when the two disagree."""

from __future__ import annotations

from dataclasses import dataclass

from qwenmem.core.events import recording
from qwenmem.core.history.maintain import FtsRebuild
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem history rebuild-fts` but --json, with the CLI's defaults."""

    force: bool = False  # rebuild even when the check finds no disagreement
    dry_run: bool = False


def run(ws: Workspace, options: Options) -> Outcome[FtsRebuild]:
    """A dry run that finds a rebuild needed exits 1 (as a check does), its status still ok, as it always was."""
    from qwenmem.core.history.maintain import rebuild_fts

    with recording() as log:
        result = rebuild_fts(ws, options.dry_run, options.force)
    return Outcome("ok", result, events=log.events,
                   exit_as="problems" if options.dry_run and result.needed else None)
