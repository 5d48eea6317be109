"""Opening history.db read-only while QwenPaw may be writing it, and leaving no file beside it.

QwenPaw keeps the store in WAL mode and writes with short `BEGIN IMMEDIATE` transactions (spec §3.4). SQLite's
`mode=ro` is not enough to write nothing: on a WAL database it creates `-shm` and `-wal` when they are absent, and a
read-only connection cannot remove them again. So the opening mode depends on what is beside the file:

* no `-wal` (QwenPaw's last connection checkpointed and removed it when it closed, or never ran): the committed
  state is the main file alone. It is opened `immutable=1`, which creates nothing and takes no lock. Immutable is
  unsafe if a checkpoint rewrites pages underneath, so every query is followed by a change check: the file's
  identity, size, mtime and ctime must be those of the open, else the answer is thrown away and the query is run
  again on a fresh opening (by then a writer exists, with its `-wal` and `-shm`). A new `-wal` alone does not
  invalidate an answer: WAL commits do not touch the main file until a checkpoint, which the check catches.
* `-wal` and `-shm` both there (a writer is, or was, active): `mode=ro`, which uses them and creates nothing (a
  `mode=ro` reader takes SQLite's shared-memory read locks in `-shm`, which is how it coexists with the writer).
* `-wal` without `-shm` (a crash, or a writer in exclusive locking mode), or `mode=ro` failing (a read-only
  directory): the database and its `-wal` are copied into a private temporary directory and the copy is opened
  (`via_copy`; a copy taken during a checkpoint can be inconsistent, which quick_check then reports).

The original and its sidecars are never written by qwenmem: no checkpoint, no journal, `PRAGMA query_only`. The one
window left: the writer removes its sidecars between the look and the `mode=ro` open, which then creates them (empty;
QwenPaw reuses or removes them at its next open).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from qwenmem.core.history.rows import COLUMNS, HistoryRow

SIDECARS = ("-wal", "-shm", "-journal")  # SQLite opens these beside the database by name

# What a query on a damaged store can raise: sqlite3 decodes SQLite's error messages, which quote the schema, as
# UTF-8, so a damaged byte in sqlite_master raises UnicodeDecodeError instead of DatabaseError (for every command).
SQLITE_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error, UnicodeDecodeError)
_OPEN_ERRORS: tuple[type[Exception], ...] = (*SQLITE_ERRORS, OSError)
BUSY_TIMEOUT_S = 2.0
HistoryProblem = Literal["missing", "corrupt", "locked", "unreadable", "not_history"]  # why a store cannot be read
MISSING: Final = "missing"
CORRUPT: Final = "corrupt"
LOCKED: Final = "locked"
UNREADABLE: Final = "unreadable"
NOT_HISTORY: Final = "not_history"
TABLE = "conversation_history"


class HistoryError(Exception):
    """history.db cannot be read, and why (`kind`)."""

    def __init__(self, path: Path, kind: HistoryProblem, detail: str):
        super().__init__(f"{path}: {detail}")
        self.path, self.kind, self.detail = path, kind, detail


def classify(exc: BaseException) -> HistoryProblem:
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return LOCKED
    if "not a database" in text or "malformed" in text or "corrupt" in text or isinstance(exc, UnicodeDecodeError) \
            or isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        return CORRUPT
    return UNREADABLE


def confine_store(path: Path) -> None:
    """Refuse (UnsafeLinkError, one line naming the link) a history.db, or any sidecar SQLite would open beside it,
    reached through a link that leaves the workspace or loops: the one check every path to the store goes through
    before anything stats, reads or writes it (qwenmem.core.confine; a path under no workspace passes)."""
    from qwenmem.core.confine import check

    for p in (path, *(Path(f"{path}{side}") for side in SIDECARS)):
        check(p)


def _ro_uri(path: Path, immutable: bool = False) -> str:
    return "file:" + urllib.parse.quote(str(path.absolute())) + "?mode=ro" + ("&immutable=1" if immutable else "")


IMMUTABLE, READ_ONLY, COPY = "immutable", "ro", "copy"
_REOPENS = 5  # a store that changes under every one of these openings is reported as locked
_SETTLE_TRIES, _SETTLE_S = 20, 0.01


def _fingerprint(path: Path) -> tuple[int, int, int, int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def opening_mode(path: Path) -> str:
    """How `open_history` opens `path` now (module docstring)."""
    wal, shm, journal = (Path(f"{path}{side}").exists() for side in ("-wal", "-shm", "-journal"))
    if journal:  # a rollback journal (hot after a crash) that only a writable private copy may roll back
        return COPY
    if not wal:
        return IMMUTABLE
    return READ_ONLY if shm else COPY


def _lenient_text(raw: bytes) -> str:
    """TEXT that is not UTF-8 (a damaged cell, a foreign writer) reads with U+FFFD in place of the bad bytes:
    sqlite3's strict default raises mid-query and takes the whole listing or compaction down with it. These are
    read-only connections, so the store's own bytes stay as they are (`history salvage` keeps such rows whole)."""
    return raw.decode("utf-8", errors="replace")


def _connect(uri: str) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    conn.text_factory = _lenient_text
    conn.execute("PRAGMA query_only=1")
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # reads the header (and the WAL index) now
    return conn


