"""Getting turns back out of a damaged history.db, and into the live one (spec §3.6, §8.7).

QwenPaw renames a corrupt store to `history.db.corrupt-<ts>` and starts an empty one, so every evicted turn that
lived only there becomes unreachable. Salvage reads every row it can from such a file (or from a live store that is
itself corrupt) and writes them into the live store:

* Page-level recovery is qwenmem's own reader of SQLite's file format (`pages`, `wal`, `image`, `pagerows`): every
  page of the file and of the committed frames of its `-wal` that is not on the freelist, with the rows of the
  history table told by their record shape, so a destroyed root or interior page or a cut file costs only the rows
  on the pages that are gone. SQLite's own b-tree scan (in seq ranges, past damaged pages) runs beside it as a
  cross-check; a whole row only it reads is added (`scan_only`: none is expected).
* What says which rows existed (the table's b-tree, its indexes, the full-text documents) is read too: a row known
  to exist that was not recovered, or one the damage cut (reported by seq; what could be read of it goes to the
  quarantine), makes the run partial (exit 1).
* Rows go into the live store in one `BEGIN IMMEDIATE` transaction under SQLite's busy timeout, exactly as QwenPaw's
  own writer does, so a running QwenPaw is never corrupted; a store it keeps locked past the timeout is busy (exit
  4). A row that is already there (same session and dedup key, or the same seq holding the same turn) is skipped,
  so salvage can be run again. A row keeps its seq when that seq is free, so eviction blocks pointing at it work.
* The original bytes go to the quarantine first: the damaged file as it is, and a consistent copy of the live
  store (online backup API) from before the merge.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qwenmem.core.errors import BusyError, WorkspaceError
from qwenmem.core.history.pagerows import CutRow, read_history_pages
from qwenmem.core.history.rows import COLUMNS
from qwenmem.core.history.store import TABLE

Row = tuple[Any, ...]  # one conversation_history row, COLUMNS order
FTS = f"{TABLE}_fts"
RECALL_TOOLS = ("recall_history_python", "recall_history")
BUSY_TIMEOUT_MS = 5000  # QwenPaw retries its own writes for up to 5 s (spec §3.4)

# QwenPaw 2.2.2.post1's DDL (spec §3.2), for a store rebuilt from a corrupt live one.
SCHEMA = f"""
CREATE TABLE {TABLE} (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, agent_id TEXT, kind TEXT NOT NULL,
  role TEXT, name TEXT, content TEXT, tool_call_id TEXT, tool_input TEXT, tool_state TEXT,
  headline TEXT, blocks TEXT, metadata TEXT, created_at TEXT, dedup_key TEXT);
CREATE INDEX ch_session ON {TABLE}(session_id);
CREATE INDEX ch_agent ON {TABLE}(agent_id);
CREATE INDEX ch_kind ON {TABLE}(kind);
CREATE INDEX ch_created_at ON {TABLE}(created_at);
CREATE UNIQUE INDEX ux_dedup ON {TABLE}(session_id, dedup_key);
CREATE VIRTUAL TABLE {FTS} USING fts5(content, content='{TABLE}', content_rowid='seq',
  tokenize='porter unicode61');
