"""`snapshot`: back up memory/, digest/ and MEMORY.md into <workspace>/.qwenmem/snapshots/ (deduplicated).

`snapshot list` and `snapshot restore` are operations of their own (snapshot_list.py, snapshot_restore.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.snapshot import CreateResult

#: fields of the snapshot results that are not in the document: the warnings are the outcome's
OMITTED_FIELDS = frozenset({"warnings"})


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem snapshot` but the output's (--quiet, --json), with the CLI's defaults."""

    reason: str = "manual"  # a note stored with the snapshot
    keep: int | None = None  # afterwards, delete snapshots beyond the newest N
    dry_run: bool = False


def run(ws: Workspace, options: Options) -> Outcome[CreateResult]:
    from qwenmem.core.snapshot import create

    with recording() as log:
        result = create(ws, reason=options.reason, dry_run=options.dry_run, keep=options.keep)
    return Outcome("ok", result, tuple(result.warnings), events=log.events)
