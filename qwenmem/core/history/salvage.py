"""Getting turns back out of a damaged history.db, and into the live one (spec §3.6, §8.7).

QwenPaw renames a corrupt store to `history.db.corrupt-<ts>` and starts an empty one, so every evicted turn that
lived only there becomes unreachable. Salvage reads every row it can from such a file (or from a live store that is
itself corrupt) and writes them into the live store:

* Page-level recovery is SQLite's own: the `sqlite3` command-line tool's `.recover`, which also returns rows from
  pages no longer linked into the b-tree (`lost_and_found`). It needs a library built with the `sqlite_dbpage`
  virtual table; Debian 12's sqlite3 3.40.1 is not (its `.recover` fails with "SQL logic error"), so the tool is
  probed once and `$QWENMEM_SQLITE3` can name a working one. Without one, a table scan in seq ranges takes every
  row the b-tree still reaches, skipping damaged pages, with a notice.
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
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qwenmem.core.errors import BusyError
from qwenmem.core.history.rows import COLUMNS
from qwenmem.core.history.store import TABLE

Row = tuple[Any, ...]  # one conversation_history row, COLUMNS order
FTS = f"{TABLE}_fts"
RECALL_TOOLS = ("recall_history_python", "recall_history")
BUSY_TIMEOUT_MS = 5000  # QwenPaw retries its own writes for up to 5 s (spec §3.4)
RECOVER_TIMEOUT_S = 600

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
    method: str  # "sqlite3 .recover" | "table scan"
    rows: list[Row] = field(default_factory=list)  # COLUMNS order
    from_lost_and_found: int = 0
    notices: list[str] = field(default_factory=list)
    tool: str | None = None  # the sqlite3 shell that recovered them: "<path> (SQLite <version>)"
    partial: list[int] = field(default_factory=list)  # seqs of rows read only in part: not written
    scan_only: int = 0  # rows the b-tree scan read that the page-level tool did not


TOOL_NAME = "qwenmem-sqlite3"  # what scripts/build_sqlite3.sh installs beside the venv's python
RECOVER, SCAN = "sqlite3 .recover", "table scan"


@dataclass(frozen=True)
class RecoverTool:
    path: str
    version: str

    def describe(self) -> str:
        return f"{self.path} (SQLite {self.version})"


_probed: dict[str, RecoverTool | None] = {}


def _probe(tool: str) -> RecoverTool | None:
    """This sqlite3 shell, if its `.recover` runs (it fails on a library without sqlite_dbpage)."""
    if tool not in _probed:
        _probed[tool] = None
        with tempfile.TemporaryDirectory(prefix="qwenmem-probe-") as tmp:
            db = Path(tmp) / "probe.db"
            conn = sqlite3.connect(str(db))
            conn.execute("CREATE TABLE t (x)")
            conn.execute("INSERT INTO t VALUES ('probe')")
            conn.commit()
            conn.close()
            try:
                out = subprocess.run([tool, str(db), ".recover"], capture_output=True, timeout=30, check=False)
                if out.returncode == 0 and b"'probe'" in out.stdout:
                    version = subprocess.run([tool, "-version"], capture_output=True, timeout=30, check=False)
                    words = version.stdout.decode(errors="replace").split()
                    _probed[tool] = RecoverTool(tool, words[0] if words else "unknown")
            except (OSError, subprocess.SubprocessError):
                pass
    return _probed[tool]


def tool_candidates() -> list[str]:
    """Where to look for a sqlite3 shell, in order: $QWENMEM_SQLITE3 alone when set; else qwenmem-sqlite3 beside
    this python (scripts/_setup.sh builds it there), qwenmem-sqlite3 on PATH, then sqlite3 on PATH (it works where
    the system library has sqlite_dbpage, e.g. a SQLite built from source, but not Debian's)."""
    override = os.environ.get("QWENMEM_SQLITE3")
    if override:
        return [override]
    found = [str(Path(sys.executable).parent / TOOL_NAME)]
    for name in (TOOL_NAME, "sqlite3"):
        path = shutil.which(name)
        if path:
            found.append(path)
    return [p for i, p in enumerate(found) if p not in found[:i] and os.access(p, os.X_OK)]


def sqlite3_tool() -> RecoverTool | None:
    """The first candidate sqlite3 shell whose `.recover` works, or None."""
    for candidate in tool_candidates():
        tool = _probe(candidate)
        if tool is not None:
            return tool
    return None


KINDS = frozenset({"context_msg", "model_turn", "tool_result"})  # spec §3.3
JSON_COLUMNS = (8, 11, 12)  # tool_input, blocks, metadata: json.dumps or NULL (spec §3.2)
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}")


