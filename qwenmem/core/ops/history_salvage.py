"""`history salvage`: every readable row of a corrupt history.db (or of QwenPaw's corrupt copies) into the live
store; problems when rows known to exist were not recovered."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from qwenmem.core.events import recording
from qwenmem.core.history.maintain import SalvageResult
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

#: the notices travel in the outcome's warnings (a source's own stay beside its counts)
OMITTED_FIELDS = frozenset({"notices"})


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem history salvage` but the output's (--quiet, --json), with the CLI's defaults."""

    from_file: Path | None = None  # read rows from this file instead of finding them
    dry_run: bool = False


def run(ws: Workspace, options: Options) -> Outcome[SalvageResult]:
    """The notices (the result's and each source's) are the warnings."""
    from qwenmem.core.history.maintain import salvage

    with recording() as log:
        result = salvage(ws, options.from_file, options.dry_run)
    warnings = (*result.notices, *(n for s in result.sources for n in s.notices))
    return Outcome("ok" if result.complete else "problems", result, warnings, events=log.events)