"""


@dataclass
class Recovered:
    source: str
    method: str  # "page reader"
    rows: list[Row] = field(default_factory=list)  # COLUMNS order
    from_lost_and_found: int = 0  # rows read from pages the table's b-tree no longer reaches
    notices: list[str] = field(default_factory=list)
    partial: list[int] = field(default_factory=list)  # seqs of rows the damage cut: not written
    scan_only: int = 0  # whole rows SQLite's b-tree scan read that the page reader did not
    rows_on_pages: int = 0  # whole history rows on the file's pages (what a rebuild must hold at least)
    missing: list[int] = field(default_factory=list)  # seqs known to exist (indexes, FTS) that were not read
    lost_pages: int = 0  # leaf pages of the table's b-tree that are gone (their rows with them)
    from_wal: int = 0  # rows read from committed frames of the -wal
    cut: list[CutRow] = field(default_factory=list)  # what could be read of the rows in `partial`

    @property
    def complete(self) -> bool:
        """Every row known to exist was recovered whole."""
        return not (self.partial or self.missing or self.lost_pages)


READER, SCAN = "page reader", "table scan"


KINDS = frozenset({"context_msg", "model_turn", "tool_result"})  # spec §3.3
JSON_COLUMNS = (8, 11, 12)  # tool_input, blocks, metadata: json.dumps or NULL (spec §3.2)
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}")


def _whole(row: Row, strict: bool = True) -> bool:
    """A row QwenPaw could have written, read whole: an integer seq, a session id, one of the three kinds, text
    without NUL bytes and, when `strict`, JSON columns that parse and a timestamp (or NULL). A row whose overflow
    chain the damage cut reads with its tail as zeros through SQLite (pages padded past a truncation); writing it
    would hand QwenPaw a half row, so it is left out and reported (the original bytes are in the quarantine). The
    page reader knows a cut row from the structure itself, so its rows are not held to the JSON test: a row stored
    with JSON that does not parse is recovered as it was stored (`history check` names it)."""
    seq, session_id, kind, created_at = row[0], row[1], row[3], row[13]
    if type(seq) is not int or not isinstance(session_id, str) or not session_id or kind not in KINDS:
        return False
    if any(isinstance(v, bytes) or (isinstance(v, str) and "\x00" in v) for v in row):
        return False
    if not strict:
        return True
    if created_at is not None and not (isinstance(created_at, str) and _TIMESTAMP.match(created_at)):
        return False
    for i in JSON_COLUMNS:
        if row[i] is not None:
            try:
                json.loads(row[i])
            except (TypeError, ValueError):
                return False
    return True


def _keep(out: Recovered, row: Row, strict: bool = True) -> bool:
    """Add a whole row to `out` (False if it was not whole and only counted)."""
    if _whole(row, strict):
        out.rows.append(row)
        return True
    if type(row[0]) is int:
        out.partial.append(row[0])
    return False


# a damaged schema or cell makes sqlite3 raise UnicodeDecodeError (it decodes SQLite's messages as UTF-8)
_SCAN_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)


def _scan(conn: sqlite3.Connection, table: str, unreadable: list[int] | None = None) -> Iterator[Row]:
    """Every readable row in seq order: in batches while pages read, row by row around a damaged page, and
    jumping past rows (or whole subtrees) that cannot be read, so a damaged page costs its own rows only. The seqs
    of rows whose key reads but whose content does not go to `unreadable`. A damaged b-tree can also answer out
    of order (a zeroed page reads as cells with seq 0): only rows past the last one yielded count, so `last`
    always grows and the scan ends."""
    cols = ", ".join(COLUMNS)
    last, limit = -(1 << 63), 500
    while True:
        try:
            batch = conn.execute(f"SELECT {cols} FROM {table} WHERE seq > ? ORDER BY seq LIMIT ?",
                                 (last, limit)).fetchall()
        except _SCAN_ERRORS:
            batch = None
        if batch == []:
            return
        fresh = [row for row in batch or () if type(row[0]) is int and row[0] > last]
        if fresh:
            yield from fresh
            last, limit = max(row[0] for row in fresh), 500
            continue
        if limit > 1:  # an error or no progress: go row by row from here
            limit = 1
            continue
        nxt = _next_readable(conn, table, last)
        if nxt is None:
            return
        yield from _back_fill(conn, cols, table, last, nxt)
        yield from _read_one(conn, cols, table, nxt, unreadable)
        last = nxt


def _read_one(conn: sqlite3.Connection, cols: str, table: str, seq: int,
              unreadable: list[int] | None) -> Iterator[Row]:
    try:
        row = conn.execute(f"SELECT {cols} FROM {table} WHERE seq = ?", (seq,)).fetchone()
    except _SCAN_ERRORS:
        row = None  # its key reads but its content does not (e.g. a lost overflow page)
    if row is not None:
        yield row
    elif unreadable is not None:
        unreadable.append(seq)


def _back_fill(conn: sqlite3.Connection, cols: str, table: str, after: int, before: int) -> list[Row]:
    """The readable rows between `after` and `before`, read downwards from `before` until the damage: the probe
    that found `before` may have jumped past the first rows of the next intact subtree."""
    got: list[Row] = []
    upper = before
    while True:
        try:
            row = conn.execute(f"SELECT {cols} FROM {table} WHERE seq > ? AND seq < ? ORDER BY seq DESC LIMIT 1",
                               (after, upper)).fetchone()
        except _SCAN_ERRORS:
            break
        if row is None or type(row[0]) is not int or not after < row[0] < upper:  # none, or out of order
            break
        got.append(row)
        upper = row[0]
    return got[::-1]


def _next_readable(conn: sqlite3.Connection, table: str, after: int) -> int | None:
    """The first seq after `after` whose b-tree path reads, probing forward in growing steps. QwenPaw's seqs start
    at 1 (AUTOINCREMENT), so from the start of the table the probe starts at 0, not at the smallest integer."""
    probe = after + 1 if after >= 0 else 0
    for step in (1, 16, 256, 4096, 65536, 1 << 20):
        for candidate in range(probe, probe + 64 * step, step):
            try:
                row = conn.execute(f"SELECT seq FROM {table} WHERE seq >= ? ORDER BY seq LIMIT 1",
                                   (candidate,)).fetchone()
            except _SCAN_ERRORS:
                continue
            if row is None:
                return None
            if type(row[0]) is int and row[0] >= candidate:  # else a damaged tree answered out of order
                return int(row[0])
        probe += 64 * step
    return None


def _private_copy(source: Path, workdir: Path) -> Path:
    """The file and its -wal (QwenPaw renames the two together, spec §3.6) in our own directory: SQLite may write a
    -shm or checkpoint beside what it opens, never beside the original. A -wal that does not belong (other salt)
    is ignored by SQLite itself."""
    workdir.mkdir(parents=True, exist_ok=True)
    copy = workdir / "source.db"
    shutil.copyfile(source, copy)
    wal = Path(f"{source}-wal")
    if wal.is_file():
        shutil.copyfile(wal, Path(f"{copy}-wal"))
    return copy


def _pad_truncated(copy: Path) -> None:
    """A truncated store: SQLite refuses the whole schema when a root page lies past the end of the file. Zero
    pages up to the size the header records make the missing pages read as damaged pages instead, one by one."""
    with open(copy, "r+b") as f:
        header = f.read(100)
        if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
            return
        page_size = int.from_bytes(header[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        pages = int.from_bytes(header[28:32], "big")
        size = f.seek(0, os.SEEK_END)
        if page_size and pages * page_size > size:
            f.truncate(pages * page_size)


def _text_or_bytes(raw: bytes) -> str | bytes:
    """A damaged cell can hold TEXT that is not UTF-8: sqlite3's default decoding raises on it and would end the
    whole scan. Kept as bytes, the row is counted as cut (`_whole` refuses bytes), and the scan goes on."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _recover_by_scan(source: Path, workdir: Path) -> Recovered:
    out = Recovered(str(source), SCAN)
    copy = _private_copy(source, workdir)
    _pad_truncated(copy)
    try:
        conn = sqlite3.connect(str(copy))  # our private copy: SQLite may apply its -wal
        conn.text_factory = _text_or_bytes
        try:
            for row in _scan(conn, TABLE, out.partial):
                _keep(out, row)
        finally:
            conn.close()
    except _SCAN_ERRORS as exc:
        out.notices.append(f"SQLite cannot read the b-tree ({exc}): only the page reader's rows were read")
    return out


