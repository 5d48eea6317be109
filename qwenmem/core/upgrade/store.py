"""history.db for the upgrade: QwenPaw 2.2.2.post1's schema, its rows, its dedup keys, its FTS upkeep.

Schema: `HistoryStore._init_schema` / `_init_fts` (spec §3.2), created in one transaction with `IF NOT EXISTS`, so
a kill during creation leaves either nothing or the whole schema and a rerun finishes it. Rows: `msg_to_entries`
(`scroll/serialize.py L194-291`) and the import's dedup keys (`sync.py L352-371`: the message id, a result's
tool_call_id, `<msg id>#anon<n>` for a result without one); JSON columns are `json.dumps(value, default=str)`,
empty metadata NULL. One session's rows go in one `BEGIN IMMEDIATE` transaction with `ON CONFLICT DO NOTHING`
(qwenmem.core.compaction.gen2.history_write.write_rows, which keeps FTS in sync by hand), so a rerun adds nothing.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from qwenmem.core.compaction.gen2.history_write import _HEADLINE, write_rows

SCHEMA_VERSION = 1
_DDL = (
    "CREATE TABLE IF NOT EXISTS conversation_history (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT "
    "NULL, agent_id TEXT, kind TEXT NOT NULL, role TEXT, name TEXT, content TEXT, tool_call_id TEXT, tool_input "
    "TEXT, tool_state TEXT, headline TEXT, blocks TEXT, metadata TEXT, created_at TEXT, dedup_key TEXT)",
    "CREATE INDEX IF NOT EXISTS ch_session ON conversation_history(session_id)",
    "CREATE INDEX IF NOT EXISTS ch_agent ON conversation_history(agent_id)",
    "CREATE INDEX IF NOT EXISTS ch_kind ON conversation_history(kind)",
    "CREATE INDEX IF NOT EXISTS ch_created_at ON conversation_history(created_at)",
    "CREATE UNIQUE INDEX IF NOT EXISTS ux_dedup ON conversation_history(session_id, dedup_key)",
)
_FTS = ("CREATE VIRTUAL TABLE IF NOT EXISTS conversation_history_fts USING fts5(content, "
        "content='conversation_history', content_rowid='seq', tokenize='porter unicode61')")


def _dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str)


def ensure_store(db: Path) -> bool:
    """Create history.db with QwenPaw's schema where it is missing (True when it was). An existing store is only
    checked for the table."""
    from qwenmem.core.history.store import confine_store

    confine_store(db)
    created = not db.exists()
    conn = sqlite3.connect(str(db), timeout=5.0, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sql in _DDL:
                conn.execute(sql)
            try:
                conn.execute(_FTS)
            except sqlite3.OperationalError as exc:  # an SQLite without FTS5: QwenPaw runs without it too
                if "no such module" not in str(exc).lower():
                    raise
            if conn.execute("PRAGMA user_version").fetchone()[0] == 0:
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()
    return created


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
    """`tool_message_utils.flatten_output`."""
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


def entries(msg: dict[str, Any], session_id: str, agent_id: str | None) -> list[tuple[Any, ...]]:
    """The rows `msg_to_entries` + the import's dedup keys make of one 2.x message (INSERT column order)."""
    content = [b for b in (msg.get("content") or []) if isinstance(b, dict)]
    non_result = [b for b in content if b.get("type") != "tool_result"]
    results = [b for b in content if b.get("type") == "tool_result"]
    role, created, mid = msg.get("role"), msg.get("created_at"), str(msg.get("id"))
    rows: list[tuple[Any, ...]] = []
    if non_result or not results:
        calls = [b for b in non_result if b.get("type") == "tool_call"]
        last = calls[-1] if calls else None
        text = _text(content)
        found = _HEADLINE.search(text) if role == "assistant" else None
        media = [r for r in (media_ref(b) for b in non_result) if r]
        if media:
            text = (text + "\n" + "\n".join(media)).strip() if text else "\n".join(media)
        meta = msg.get("metadata")
        tag = meta.get("qwenpaw_tag") if isinstance(meta, dict) else None
        rows.append((session_id, agent_id, "model_turn" if role == "assistant" else "context_msg", role,
                     last.get("name") if last else None, text, last.get("id") if last else None,
                     last.get("input") if last else None, None, found.group(1)[:2000] if found else None,
                     _dump(non_result or None), _dump({"qwenpaw_tag": str(tag)} if tag else None), created, mid))
    for n, b in enumerate(results):
        key = b.get("id") or f"{mid}#anon{n}"
        md = b.get("metadata")
        rows.append((session_id, agent_id, "tool_result", role, b.get("name"), flatten_output(b.get("output")),
                     b.get("id"), None, b.get("state"), None, _dump([b]), _dump(dict(md) if isinstance(md, dict)
                                                                               and md else None), created, str(key)))
    return rows


def insert(db: Path, rows: list[tuple[Any, ...]]) -> int:
    """Rows new to the store (a rerun inserts none). Rows already there are not offered again: a conflicting
    INSERT still consumes an AUTOINCREMENT value (spec §3.3), which would move the seqs of every later row, and so
    the placeholder a rerun after a kill renders."""
    there = {sid: existing_keys(db, sid) for sid in {str(r[0]) for r in rows}}
    new = [r for r in rows if str(r[-1]) not in there[str(r[0])]]
    return write_rows(db, new) if new else 0


def seqs_by_key(db: Path, session_id: str) -> dict[str, int]:
    """dedup_key → seq of one session's rows, read back after the write."""
    from qwenmem.core.history.store import open_history

    with open_history(db) as reader:
        return {r.dedup_key: r.seq for r in reader.rows(session_id) if r.dedup_key}


def existing_keys(db: Path, session_id: str) -> set[str]:
    if not db.is_file():
        return set()
    return set(seqs_by_key(db, session_id))


def session_keys(db: Path, prefix_excluded: str) -> set[str]:
    """The dedup keys of every row not under a session id starting with `prefix_excluded`: a dialog/ line whose
    message a session already has rows for (the native upgrade offloads to dialog/ too) is that session's."""
    if not db.is_file():
        return set()
    from qwenmem.core.history.store import open_history

    with open_history(db) as reader:
        rows = reader._query("SELECT DISTINCT dedup_key FROM conversation_history WHERE session_id NOT LIKE ? "
                             "AND dedup_key IS NOT NULL", (prefix_excluded + "%",))
    return {str(r[0]) for r in rows}
