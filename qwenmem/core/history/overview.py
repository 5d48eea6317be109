"""What `sessions list` adds for a 2.x workspace: history rows per session, sessions that exist only in history.db,
and 1.x files whose turns QwenPaw 2.x will never import (spec qwenpaw2-workspace.md §3.7, §8.4).

Rows are matched to files by `history.keys`' rule (the chat's `session_id` from chats.json, else the scroll index's;
an unregistered file's name is only a guess), never by `agent.state.session_id`, which QwenPaw leaves random.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterable

from qwenmem.core.history.keys import CHATS_JSON, FILENAME, SCROLL_INDEX
from qwenmem.core.history.rows import parse_timestamp
from qwenmem.core.history.state import HistoryState, history_state, quarantined_siblings
from qwenmem.core.history.store import HistoryError, open_history
from qwenmem.core.settings.gen2 import (ContextStrategy, GenerationSummary, load_gen2_settings, read_agent_json,
                                    workspace_generation)
from qwenmem.core.workspace import Workspace

CERTAIN = (CHATS_JSON, SCROLL_INDEX)
UNREGISTERED = "unregistered in chats.json: QwenPaw 2.x never imports its turns into history.db"


@dataclass
class HistoryOnly:
    session_id: str
    rows: int

    def to_json(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "rows": self.rows}


@dataclass
class ListingHistory:
    generation: GenerationSummary
    strategy: ContextStrategy
    history: HistoryState
    history_only: list[HistoryOnly] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"generation": self.generation.to_json(), "strategy": self.strategy, "history": self.history.to_json(),
                "history_only": [h.to_json() for h in self.history_only]}


def history_counts(path: Path) -> tuple[dict[str, int] | None, HistoryState]:
    """Rows per session and the store's state, without quick_check (list must stay fast on a big store)."""
    state = HistoryState(str(path), path.exists(), quarantined=[str(p) for p in quarantined_siblings(path)])
    if not state.exists:
        return None, history_state(path, check=False)
    try:
        with open_history(path) as reader:
            counts = reader.counts_by_session()
            state.user_version = reader.user_version()
    except HistoryError as exc:
        state.status, state.detail = exc.kind, exc.detail
        return None, state
    state.status, state.rows, state.sessions = "ok", sum(counts.values()), len(counts)
    try:
        state.size = path.stat().st_size
        wal = path.with_name(path.name + "-wal")
        state.wal_size = wal.stat().st_size if wal.exists() else None
    except OSError:
        pass
    return counts, state


def at_risk_reasons(row: Any, retention_days: int, now: datetime | None = None) -> list[str]:
    """Why a 1.x file's turns exist nowhere else once QwenPaw 2.x runs: not registered, or older than the import
    window (the import skips messages older than history_retention_days; 0 keeps everything)."""
    reasons = []
    if row.identity != "chats.json":
        reasons.append(UNREGISTERED)
    first = parse_timestamp(row.first_timestamp)
    if retention_days > 0 and first is not None:
        now = now or datetime.now()
        cutoff = now - timedelta(days=retention_days)
        first_naive = first.astimezone().replace(tzinfo=None) if first.tzinfo else first
        if first_naive < cutoff:
            reasons.append(f"messages from {first_naive:%Y-%m-%d} are older than history_retention_days="
                           f"{retention_days}: QwenPaw 2.x never imports them (they live only in this file until "
                           "QwenPaw rewrites it)")
    return reasons


def annotate(ws: Workspace, rows: Iterable[Any], all_session_ids: set[str] | None = None,
             guesses: dict[str, list[str]] | None = None) -> ListingHistory:
    """Fill `history_rows` and `at_risk` of each listing row; list the sessions only history.db knows.
    `all_session_ids`: the session ids of every file (also those a filter hid), so a filtered listing does not
    report them as history-only. `guesses`: per row path, the session ids its file name can come from
    (`history.keys.ref_candidates`), tried for a file neither chats.json nor a scroll index names."""
    rows = list(rows)
    files_1x = sum(r.generation == "1.x" for r in rows)
    files_2x = sum(r.generation == "2.x" for r in rows)
    generation = workspace_generation(ws, files_1x, files_2x)
    try:
        agent_doc = read_agent_json(ws)
    except Exception:  # a damaged agent.json must not hide the listing; `info` reports it
        agent_doc = {}
    settings = load_gen2_settings(ws, agent_doc)
    db = settings.history_db if settings.history_db is not None else ws.path / "history.db"
    counts, state = history_counts(db) if generation.generation in ("2.x", "mixed") else (
        None, HistoryState(str(db), db.exists()))
    out = ListingHistory(generation, settings.strategy, state)
    if state.exists and state.status != "ok":
        out.notes.append(f"history.db cannot be read ({state.status}): {state.detail}")
    if state.quarantined:
        out.notes.append(f"{len(state.quarantined)} quarantined history store(s) next to history.db "
                         f"({state.quarantined[0].rsplit('/', 1)[-1]}…): QwenPaw replaced a corrupt store, the evicted "
                         "turns in it are unreachable from QwenPaw")
    for row in rows:
        if counts is not None and row.session_id is not None and row.identity in CERTAIN:
            row.history_rows = counts.get(row.session_id, 0)
        elif counts and row.generation == "2.x":
            found = next((c for c in (guesses or {}).get(row.path, []) if c in counts), None)
            if found is not None:  # a guess from the file name, which is only reported (history.keys)
                row.session_id, row.identity, row.history_rows = found, FILENAME, counts[found]
        if row.generation == "1.x" and generation.generation in ("2.x", "mixed") and settings.strategy == "scroll":
            row.at_risk = at_risk_reasons(row, settings.history_retention_days)
    known = {r.session_id for r in rows if r.session_id} | (all_session_ids or set())
    if counts:
        out.history_only = [HistoryOnly(sid, n) for sid, n in sorted(counts.items()) if sid not in known]
    risky = sum(bool(r.at_risk) for r in rows)
    if risky:
        out.notes.append(f"{risky} 1.x session file(s) at risk: their turns are not in history.db (marked 'at risk'); "
                         "keep the files")
    if out.history_only:
        out.notes.append(f"{len(out.history_only)} session(s) exist only in history.db (no session file); "
                         "`qwenmem sessions show SESSION_ID --history` shows one")
    return out
