"""`history check`: QwenPaw 2.x's history.db checked without writing it; problems when anything needs attention."""

from __future__ import annotations

from dataclasses import dataclass

from qwenmem.core.events import recording
from qwenmem.core.history.check import HistoryCheck
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem history check` but the output's (--quiet, --json), with the CLI's defaults."""

    deep: bool = False  # also compare the full-text index with the rows' content, on a private copy


def run(ws: Workspace, options: Options) -> Outcome[HistoryCheck]:
    from qwenmem.core.history.check import check_history
    from qwenmem.core.history.maintain import live_history_path
    from qwenmem.core.session_rows import rows_locator
    from qwenmem.core.settings.gen2 import load_gen2_settings

    with recording() as log:
        retention = load_gen2_settings(ws).history_retention_days
        result = check_history(live_history_path(ws), ws.sessions_dir, retention, deep=options.deep,
                               locate=rows_locator(ws))
    return Outcome("problems" if result.needs_attention else "ok", result, events=log.events)
