"""Writing the history.db rows of messages QwenPaw never persisted, before they may be evicted (spec §3.2-3.4).

Rows follow scroll/serialize.py L194-291 @2.2.2.post1: a `context_msg` row for a non-assistant message, one
`model_turn` row for an assistant message's non-result blocks (name / tool_call_id / tool_input of its last tool
call, the first ⟦ … ⟧ line as headline), one `tool_result` row per result block; JSON columns are
`json.dumps(value, default=str)` (ASCII-escaped), empty metadata is NULL, `dedup_key` is the message id or the
tool_call_id. Everything goes in one BEGIN IMMEDIATE transaction with `INSERT … ON CONFLICT DO NOTHING` (an existing
row is never touched), the FTS index is kept in sync by hand as QwenPaw does (there are no triggers), and the rows
are read back afterwards. The store is only appended to, so no copy of it is made first.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any, Sequence

from qwenmem.core.compaction.gen2.tokens import blocks_of
from qwenmem.core.session_model._blocks import flatten_output, media_reference

RECALL_TOOLS = ("recall_history_python", "recall_history")  # stored but kept out of FTS (history.py L54-65)
_HEADLINE = re.compile(r"[⟦〚]\s*(.*?)\s*[⟧〛]", re.S)
INSERT = ("INSERT INTO conversation_history (session_id, agent_id, kind, role, name, content, tool_call_id, "
          "tool_input, tool_state, headline, blocks, metadata, created_at, dedup_key) "
          "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING")


def _dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str)


def _text_of(blocks: Sequence[Any], media: bool) -> str:
    parts = []
    for b in blocks:
        if isinstance(b, dict) and b.get("type") == "text":
            parts.append(str(b.get("text") or ""))
        elif media and isinstance(b, dict) and b.get("type") == "data":
            parts.append(media_reference(b))
    return "\n".join(parts)


def rows_for_message(msg: dict[str, Any], session_id: str, agent_id: str | None) -> list[tuple[Any, ...]]:
    blocks = [b for b in blocks_of(msg) if isinstance(b, dict)]
    meta = msg.get("metadata")
    tag = meta.get("qwenpaw_tag") if isinstance(meta, dict) else None
    kept_meta = {"qwenpaw_tag": tag} if tag else None
    created = msg.get("created_at")
    mid = str(msg.get("id"))
    if msg.get("role") != "assistant":
        return [(session_id, agent_id, "context_msg", msg.get("role"), None, _text_of(blocks, True), None, None, None,
                 None, _dump(blocks), _dump(kept_meta), created, mid)]
    others = [b for b in blocks if b.get("type") != "tool_result"]
    calls = [b for b in others if b.get("type") == "tool_call"]
    last = calls[-1] if calls else None
    text = _text_of(others, False)
    found = _HEADLINE.search(text)
    headline = found.group(1)[:2000] if found else None
    rows = [(session_id, agent_id, "model_turn", "assistant", last and last.get("name"), text, last and last.get("id"),
             last and last.get("input"), None, headline, _dump(others), _dump(kept_meta), created, mid)]
    for b in blocks:
        if b.get("type") == "tool_result":
            md = b.get("metadata") or None
            rows.append((session_id, agent_id, "tool_result", "assistant", b.get("name"),
                         flatten_output(b.get("output")), b.get("id"), None, b.get("state"), None, _dump([b]),
                         _dump(md), created, str(b.get("id"))))
    return rows


def write_rows(db: Path, rows: list[tuple[Any, ...]]) -> int:
    """Insert in one IMMEDIATE transaction (busy timeout 5 s like QwenPaw). Returns how many rows were new.
    A store linked out of the workspace is refused (UnsafeLinkError) before SQLite opens it."""
    from qwenmem.core.history.store import confine_store

    confine_store(db)
    conn = sqlite3.connect(str(db), timeout=5.0, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        fts = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'conversation_history_fts'").fetchone()
        conn.execute("BEGIN IMMEDIATE")
        new = 0
        try:
            for row in rows:
                cur = conn.execute(INSERT, row)
                if cur.rowcount:
                    new += 1
                    if fts and row[4] not in RECALL_TOOLS:
                        conn.execute("INSERT INTO conversation_history_fts(rowid, content) VALUES (?, ?)",
                                     (cur.lastrowid, row[5] or ""))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return new
    finally:
        conn.close()
