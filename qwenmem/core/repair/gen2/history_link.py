"""Scroll bookkeeping against history.db: `persisted_ids` / `persisted_tcids` may only name messages (tool calls)
whose rows exist (spec qwenpaw2-workspace.md §10).

QwenPaw writes through every live message that is not in `persisted_ids` (`_persist_new`, §3.4) and later evicts
persisted messages from the session file on the strength of those rows. An id whose rows are gone (history.db
quarantined and replaced by an empty one, §8.7; purged, §8.6) would be evicted with no copy anywhere, so the repair
drops it from the persisted sets: the next save writes its rows again (the `(session_id, dedup_key)` unique index
makes that idempotent). The database is only read (`history.store.open_history`). Which rows are the
file's is `history.keys`' rule: the chat's session id, never `agent.state.session_id`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from qwenmem.core.session_model import gen2

PERSISTED_WITHOUT_ROWS = "persisted_without_rows"
_CHUNK = 500


def existing_keys(db: Path, session_ids: tuple[str, ...], keys: list[str]) -> set[str] | None:
    """The dedup keys among `keys` that have a row under one of `session_ids`; None when the database cannot be
    read. UnsafeLinkError for a store linked out of the workspace (history.store.confine_store)."""
    from qwenmem.core.history.store import TABLE, HistoryError, confine_store, open_history

    confine_store(db)
    if not db.is_file():
        return None
    try:
        with open_history(db) as reader:
            found: set[str] = set()
            ids = ",".join("?" * len(session_ids))
            for i in range(0, len(keys), _CHUNK):
                chunk = keys[i:i + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = reader._query(f"SELECT dedup_key FROM {TABLE} WHERE session_id IN ({ids}) AND dedup_key IN "
                                     f"({marks})", (*session_ids, *chunk))
                found.update(r[0] for r in rows)
            return found
    except HistoryError:
        return None


def unpersist_missing(doc: dict[str, Any], db: Path, ref: Any) -> list[str]:
    """Drop persisted ids whose rows do not exist from `doc`'s scroll (in place). Returns what it did (or a note
    starting with "note:" when nothing may be changed: the database could not be read, or the file's rows key is a
    guess). `ref`: the file's `sessions.SessionRef`; its rows are found by `history.keys.rows_key`."""
    from qwenmem.core.history.keys import rows_key_in

    scroll, state = gen2.scroll_of(doc), gen2.state_of(doc)
    if not isinstance(scroll, dict) or not isinstance(state, dict):
        return []
    lists = {k: scroll.get(k) for k in ("persisted_ids", "persisted_tcids")}
    keys = sorted({i for v in lists.values() if isinstance(v, list) for i in v if isinstance(i, str)})
    if not keys:
        return []
    key = rows_key_in(ref, doc, db if db.is_file() else None)
    found = existing_keys(db, key.all_ids, keys) if key.all_ids else None
    if found is None:
        why = "was not found" if not db.exists() else "could not be read" if key.all_ids else "names none of them"
        return [f"note: {db.name} {why}: the {len(keys)} persisted id(s) of scroll were not checked against its rows"]
    missing = set(keys) - found
    if not missing:
        return []
    if not key.certain:
        return [f"note: {len(missing)} persisted id(s) of scroll have no row under {key.session_id!r}, a session id "
                "guessed from the file name (the file is not registered in chats.json); left as they are"]
    actions = []
    for name, ids in lists.items():
        if isinstance(ids, list) and any(isinstance(i, str) and i in missing for i in ids):
            gone = [i for i in ids if isinstance(i, str) and i in missing]
            scroll[name] = [i for i in ids if not (isinstance(i, str) and i in missing)]
            actions.append(f"scroll.{name}: {len(gone)} id(s) have no row in {db.name}; dropped so QwenPaw writes "
                           "them again before it can evict them")
    for name in ("seq_by_id", "seq_by_tcid"):
        mapping = scroll.get(name)
        if isinstance(mapping, dict) and any(k in missing for k in mapping):
            scroll[name] = {k: v for k, v in mapping.items() if k not in missing}
    return actions


def check_bytes_against_history(data: bytes, db: Path, ref: Any) -> tuple[bytes | None, list[str]]:
    """(new bytes or None, actions/notes) for a strictly parsable 2.x document."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, []
    actions = unpersist_missing(doc, db, ref)
    if not actions or all(a.startswith("note:") for a in actions):
        return None, actions
    return gen2.encode(doc), actions