def _recover_by_pages(source: Path) -> Recovered:
    from qwenmem.core.history.image import FileImage

    out = Recovered(str(source), READER)
    with FileImage(source) as image:
        found = read_history_pages(image)
    out.notices.extend(found.notes)
    linked = len(found.rows) - found.unlinked
    for seq in sorted(found.rows):
        if not _keep(out, found.rows[seq], strict=False):
            found.cut[seq] = CutRow(seq, "it holds NUL bytes or lacks its session id or kind (zeroed bytes)",
                                    found.rows[seq])
    out.partial = sorted(found.cut)
    out.cut = [found.cut[s] for s in out.partial]
    out.rows_on_pages = len(out.rows)
    out.from_lost_and_found = max(0, len(out.rows) - linked)
    out.from_wal = found.from_wal
    out.missing = sorted(set(found.missing) - set(found.cut))
    out.lost_pages = len(found.lost_leaves)
    for lost in found.lost_leaves[:5]:
        lo = "" if lost.seq_after is None else f"{lost.seq_after + 1}"
        hi = "" if lost.seq_upto is None else f"{lost.seq_upto}"
        out.notices.append(f"page {lost.page}, a leaf of the table, is {lost.reason}: the rows it held "
                           f"(seq {lo or 'start'}..{hi or 'end'}) are lost")
    if found.free_page_rows:
        out.notices.append(f"{found.free_page_rows} row(s) on freelist pages (deleted by QwenPaw) were not read")
    return out


def recover_rows(source: Path) -> Recovered:
    """Every row that can be read from `source` (never written): the page reader's, plus any whole row only
    SQLite's b-tree scan reads."""
    with tempfile.TemporaryDirectory(prefix="qwenmem-salvage-") as tmp_name:
        try:
            result = _recover_by_pages(Path(source))
        except OSError as exc:
            result = Recovered(str(source), READER, notices=[f"the page reader could not open the file ({exc})"])
        return _with_scan(result, Path(source), Path(tmp_name))


def _with_scan(page_level: Recovered, source: Path, workdir: Path) -> Recovered:
    """The page-level rows plus any whole row only the b-tree scan read, so the page reader never gets fewer."""
    scan = _recover_by_scan(source, workdir)
    known = {r[0] for r in page_level.rows}
    for row in scan.rows:
        if row[0] not in known:
            page_level.rows.append(row)
            page_level.scan_only += 1
    got = {r[0] for r in page_level.rows}
    page_level.partial = sorted((set(page_level.partial) | set(scan.partial)) - got)
    page_level.cut = [c for c in page_level.cut if c.seq not in got]
    page_level.missing = sorted(set(page_level.missing) - got)
    return _partial_notice(page_level)


