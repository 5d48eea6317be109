"""`qwenmem upgrade --undo`: the newest upgrade put back from its journal (qwenmem.core.upgrade.journal).

Each file the upgrade replaced gets its original bytes back, but only while it still holds what the upgrade wrote
(its sha256 is in the journal): a session QwenPaw has since saved a turn into is left as it is and reported, its
original kept in the journal. The rows the upgrade added leave history.db (FTS entries first, as QwenPaw deletes),
and a history.db the upgrade created is removed once nothing else is in it. dialog/ files the native upgrade
appended to are cut back to their size before. The journal is then marked undone (kept, with the originals).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from qwenmem.core.errors import NotFoundError
from qwenmem.core.fsio import atomic_write_bytes, exclusive_lock, fsync_dir
from qwenmem.core.upgrade import journal
from qwenmem.core.workspace import Workspace

UNDONE = "undone.json"


UndoStatus = Literal["undone", "dry-run"]


@dataclass
class UndoResult:
    workspace: str
    journal: str
    status: UndoStatus
    restored: list[str] = field(default_factory=list)
    left_changed: list[str] = field(default_factory=list)  # changed since the upgrade: kept as they are
    rows_removed: int = 0
    removed_history_db: bool = False
    dialog_cut: list[str] = field(default_factory=list)


def _sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def newest(ws: Workspace) -> journal.Journal:
    found = [j for j in journal.journals(ws) if not (Path(j.directory) / UNDONE).exists()]
    if not found:
        raise NotFoundError(f"no upgrade to undo in {ws.path} (nothing under {journal.area(ws)})")
    return found[-1]


def _delete_rows(db: Path, rows: dict[str, list[str]]) -> int:
    conn = sqlite3.connect(str(db), timeout=5.0, isolation_level=None)
    removed = 0
    try:
        fts = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'conversation_history_fts'").fetchone()
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sid, keys in rows.items():
                for key in keys:
                    for seq, content in conn.execute("SELECT seq, content FROM conversation_history WHERE "
                                                     "session_id = ? AND dedup_key = ?", (sid, key)).fetchall():
                        if fts:
                            conn.execute("INSERT INTO conversation_history_fts(conversation_history_fts, rowid, "
                                         "content) VALUES('delete', ?, ?)", (seq, content or ""))
                        conn.execute("DELETE FROM conversation_history WHERE seq = ?", (seq,))
                        removed += 1
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        left = conn.execute("SELECT count(*) FROM conversation_history").fetchone()[0]
    finally:
        conn.close()
    return removed if left else -removed - 1  # negative: the store is empty now


def undo(ws: Workspace, db: Path, dry_run: bool = False) -> UndoResult:
    with exclusive_lock(ws.lock_path):
        j = newest(ws)
        result = UndoResult(str(ws.path), j.directory, "dry-run" if dry_run else "undone")
        for change in j.files:
            target = ws.path / change.rel
            now = _sha(target)
            if now == change.before_sha256:
                continue
            if now != change.after_sha256 or change.original is None:
                result.left_changed.append(change.rel)
                continue
            result.restored.append(change.rel)
            if not dry_run:
                atomic_write_bytes(target, (Path(j.directory) / change.original).read_bytes())
        for rel, size in j.dialog_sizes.items():
            path = ws.path / rel
            if path.is_file() and path.stat().st_size > size:
                result.dialog_cut.append(rel)
                if not dry_run:
                    if size:
                        with open(path, "r+b") as fh:
                            fh.truncate(size)
                            os.fsync(fh.fileno())
                    else:
                        path.unlink()
                        fsync_dir(path.parent)
        if db.is_file() and not dry_run:
            removed = _delete_rows(db, j.rows)
            result.rows_removed = removed if removed >= 0 else -removed - 1
            if removed < 0 and j.created_store:
                for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
                    p.unlink(missing_ok=True)
                fsync_dir(db.parent)
                result.removed_history_db = True
        elif db.is_file():
            result.rows_removed = sum(len(k) for k in j.rows.values())
        if not dry_run:
            atomic_write_bytes(Path(j.directory) / UNDONE, json.dumps(
                {"restored": result.restored, "left_changed": result.left_changed}).encode("utf-8"))
        return result
