"""`sessions restore`: list the quarantine runs, or put quarantined originals back (itself undoable)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem sessions restore`, with the CLI's defaults."""

    target: str | None = None  # a quarantine run id (or prefix), or a session; None with no --run: list the runs
    run: str | None = None  # take the session's original from this run
    dry_run: bool = False

    @property
    def lists_runs(self) -> bool:
        return self.target is None and self.run is None


@dataclass
class RestoreRunsResult:
    """`sessions restore --json` with no target: the quarantine runs."""

    workspace: str
    runs: list[Any]  # qwenmem.core.repair.quarantine.RunInfo


def run(ws: Workspace, options: Options) -> Outcome[Any]:
    """The runs (RestoreRunsResult), or what was put back (qwenmem.core.repair.restore.RestoreResult): problems,
    exit busy (4), when a file changed since it was read."""
    from qwenmem.core.repair.quarantine import list_runs
    from qwenmem.core.repair.restore import restore

    with recording() as log:
        if options.lists_runs:
            runs = list_runs(ws)
        else:
            result = restore(ws, options.target or "", options.run, options.dry_run)
    if options.lists_runs:
        return Outcome("ok", RestoreRunsResult(str(ws.path), runs), events=log.events)
    changed = any(f.status == "changed" for f in result.files)
    return Outcome("problems" if changed else "ok", result, events=log.events, exit_as="busy" if changed else None)
