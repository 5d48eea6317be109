"""Scroll bookkeeping against history.db: `persisted_ids` / `persisted_tcids` may only name messages (tool calls)
whose rows exist (spec qwenpaw2-workspace.md §10).

QwenPaw writes through every live message that is not in `persisted_ids` (`_persist_new`, §3.4) and later evicts
persisted messages from the session file on the strength of those rows. An id whose rows are gone (history.db
quarantined and replaced by an empty one, §8.7; purged, §8.6) would be evicted with no copy anywhere, so the repair
drops it from the persisted sets: the next save writes its rows again (the `(session_id, dedup_key)` unique index
makes that idempotent). The database is only read (`mode=ro`).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

PERSISTED_WITHOUT_ROWS = "persisted_without_rows"
_CHUNK = 500


def existing_keys(db: Path, session_id: str, keys: list[str]) -> set[str] | None:
    """The dedup keys among `keys` that have a row for `session_id`; None when the database cannot be read.
    UnsafeLinkError for a store linked out of the workspace (history.store.confine_store)."""
    from qwenmem.core.history.store import confine_store

    confine_store(db)
    if not db.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=2.0)
    except sqlite3.Error:
        return None
    try:
        found: set[str] = set()
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i:i + _CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(f"SELECT dedup_key FROM conversation_history WHERE session_id = ? AND dedup_key IN "
                                f"({marks})", (session_id, *chunk)).fetchall()
            found.update(r[0] for r in rows)
        return found
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def unpersist_missing(doc: dict[str, Any], db: Path) -> list[str]:
    """Drop persisted ids whose rows do not exist from `doc`'s scroll (in place). Returns what it did (or a note
    starting with "note:" when the database could not be read)."""
    agent = doc.get("agent") if isinstance(doc, dict) else None
    scroll = agent.get("scroll") if isinstance(agent, dict) else None
    state = agent.get("state") if isinstance(agent, dict) else None
    if not isinstance(scroll, dict) or not isinstance(state, dict) or not isinstance(state.get("session_id"), str):
        return []
    lists = {k: scroll.get(k) for k in ("persisted_ids", "persisted_tcids")}
    keys = sorted({i for v in lists.values() if isinstance(v, list) for i in v if isinstance(i, str)})
    if not keys:
        return []
    found = existing_keys(db, state["session_id"], keys)
    if found is None:
        why = "was not found" if not db.exists() else "could not be read"
        return [f"note: {db.name} {why}: the {len(keys)} persisted id(s) of scroll were not checked against its rows"]
    missing = set(keys) - found
    if not missing:
        return []
    actions = []
    for key, ids in lists.items():
        if isinstance(ids, list) and any(isinstance(i, str) and i in missing for i in ids):
            gone = [i for i in ids if isinstance(i, str) and i in missing]
            scroll[key] = [i for i in ids if not (isinstance(i, str) and i in missing)]
            actions.append(f"scroll.{key}: {len(gone)} id(s) have no row in {db.name}; dropped so QwenPaw writes "
                           "them again before it can evict them")
    for key in ("seq_by_id", "seq_by_tcid"):
        mapping = scroll.get(key)
        if isinstance(mapping, dict) and any(k in missing for k in mapping):
            scroll[key] = {k: v for k, v in mapping.items() if k not in missing}
    return actions


def check_bytes_against_history(data: bytes, db: Path) -> tuple[bytes | None, list[str]]:
    """(new bytes or None, actions/notes) for a strictly parsable 2.x document."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, []
    actions = unpersist_missing(doc, db)
    if not actions or all(a.startswith("note:") for a in actions):
        return None, actions
    return json.dumps(doc, ensure_ascii=False).encode("utf-8"), actions
