"""QwenPaw 2.x `history.db` (scroll strategy), read-only (spec qwenpaw2-workspace.md §3).

* `store`   opening the database safely while QwenPaw may be running (mode=ro, else a backup copy), and classifying
            failures (missing / corrupt / locked / unreadable) without a traceback;
* `rows`    one row as data (JSON columns decoded, both timestamp formats parsed) and as a normalised Message;
* `state`   a summary for `info` and `doctor`: path, size, rows, quick_check result, quarantined siblings.

Those reading modules (and `record`, `overview`, `check`) never write the database or its sidecars; `salvage` and
`maintain` (history check/salvage, issue 14) are the maintenance layer above them.
"""

from qwenmem.core.history.rows import HistoryRow, parse_timestamp, rows_to_messages
from qwenmem.core.history.state import HistoryState, history_state
from qwenmem.core.history.store import HistoryError, HistoryReader, open_history

__all__ = ["HistoryError", "HistoryReader", "HistoryRow", "HistoryState", "history_state",
           "open_history", "parse_timestamp", "rows_to_messages"]
