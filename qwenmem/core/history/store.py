"""Opening history.db read-only while QwenPaw may be writing it.

QwenPaw keeps the store in WAL mode and writes with short `BEGIN IMMEDIATE` transactions (spec §3.4), so a
`mode=ro` reader sees the last committed state without blocking it. When `mode=ro` cannot open the file (a WAL
database needs its `-shm`, and a read-only directory cannot get one), the database and its `-wal` are copied into a
private temporary directory and the copy is opened instead (`via_copy`; a copy taken during a checkpoint can be
inconsistent, which quick_check then reports). The original and its sidecars are never written by qwenmem: no
checkpoint, no journal, `PRAGMA query_only` (a `mode=ro` reader does take SQLite's shared-memory read locks in
`-shm`, which is how it coexists with QwenPaw's writer).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qwenmem.core.history.rows import COLUMNS, HistoryRow

SIDECARS = ("-wal", "-shm", "-journal")  # SQLite opens these beside the database by name

BUSY_TIMEOUT_S = 2.0
MISSING, CORRUPT, LOCKED, UNREADABLE, NOT_HISTORY = "missing", "corrupt", "locked", "unreadable", "not_history"
TABLE = "conversation_history"


class HistoryError(Exception):
    """history.db cannot be read. `kind` is one of missing / corrupt / locked / unreadable / not_history."""

    def __init__(self, path: Path, kind: str, detail: str):
        super().__init__(f"{path}: {detail}")
        self.path, self.kind, self.detail = path, kind, detail


def classify(exc: BaseException) -> str:
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return LOCKED
    if "not a database" in text or "malformed" in text or "corrupt" in text or isinstance(exc, sqlite3.DatabaseError) \
            and not isinstance(exc, sqlite3.OperationalError):
        return CORRUPT
    return UNREADABLE


def confine_store(path: Path) -> None:
    """Refuse (UnsafeLinkError, one line naming the link) a history.db, or any sidecar SQLite would open beside it,
    reached through a link that leaves the workspace or loops: the one check every path to the store goes through
    before anything stats, reads or writes it (qwenmem.core.confine; a path under no workspace passes)."""
    from qwenmem.core.confine import check

    for p in (path, *(Path(f"{path}{side}") for side in SIDECARS)):
        check(p)


def _ro_uri(path: Path) -> str:
    return "file:" + urllib.parse.quote(str(path.absolute())) + "?mode=ro"


def _connect(uri: str) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA query_only=1")
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # reads the header (and the WAL index) now
    return conn


@dataclass
class HistoryReader:
    path: Path
    conn: sqlite3.Connection
    via_copy: bool = False  # opened from a private copy because mode=ro could not open the original
    _tmpdir: str | None = None

    def close(self) -> None:
        try:
            self.conn.close()
        finally:
            if self._tmpdir:
                shutil.rmtree(self._tmpdir, ignore_errors=True)
                self._tmpdir = None

    def __enter__(self) -> "HistoryReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self.conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise HistoryError(self.path, classify(exc), f"cannot read history: {exc}") from None

    def user_version(self) -> int:
        return int(self._query("PRAGMA user_version")[0][0])

    def counts_by_session(self) -> dict[str, int]:
        """Rows per session_id (one pass over the ch_session index)."""
        return {sid: n for sid, n in self._query(f"SELECT session_id, count(*) FROM {TABLE} GROUP BY session_id")}

    def rows(self, session_id: str) -> list[HistoryRow]:
        """Every row of one session, ordered by seq (gaps are normal: spec §3.3)."""
        cols = ", ".join(COLUMNS)
        return [HistoryRow.from_tuple(t) for t in
                self._query(f"SELECT {cols} FROM {TABLE} WHERE session_id = ? ORDER BY seq", (session_id,))]

    def quick_check(self) -> str:
        """'ok', or the first problem PRAGMA quick_check reports."""
        result = self._query("PRAGMA quick_check(1)")
        return str(result[0][0]) if result else "ok"


def _copy_and_open(path: Path) -> HistoryReader:
    tmpdir = tempfile.mkdtemp(prefix="qwenmem-history-")
    try:
        copy = Path(tmpdir) / "history.db"
        shutil.copyfile(path, copy)
        wal = Path(f"{path}-wal")
        if wal.is_file():
            shutil.copyfile(wal, Path(f"{copy}-wal"))
        conn = sqlite3.connect(str(copy), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        conn.execute("PRAGMA query_only=1")
        return HistoryReader(path, conn, via_copy=True, _tmpdir=tmpdir)
    except BaseException:
        shutil.rmtree(tmpdir, ignore_errors=True)
        raise


def open_history(path: Path) -> HistoryReader:
    """A read-only reader of `path`; raises HistoryError (never sqlite3.Error) when it cannot be read, UnsafeLinkError
    when it or a sidecar is a link out of the workspace."""
    path = Path(path)
    confine_store(path)
    if not path.exists():
        raise HistoryError(path, MISSING, "no history database")
    if not path.is_file():
        raise HistoryError(path, UNREADABLE, "not a regular file")
    if not os.access(path, os.R_OK):
        raise HistoryError(path, UNREADABLE, "not readable (permission denied)")
    try:
        reader = HistoryReader(path, _connect(_ro_uri(path)))
    except sqlite3.Error as exc:
        kind = classify(exc)
        if kind != UNREADABLE:
            raise HistoryError(path, kind, _describe(kind, exc)) from None
        try:  # e.g. a WAL database in a read-only directory without its -shm
            reader = _copy_and_open(path)
        except (sqlite3.Error, OSError) as exc2:
            kind2 = classify(exc2) if isinstance(exc2, sqlite3.Error) else UNREADABLE
            raise HistoryError(path, kind2, _describe(kind2, exc2)) from None
    try:
        has_table = reader._query("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (TABLE,))
    except HistoryError:
        reader.close()
        raise
    if not has_table:
        reader.close()
        raise HistoryError(path, NOT_HISTORY, f"an SQLite database without a {TABLE} table")
    return reader


def _describe(kind: str, exc: BaseException) -> str:
    if kind == CORRUPT:
        return f"corrupt or not an SQLite database ({exc})"
    if kind == LOCKED:
        return f"locked by another process for more than {BUSY_TIMEOUT_S:g} s ({exc})"
    return f"cannot open ({exc})"
