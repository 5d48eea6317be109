"""The full record of one session under scroll: history.db rows (evicted turns included) joined with the live tail
of its session file (spec qwenpaw2-workspace.md §3, §10 "Complete history")."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qwenmem.core.history.rows import rows_to_messages
from qwenmem.core.history.store import open_history
from qwenmem.core.session_model.model import Message, Session


@dataclass
class HistoryRecord:
    session_id: str
    db_path: str
    rows: int
    messages: list[Message]  # oldest first; `live` marks the file's live tail, `seq` None = not yet in history.db
    evictions: list[tuple[int, int]] = field(default_factory=list)  # (seq_lo, seq_hi) of the file's eviction index
    covered_seq: tuple[int, int] | None = None  # what the continuation summary covers
    via_copy: bool = False

    @property
    def live_count(self) -> int:
        return sum(1 for m in self.messages if m.live and not m.synthetic)

    @property
    def evicted_count(self) -> int:
        return sum(1 for m in self.messages if not m.live and not m.synthetic)

    def to_json(self, messages: bool = True) -> dict[str, Any]:
        return {"session_id": self.session_id, "db": self.db_path, "rows": self.rows,
                "live_messages": self.live_count, "evicted_messages": self.evicted_count,
                "evictions": [{"seq_lo": lo, "seq_hi": hi} for lo, hi in self.evictions],
                "covered_seq": list(self.covered_seq) if self.covered_seq else None,
                "messages": [m.to_json() for m in self.messages] if messages else []}


def full_record(db_path: Path, session_id: str, live: Session | None = None) -> HistoryRecord:
    """Raises HistoryError when the store cannot be read. A live-tail message not (yet) in the store is appended
    with `seq` None, so nothing the file holds is hidden."""
    live_msgs = [m for m in (live.messages if live else []) if not m.synthetic]
    live_ids = {m.id for m in live_msgs if m.id}
    synthetic_ids = set(live.scroll.synthetic_ids) if live and live.scroll else set()
    with open_history(db_path) as reader:
        rows = reader.rows(session_id)
        via_copy = reader.via_copy
    messages = rows_to_messages(rows, live_ids, synthetic_ids)
    seen = {m.id for m in messages if m.id}
    for m in live_msgs:
        if m.id not in seen:
            messages.append(Message(len(messages), m.id, m.role, m.name, m.created_at, m.blocks, metadata=m.metadata,
                                    live=True, raw=m.raw))
    return HistoryRecord(session_id, str(db_path), len(rows), messages,
                         live.scroll.eviction_spans() if live and live.scroll else [],
                         live.scroll.covered_seq if live and live.scroll else None, via_copy)