def _whole(row: Row) -> bool:
    """A row QwenPaw could have written, read whole: an integer seq, a session id, one of the three kinds, text
    without NUL bytes, JSON columns that parse and a timestamp (or NULL). A row whose overflow chain the damage cut
    reads with its tail missing, as empty strings (`.recover`) or as zeros (pages padded past a truncation); writing
    it would hand QwenPaw a half row, so it is left out and reported (the original bytes are in the quarantine)."""
    seq, session_id, kind, created_at = row[0], row[1], row[3], row[13]
    if type(seq) is not int or not isinstance(session_id, str) or not session_id or kind not in KINDS:
        return False
    if any(isinstance(v, bytes) or (isinstance(v, str) and "\x00" in v) for v in row):
        return False
    if created_at is not None and not (isinstance(created_at, str) and _TIMESTAMP.match(created_at)):
        return False
    for i in JSON_COLUMNS:
        if row[i] is not None:
            try:
                json.loads(row[i])
            except (TypeError, ValueError):
                return False
    return True


def _keep(out: Recovered, row: Row) -> bool:
    """Add a whole row to `out` (False if it was not whole and only counted)."""
    if _whole(row):
        out.rows.append(row)
        return True
    if type(row[0]) is int:
        out.partial.append(row[0])
    return False


def _scan(conn: sqlite3.Connection, table: str, unreadable: list[int] | None = None) -> Iterator[Row]:
    """Every readable row in seq order: in batches while pages read, row by row around a damaged page, and
    jumping past rows (or whole subtrees) that cannot be read, so a damaged page costs its own rows only. The seqs
    of rows whose key reads but whose content does not go to `unreadable`."""
    cols = ", ".join(COLUMNS)
    last, limit = -(1 << 63), 500
    while True:
        try:
            batch = conn.execute(f"SELECT {cols} FROM {table} WHERE seq > ? ORDER BY seq LIMIT ?",
                                 (last, limit)).fetchall()
        except sqlite3.DatabaseError:
            if limit > 1:
                limit = 1
                continue
            nxt = _next_readable(conn, table, last)
            if nxt is None:
                return
            yield from _back_fill(conn, cols, table, last, nxt)
            try:
                row = conn.execute(f"SELECT {cols} FROM {table} WHERE seq = ?", (nxt,)).fetchone()
            except sqlite3.DatabaseError:
                row = None  # its key reads but its content does not (e.g. a lost overflow page)
            if row is not None:
                yield row
            elif unreadable is not None:
                unreadable.append(nxt)
            last = nxt
            continue
        if not batch:
            return
        yield from batch
        last, limit = batch[-1][0], 500


def _back_fill(conn: sqlite3.Connection, cols: str, table: str, after: int, before: int) -> list[Row]:
    """The readable rows between `after` and `before`, read downwards from `before` until the damage: the probe
    that found `before` may have jumped past the first rows of the next intact subtree."""
    got: list[Row] = []
    upper = before
    while True:
        try:
            row = conn.execute(f"SELECT {cols} FROM {table} WHERE seq > ? AND seq < ? ORDER BY seq DESC LIMIT 1",
                               (after, upper)).fetchone()
        except sqlite3.DatabaseError:
            break
        if row is None:
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
            except sqlite3.DatabaseError:
                continue
            return None if row is None else int(row[0])
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


def _recover_with_tool(source: Path, tool: RecoverTool, workdir: Path) -> Recovered:
    out = Recovered(str(source), RECOVER, tool=tool.describe())
    recovered_db = workdir / "recovered.db"
    copy = _private_copy(source, workdir)
    dump = subprocess.run([tool.path, str(copy), ".recover"], capture_output=True, timeout=RECOVER_TIMEOUT_S,
                          check=False)
    if dump.returncode != 0 and not dump.stdout:
        out.notices.append(f"sqlite3 .recover failed ({dump.stderr.decode(errors='replace').strip()[:300]}); "
                           "only the b-tree scan's rows were read")
        return out
    load = subprocess.run([tool.path, str(recovered_db)], input=dump.stdout, capture_output=True,
                          timeout=RECOVER_TIMEOUT_S, check=False)
    if load.returncode != 0:
        out.notices.append("sqlite3 reported while loading the recovered SQL: "
                           + load.stderr.decode(errors="replace").strip()[:300])
    conn = sqlite3.connect(str(recovered_db))
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if TABLE in tables:
            for row in _scan(conn, TABLE):
                _keep(out, row)
        if "lost_and_found" in tables:
            known = {r[0] for r in out.rows}
            for row in _lost_and_found(conn):
                if row[0] not in known and _keep(out, row):
                    known.add(row[0])
                    out.from_lost_and_found += 1
    finally:
        conn.close()
    return out


