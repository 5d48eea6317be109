"""history.db for the upgrade: QwenPaw 2.2.2.post1's schema, its rows, its dedup keys, its FTS upkeep.

Schema: `HistoryStore._init_schema` / `_init_fts` (spec §3.2), created in one transaction with `IF NOT EXISTS`, so
a kill during creation leaves either nothing or the whole schema and a rerun finishes it. Rows (`rows_for_message`
of qwenmem.core.compaction.gen2.history_write, which compaction writes with too): `msg_to_entries`
(`scroll/serialize.py L194-291`) and the import's dedup keys (`sync.py L352-371`: the message id, a result's
tool_call_id, `<msg id>#anon<n>` for a result without one); JSON columns are `json.dumps(value, default=str)`,
empty metadata NULL. One session's rows go in one `BEGIN IMMEDIATE` transaction with `ON CONFLICT DO NOTHING`
(qwenmem.core.compaction.gen2.history_write.write_rows, which keeps FTS in sync by hand), so a rerun adds nothing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from qwenmem.core.compaction.gen2.history_write import write_rows

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