def _partial_notice(out: Recovered) -> Recovered:
    if out.partial:
        shown = ", ".join(map(str, out.partial[:10])) + (" …" if len(out.partial) > 10 else "")
        out.notices.append(f"{len(out.partial)} row(s) were read only in part (the damage cut them: an overflow "
                           f"chain lost, columns missing, JSON that does not parse) and were not written: seq "
                           f"{shown}; what could be read of them is kept in the quarantine (cut-rows.jsonl)")
    if out.missing:
        shown = ", ".join(map(str, out.missing[:10])) + (" …" if len(out.missing) > 10 else "")
        out.notices.append(f"{len(out.missing)} row(s) the store's indexes or full-text table name were not found "
                           f"on any page: seq {shown}")
    return out


@dataclass
class MergeCounts:
    inserted: int = 0
    kept_seq: int = 0  # inserted under their original seq (eviction blocks pointing at them resolve again)
    renumbered: int = 0  # their seq was taken by another row: they got a new one
    already_present: int = 0


def _connect_rw(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return conn


def _present(conn: sqlite3.Connection, row: Row) -> bool:
    seq, session_id, dedup_key = row[0], row[1], row[14]
    if dedup_key is not None and conn.execute(f"SELECT 1 FROM {TABLE} WHERE session_id = ? AND dedup_key = ?",
                                              (session_id, dedup_key)).fetchone():
        return True
    same = conn.execute(f"SELECT session_id, kind, content, created_at FROM {TABLE} WHERE seq = ?", (seq,)).fetchone()
    return same is not None and same == (row[1], row[3], row[6], row[13])


def merge_rows(live: Path, rows: list[Row], dry_run: bool = False) -> MergeCounts:
    """Insert the rows missing from `live` in one IMMEDIATE transaction (rolled back for a dry run)."""
    counts = MergeCounts()
    conn = _connect_rw(live)
    try:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise BusyError(f"{live}: another process (QwenPaw?) kept the history database locked for more "
                                f"than {BUSY_TIMEOUT_MS // 1000} s; nothing was written") from None
            raise
        try:
            _ensure_schema(conn, live)
            has_fts = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (FTS,)).fetchone() is not None
            _insert_all(conn, rows, has_fts, counts)
            conn.execute("ROLLBACK" if dry_run else "COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()
    return counts


def _ensure_schema(conn: sqlite3.Connection, live: Path) -> None:
    """An empty live file (0 bytes: QwenPaw had not created its tables yet) gets QwenPaw's schema, as its own
    first open would; a database holding other tables and not this one is not a history store."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)).fetchone():
        return
    if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
        raise WorkspaceError(f"{live}: an SQLite database without a {TABLE} table; nothing was written")
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("PRAGMA user_version=1")


def _insert_all(conn: sqlite3.Connection, rows: list[Row], has_fts: bool, counts: MergeCounts) -> None:
    cols = ", ".join(COLUMNS)
    marks = ", ".join("?" for _ in COLUMNS)
    for row in sorted(rows, key=lambda r: r[0]):
        if _present(conn, row):
            counts.already_present += 1
            continue
        if conn.execute(f"SELECT 1 FROM {TABLE} WHERE seq = ?", (row[0],)).fetchone() is None:
            conn.execute(f"INSERT INTO {TABLE} ({cols}) VALUES ({marks})", row)
            seq = row[0]
            counts.kept_seq += 1
        else:
            cur = conn.execute(f"INSERT INTO {TABLE} ({', '.join(COLUMNS[1:])}) VALUES ({marks[3:]})", row[1:])
            seq = cur.lastrowid
            counts.renumbered += 1
        counts.inserted += 1
        if has_fts and row[5] not in RECALL_TOOLS:  # QwenPaw keeps FTS in sync by hand, and so do we
            conn.execute(f"INSERT INTO {FTS} (rowid, content) VALUES (?, ?)", (seq, row[6]))


def build_store(path: Path, rows: list[Row]) -> int:
    """A new store at `path` (which must not exist) with QwenPaw's schema and `rows`, durable before it returns;
    the number of rows it holds."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(SCHEMA)
        conn.execute("PRAGMA user_version=1")
        conn.execute("BEGIN IMMEDIATE")
        _insert_all(conn, rows, True, MergeCounts())
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        held = int(conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()[0])
    finally:
        conn.close()
    _fsync_file(path)
    return held


def backup_copy(live: Path, dest: Path) -> None:
    """A consistent copy of a live store (the online backup API), e.g. into the quarantine before a merge."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(f"file:{live}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    dst = sqlite3.connect(str(dest))
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    _fsync_file(dest)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
