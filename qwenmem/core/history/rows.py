"""One history.db row (spec §3.2-3.3) and its normalised message form."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from qwenmem.core.session_model._blocks import normalize_block
from qwenmem.core.session_model.model import TEXT, Block, Message

COLUMNS = ("seq", "session_id", "agent_id", "kind", "role", "name", "content", "tool_call_id", "tool_input",
           "tool_state", "headline", "blocks", "metadata", "created_at", "dedup_key")
KINDS = ("context_msg", "model_turn", "tool_result")


def decode_json_column(value: Any) -> Any:
    """`tool_input`, `blocks`, `metadata` are json.dumps output (ASCII-escaped); json.loads undoes the escapes.
    A value that is not JSON (a plain string the writer passed through) is returned unchanged."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value


def parse_timestamp(value: Any) -> datetime | None:
    """Both formats in the store: 2.x naive ISO with `T` and 1.x `YYYY-MM-DD HH:MM:SS.fff`, plus aware UTC."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        return None


@dataclass
class HistoryRow:
    seq: int
    session_id: str
    agent_id: str | None
    kind: str
    role: str | None
    name: str | None
    content: str | None
    tool_call_id: str | None
    tool_input: str | None  # JSON text
    tool_state: str | None
    headline: str | None
    blocks: Any
    metadata: Any
    created_at: str | None
    dedup_key: str | None

    @classmethod
    def from_tuple(cls, t: tuple[Any, ...]) -> "HistoryRow":
        row = cls(*t)
        # tool_input stays the JSON text it is (a normalised tool_call carries its input as text, like 2.x Msgs)
        row.blocks = decode_json_column(row.blocks)
        if row.metadata is not None:
            row.metadata = decode_json_column(row.metadata)
        return row

    @property
    def message_id(self) -> str | None:
        """The id of the message this row came from (a result row's key is its tool_call_id, spec §3.3)."""
        if self.kind == "tool_result":
            return None
        return self.dedup_key


def _row_blocks(row: HistoryRow) -> list[Block]:
    raw = row.blocks if isinstance(row.blocks, list) else None
    if raw:
        return [normalize_block(b) for b in raw]
    if row.kind == "tool_result":
        return [Block("tool_result", row.content or "", tool_name=row.name, tool_call_id=row.tool_call_id,
                      tool_state=row.tool_state)]
    return [Block(TEXT, row.content or "")] if row.content else []


def rows_to_messages(rows: list[HistoryRow], live_ids: set[str] | None = None,
                     synthetic_ids: set[str] | None = None) -> list[Message]:
    """Rows → messages: a `model_turn` row and the `tool_result` rows that follow it (answers to its calls) are one
    assistant message, as they were in the session file. `live` marks messages still in the file's live tail."""
    live_ids = live_ids or set()
    synthetic_ids = synthetic_ids or set()
    out: list[Message] = []
    current: Message | None = None
    open_calls: set[str] = set()
    for row in rows:
        blocks = _row_blocks(row)
        if row.kind == "tool_result" and current is not None and (row.tool_call_id in open_calls or not open_calls):
            current.blocks.extend(blocks)
            current.seq_hi = row.seq
            continue
        metadata = row.metadata if isinstance(row.metadata, dict) else {}
        mid = row.message_id
        msg = Message(len(out), mid, row.role, row.name if row.kind != "model_turn" else None, row.created_at, blocks,
                      synthetic=(mid in synthetic_ids) or metadata.get("qwenpaw_tag") == "scroll_memory",
                      metadata=metadata, seq=row.seq, seq_hi=row.seq, live=(mid in live_ids) if mid else False,
                      raw=row)
        out.append(msg)
        if row.kind == "model_turn":
            current = msg
            open_calls = {b.tool_call_id for b in blocks if b.type == "tool_call" and b.tool_call_id}
        else:
            current, open_calls = None, set()
    return out