def _lost_and_found(conn: sqlite3.Connection) -> Iterator[Row]:
    """Rows of unlinked pages: `.recover` cannot tell their table, so take those with our 15 columns; the rowid
    (`id`) is the seq, which SQLite stores as NULL in the seq column of a rowid alias."""
    cols = [r[1] for r in conn.execute("PRAGMA table_info(lost_and_found)")]
    data_cols = [c for c in cols if c.startswith("c") and c[1:].isdigit()]
    if len(data_cols) < len(COLUMNS):
        return
    select = ", ".join(["id", *data_cols[1:len(COLUMNS)]])
    for row in conn.execute(f"SELECT {select} FROM lost_and_found WHERE nfield = ?", (len(COLUMNS),)):
        yield tuple(row)


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


def _recover_by_scan(source: Path, workdir: Path) -> Recovered:
    out = Recovered(str(source), SCAN)
    copy = _private_copy(source, workdir)
    _pad_truncated(copy)
    try:
        conn = sqlite3.connect(str(copy))  # our private copy: SQLite may apply its -wal
        try:
            for row in _scan(conn, TABLE, out.partial):
                _keep(out, row)
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        out.notices.append(f"the b-tree is unreadable ({exc}); page-level recovery needs a sqlite3 shell with a "
                           "working .recover (scripts/build_sqlite3.sh builds one)")
    return out


def recover_rows(source: Path) -> Recovered:
    """Every row that can be read from `source` (never written)."""
    with tempfile.TemporaryDirectory(prefix="qwenmem-salvage-") as tmp_name:
        tmp = Path(tmp_name)
        tool = sqlite3_tool()
        if tool:
            return _with_scan(_recover_with_tool(Path(source), tool, Path(tmp / "tool")), Path(source), tmp / "scan")
        result = _partial_notice(_recover_by_scan(Path(source), tmp))
        looked = ", ".join(tool_candidates()) or "none found"
        result.notices.insert(0, "no sqlite3 shell with a working .recover (it needs the sqlite_dbpage virtual "
                                 f"table; tried: {looked}; scripts/build_sqlite3.sh builds one, $QWENMEM_SQLITE3 names "
                                 "one): only rows the b-tree still reaches were read, not those on unlinked pages")
        return result


def _with_scan(page_level: Recovered, source: Path, workdir: Path) -> Recovered:
    """The page-level rows plus any whole row only the b-tree scan read (e.g. a cell on the page a truncation cut
    through, which the scan reads from the zero-padded copy), so the page-level method never gets fewer rows."""
    scan = _recover_by_scan(source, workdir)
    known = {r[0] for r in page_level.rows}
    for row in scan.rows:
        if row[0] not in known:
            page_level.rows.append(row)
            page_level.scan_only += 1
    page_level.partial = sorted((set(page_level.partial) | set(scan.partial)) - {r[0] for r in page_level.rows})
    return _partial_notice(page_level)


def _partial_notice(out: Recovered) -> Recovered:
    if out.partial:
        shown = ", ".join(map(str, out.partial[:10])) + (" …" if len(out.partial) > 10 else "")
        out.notices.append(f"{len(out.partial)} row(s) were read only in part (the damage cut their tail: empty or "
                           f"zeroed columns, JSON that does not parse) and were not written: seq {shown}; their "
                           "bytes are in the quarantine copy")
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
            has_fts = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (FTS,)).fetchone() is not None
            _insert_all(conn, rows, has_fts, counts)
            conn.execute("ROLLBACK" if dry_run else "COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.close()
    return counts


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


def build_store(path: Path, rows: list[Row]) -> None:
    """A new store at `path` (which must not exist) with QwenPaw's schema and `rows`, durable before it returns."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(SCHEMA)
        conn.execute("PRAGMA user_version=1")
        conn.execute("BEGIN IMMEDIATE")
        _insert_all(conn, rows, True, MergeCounts())
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    _fsync_file(path)


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
