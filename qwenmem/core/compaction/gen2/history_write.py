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
from typing import Any

from qwenmem.core.compaction.gen2.tokens import blocks_of

RECALL_TOOLS = ("recall_history_python", "recall_history")  # stored but kept out of FTS (history.py L54-65)
# serialize.py L32-37: a headline is a line of its own, `⟦ … ⟧` (or wrapped in an HTML comment), one line inside
_HEADLINE = re.compile(r"^[ \t]*(?:<!--)?[ \t]*[⟦〚][ \t]*(.+?)[ \t]*[⟧〛][ \t]*(?:-->)?[ \t]*$", re.MULTILINE)
_HEADLINE_MAX = 2000


def extract_headline(text: str | None) -> str | None:
    """`serialize.extract_headline`: the message's retrieval headline, or None."""
    found = _HEADLINE.search(text) if text else None
    return found.group(1).strip()[:_HEADLINE_MAX] if found and found.group(1).strip() else None
INSERT = ("INSERT INTO conversation_history (session_id, agent_id, kind, role, name, content, tool_call_id, "
          "tool_input, tool_state, headline, blocks, metadata, created_at, dedup_key) "
          "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING")


def _dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str)


def media_ref(block: dict[str, Any]) -> str | None:
    """`tool_message_utils.media_ref`: a data block as `[image: name — url]` (a base64 payload never inlined)."""
    if block.get("type") != "data":
        return None
    raw = block.get("source")
    src: dict[str, Any] = raw if isinstance(raw, dict) else {}
    media_type = str(src.get("media_type") or "")
    kind = media_type.split("/", 1)[0] if "/" in media_type else "file"
    kind = kind if kind in ("image", "audio", "video") else "file"
    ref = src.get("url") if src.get("type") == "url" else f"<{media_type or 'binary'}>"
    name = block.get("name")
    return f"[{kind}: {name} — {ref}]" if name and ref else f"[{kind}: {name or ref or '?'}]"


def flatten_output(output: Any) -> str | None:
    """`tool_message_utils.flatten_output`: a tool result's `content` column (None when it has no text)."""
    if output is None or isinstance(output, str):
        return output
    parts = []
    for b in output if isinstance(output, list) else []:
        if not isinstance(b, dict):
            continue
        ref = b.get("text") or media_ref(b)
        if ref:
            parts.append(str(ref))
    return "\n".join(parts) if parts else None


def _text(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(str(b.get("text") or "") for b in blocks if b.get("type") == "text")


def rows_for_message(msg: dict[str, Any], session_id: str, agent_id: str | None) -> list[tuple[Any, ...]]:
    """The rows QwenPaw's `msg_to_entries` and its import's dedup keys make of one 2.x message, in INSERT column
    order: checked column for column against QwenPaw's own code (tests/core/upgrade/test_upgrade_qwenpaw.py). No
    model_turn row for a message of tool results only; an empty block list is NULL; media references go after the
    text; a result without an id is keyed `<message id>#anon<n>`."""
    content = [b for b in blocks_of(msg) if isinstance(b, dict)]
    non_result = [b for b in content if b.get("type") != "tool_result"]
    results = [b for b in content if b.get("type") == "tool_result"]
    role, created, mid = msg.get("role"), msg.get("created_at"), str(msg.get("id"))
    rows: list[tuple[Any, ...]] = []
    if non_result or not results:
        calls = [b for b in non_result if b.get("type") == "tool_call"]
        last = calls[-1] if calls else None
        text = _text(content)
        headline = extract_headline(text) if role == "assistant" else None
        media = [r for r in (media_ref(b) for b in non_result) if r]
        if media:
            text = (text + "\n" + "\n".join(media)).strip() if text else "\n".join(media)
        meta = msg.get("metadata")
        tag = meta.get("qwenpaw_tag") if isinstance(meta, dict) else None
        rows.append((session_id, agent_id, "model_turn" if role == "assistant" else "context_msg", role,
                     last.get("name") if last else None, text, last.get("id") if last else None,
                     last.get("input") if last else None, None, headline,
                     _dump(non_result or None), _dump({"qwenpaw_tag": str(tag)} if tag else None), created, mid))
    for n, b in enumerate(results):
        key = b.get("id") or f"{mid}#anon{n}"
        md = b.get("metadata")
        rows.append((session_id, agent_id, "tool_result", role, b.get("name"), flatten_output(b.get("output")),
                     b.get("id"), None, b.get("state"), None, _dump([b]), _dump(dict(md) if isinstance(md, dict)
                                                                               and md else None), created, str(key)))
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
