"""`snapshot list`: the snapshots, oldest first, with their size and what each added to the store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace


@dataclass(frozen=True)
class Options:
    """`snapshot list` takes no flag but the output's."""


@dataclass
class SnapshotListResult:
    """`snapshot list --json` result."""

    directory: str
    count: int
    snapshots: list[Any]  # qwenmem.core.snapshot.SnapshotInfo
    damaged: list[str]  # unreadable manifests, as 'name: why'


def run(ws: Workspace, options: Options) -> Outcome[SnapshotListResult]:
    """An unreadable manifest is a warning: the other snapshots are listed."""
    from qwenmem.core.snapshot import list_snapshots, snapshots_dir

    with recording() as log:
        found, damaged = list_snapshots(ws)
    warnings = tuple(f"unreadable snapshot manifest {d}" for d in damaged)
    return Outcome("ok", SnapshotListResult(str(snapshots_dir(ws)), len(found), found, damaged), warnings,
                   events=log.events)