@dataclass
class HistoryReader:
    path: Path
    conn: sqlite3.Connection
    via_copy: bool = False  # opened from a private copy because mode=ro could not open the original
    _tmpdir: str | None = None
    mode: str = READ_ONLY
    _opened_as: tuple[int, int, int, int, int] | None = None  # immutable: the main file as it was when opened

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

    def unchanged(self) -> bool:
        """True unless an immutable opening's file changed since it was opened (then what was read may be torn)."""
        if self.mode != IMMUTABLE:
            return True
        try:
            return _fingerprint(self.path) == self._opened_as
        except OSError:
            return False

    def ensure_unchanged(self) -> None:
        """For a caller that read `conn` itself: HistoryError (locked) when the answer cannot be trusted."""
        if not self.unchanged():
            raise HistoryError(self.path, LOCKED, "history.db changed while it was being read (QwenPaw is writing "
                                                  "it); run again")

    def _reopen(self) -> None:
        # An immutable reading a writer overtook is read again from a copy, as _open_reader does when a checkpoint
        # runs under the header read: the sidecars of a writer that opens and closes per request come and go, so
        # choosing afresh could pick immutable again on every try and end in `locked`.
        fresh = _copy_and_open(self.path) if self.mode == IMMUTABLE else _open_reader(self.path)
        self.close()
        self.conn, self.via_copy, self._tmpdir = fresh.conn, fresh.via_copy, fresh._tmpdir
        self.mode, self._opened_as = fresh.mode, fresh._opened_as

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        for _ in range(_REOPENS):
            try:
                result = self.conn.execute(sql, args).fetchall()
            except SQLITE_ERRORS as exc:
                if self.unchanged():
                    raise HistoryError(self.path, classify(exc), f"cannot read history: {exc}") from None
                result = None
            if result is not None and self.unchanged():
                return result
            try:
                self._reopen()
            except _OPEN_ERRORS as exc:
                kind = classify(exc) if isinstance(exc, SQLITE_ERRORS) else UNREADABLE
                raise HistoryError(self.path, kind, _describe(kind, exc)) from None
        self.ensure_unchanged()
        return self.conn.execute(sql, args).fetchall()

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


def _files_of(path: Path) -> list[tuple[int, int, int, int, int] | None]:
    out: list[tuple[int, int, int, int, int] | None] = []
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-journal")):
        try:
            out.append(_fingerprint(p))
        except OSError:
            out.append(None)
    return out


def _copy_and_open(path: Path) -> HistoryReader:
    tmpdir = tempfile.mkdtemp(prefix="qwenmem-history-")
    try:
        copy = Path(tmpdir) / "history.db"
        for _ in range(_REOPENS):  # a copy is only a state of the store if nothing changed while it was taken
            before = _files_of(path)
            shutil.copyfile(path, copy)
            vanished = False
            for side in ("-wal", "-journal"):
                Path(f"{copy}{side}").unlink(missing_ok=True)
                if Path(f"{path}{side}").is_file():
                    try:
                        shutil.copyfile(Path(f"{path}{side}"), Path(f"{copy}{side}"))
                    except FileNotFoundError:  # the writer's last close removed it as we copied: take it again
                        vanished = True
            if not vanished and _files_of(path) == before:
                break
        conn = sqlite3.connect(str(copy), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        conn.text_factory = _lenient_text
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        conn.execute("PRAGMA query_only=1")
        return HistoryReader(path, conn, via_copy=True, _tmpdir=tmpdir, mode=COPY)
    except BaseException:
        shutil.rmtree(tmpdir, ignore_errors=True)
        raise


def _settled_mode(path: Path) -> str:
    """`opening_mode`, waiting out a writer's open or close: it creates (and removes) `-wal` and `-shm` one after
    the other, so a `-wal` alone for a moment is not yet a reason to copy."""
    mode = opening_mode(path)
    for _ in range(_SETTLE_TRIES):
        if mode != COPY or Path(f"{path}-journal").exists():
            break
        time.sleep(_SETTLE_S)
        mode = opening_mode(path)
    return mode


def _open_reader(path: Path) -> HistoryReader:
    """The opening `opening_mode` picks; sqlite3.Error when SQLite cannot open it that way."""
    mode = _settled_mode(path)
    if mode == COPY:
        return _copy_and_open(path)
    if mode == IMMUTABLE:
        before = _fingerprint(path)
        reader = HistoryReader(path, _connect(_ro_uri(path, immutable=True)), mode=IMMUTABLE, _opened_as=before)
        if reader.unchanged():
            return reader
        reader.close()  # a checkpoint ran while the header was read: a writer is active, its sidecars are there
        return _open_reader(path) if opening_mode(path) != IMMUTABLE else _copy_and_open(path)
    return HistoryReader(path, _connect(_ro_uri(path)), mode=READ_ONLY)


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
        reader = _open_reader(path)
    except _OPEN_ERRORS as exc:
        kind = classify(exc) if isinstance(exc, SQLITE_ERRORS) else UNREADABLE
        if kind != UNREADABLE:
            raise HistoryError(path, kind, _describe(kind, exc)) from None
        try:  # e.g. a WAL database in a read-only directory without its -shm
            reader = _copy_and_open(path)
        except _OPEN_ERRORS as exc2:
            kind2 = classify(exc2) if isinstance(exc2, SQLITE_ERRORS) else UNREADABLE
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
