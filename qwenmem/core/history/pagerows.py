"""QwenPaw's history rows, read from the pages of a damaged history.db wherever its b-trees are broken.

Every page of the image (main file + committed WAL frames) that is not on the freelist is read. A cell of a table
leaf page is a history row when its record has the shape QwenPaw 2.2.2's DDL gives it (spec §3.2): up to 15
columns, the first NULL (seq is the rowid alias, so the rowid is the seq), every other one NULL or text,
`session_id` and `kind` set and `kind` one of the three kinds. No other table of the store has that shape
(sqlite_master has an integer rootpage, the FTS5 shadow tables hold blobs and integers, sqlite_sequence two
columns), so the rows are found without the schema, under a destroyed root or interior page.

What says which rows existed, so that a missing one is noticed:

* the table's own b-tree walked from its root (when the schema is readable): a leaf page it points at that is
  missing or unreadable held rows (a non-root leaf is never empty), named with the seq range its parent gives;
* the indexes on the table (ch_kind, ch_session, ...): every entry ends with the seq of a row. Found from the
  schema, and by shape anywhere (an index record of a kind and an integer is ch_kind's). One walked whole from its
  root is the exact set of rows at the last commit;
* the full-text table's documents (`conversation_history_fts_docsize` rowids), used only when no index was read
  whole: QwenPaw keeps that table in sync by hand, so it can name rows that were deleted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from qwenmem.core.history import pages as pg
from qwenmem.core.history.image import Image
from qwenmem.core.history.rows import COLUMNS, KINDS

TABLE = "conversation_history"
DOCSIZE = f"{TABLE}_fts_docsize"
MAX_TREE_DEPTH = 40


@dataclass
class CutRow:
    seq: int
    reason: str
    row: pg.Row  # what could be read, COLUMNS order (columns past the cut are None)


@dataclass
class LostPage:
    page: int
    seq_after: int | None  # the rows it held had seq > seq_after ...
    seq_upto: int | None  # ... and <= seq_upto (None: unbounded)
    reason: str


@dataclass
class PageRows:
    rows: dict[int, pg.Row] = field(default_factory=dict)  # seq -> row (COLUMNS order), read whole
    cut: dict[int, CutRow] = field(default_factory=dict)  # rows whose bytes the damage cut
    unlinked: int = 0  # rows on pages the table's b-tree no longer reaches
    from_wal: int = 0  # rows read from committed WAL frames
    free_page_rows: int = 0  # rows on freed pages, or that a whole index no longer names (deleted): not read
    known: set[int] = field(default_factory=set)  # seqs some structure says existed
    known_exact: bool = False  # `known` comes from an index read whole
    lost_leaves: list[LostPage] = field(default_factory=list)
    pages: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def missing(self) -> list[int]:
        """Seqs known to exist that were not read whole."""
        return sorted(self.known - set(self.rows))


@dataclass
class _Schema:
    roots: dict[str, int] = field(default_factory=dict)  # name -> root page
    indexes: list[str] = field(default_factory=list)  # index names on the history table
    columns: tuple[str, ...] = COLUMNS
    readable: bool = False

    def __post_init__(self) -> None:
        self.set_columns(self.columns)

    def set_columns(self, columns: tuple[str, ...]) -> None:
        self.columns = columns
        at = {name: i for i, name in enumerate(columns)}
        self.seq_at, self.sid_at, self.kind_at = at["seq"], at["session_id"], at["kind"]
        self.order = [at.get(name) for name in COLUMNS]  # where each of COLUMNS is in the record


class _Reader:
    def __init__(self, image: Image):
        self.image = image
        self.usable = image.header.usable
        self.lock = pg.lock_byte_page(image.page_size)
        self.count = image.page_count

    def page(self, n: int) -> bytes | None:
        return None if n == self.lock else self.image.page(n)

    def head(self, n: int) -> tuple[bytes, pg.PageHeader] | None:
        data = self.page(n)
        if data is None:
            return None
        head = pg.page_header(data, n, self.usable)
        return None if head is None else (data, head)

    def table_cells(self, data: bytes, head: pg.PageHeader) -> list[pg.TableCell]:
        return list(pg.table_leaf_cells(data, head, self.usable, self.page, self.count, self.lock))

    def index_keys(self, data: bytes, head: pg.PageHeader) -> list[pg.Payload]:
        return list(pg.index_cells(data, head, self.usable, self.page, self.count, self.lock))

    def walk(self, root: int, table: bool) -> tuple[list[int], list[LostPage], bool]:
        """(the pages of the tree under `root` that read, leaves and interior; the pages at the leaves' depth
        that could not be read, with their key ranges; whether every page read). All leaves of a b-tree are at
        one depth, so a lost page at that depth was a leaf (and a non-root leaf is never empty)."""
        found: list[int] = []
        missing: list[tuple[int, LostPage]] = []
        interior_kind = pg.INTERIOR_TABLE if table else pg.INTERIOR_INDEX
        leaf_kind = pg.LEAF_TABLE if table else pg.LEAF_INDEX
        seen: set[int] = set()
        leaf_depth: int | None = None
        stack: list[tuple[int, int, int | None, int | None]] = [(root, 0, None, None)]
        while stack:
            n, depth, lo, hi = stack.pop()
            got = self.head(n) if n not in seen and depth < MAX_TREE_DEPTH else None
            seen.add(n)
            if got is None or got[1].kind not in (interior_kind, leaf_kind):
                reason = "missing (past the end of the file)" if self.page(n) is None else "not a page of this b-tree"
                missing.append((depth, LostPage(n, lo, hi, reason)))
                continue
            data, head = got
            found.append(n)
            if head.kind == leaf_kind:
                leaf_depth = depth if leaf_depth is None else leaf_depth
                continue
            prev = lo
            for child, key in self._children(data, head, table):
                stack.append((child, depth + 1, prev, key))
                prev = key if key is not None else prev
            stack.append((head.right_child, depth + 1, prev, hi))
        lost = [p for depth, p in missing if depth == leaf_depth]
        return found, lost, not missing

    def _children(self, data: bytes, head: pg.PageHeader, table: bool) -> list[tuple[int, int | None]]:
        if table:
            return [(child, key) for child, key in pg.table_interior_cells(data, head, self.usable)]
        out: list[tuple[int, int | None]] = []
        for offset in pg.cell_offsets(data, head, self.usable):
            if offset + 4 <= len(data):
                out.append((int.from_bytes(data[offset:offset + 4], "big"), None))
        return out


def _schema(reader: _Reader) -> _Schema:
    out = _Schema()
    tree, _, whole = reader.walk(1, True)
    for n in tree:
        got = reader.head(n)
        if got is None or got[1].kind != pg.LEAF_TABLE:
            continue
        for cell in reader.table_cells(*got):
            rec = pg.decode_record(cell.payload.data, cell.payload.declared, reader.image.header.encoding)
            if rec is None or not rec.complete or len(rec.values) < 5:
                continue
            kind, name, tbl, root, sql = rec.values[:5]
            if not (isinstance(name, str) and isinstance(root, int) and root > 0):
                continue
            out.roots[name] = root
            if kind == "index" and tbl == TABLE:
                out.indexes.append(name)
            if kind == "table" and name == TABLE and isinstance(sql, str):
                out.set_columns(_columns(sql) or COLUMNS)
    out.readable = whole and TABLE in out.roots
    return out


def _columns(sql: str) -> tuple[str, ...] | None:
    """Column names of a CREATE TABLE statement, in order (a version-0 store upgraded by ALTER TABLE ADD COLUMN
    has its columns in another order than COLUMNS)."""
    body = sql[sql.find("(") + 1:sql.rfind(")")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    names = []
    for part in parts:
        m = re.match(r'\s*["`\[]?(\w+)', part)
        if m and m.group(1).upper() not in ("PRIMARY", "UNIQUE", "CHECK", "FOREIGN", "CONSTRAINT"):
            names.append(m.group(1))
    return tuple(names) if "seq" in names and "session_id" in names and "kind" in names else None


def _shaped(serials: tuple[int, ...], schema: _Schema) -> bool:
    """The record header has the history table's shape: 4 to all columns, seq NULL (the rowid alias) or an
    integer, every other column NULL or text, session_id non-empty text, kind text."""
    n = len(serials)
    if n < 4 or n > len(schema.columns) or max(schema.sid_at, schema.kind_at) >= n:
        return False
    for i, serial in enumerate(serials):
        if i == schema.seq_at:
            if serial > 9:
                return False
        elif serial != 0 and (serial < 13 or serial % 2 == 0):
            return False
    return serials[schema.sid_at] >= 15 and serials[schema.kind_at] >= 13


def _as_history(rowid: int, rec: pg.Record, schema: _Schema) -> pg.Row | None:
    """The row in COLUMNS order (a kind that is not one of the three, or a seq column that disagrees with the
    rowid, is not a history row)."""
    kind = rec.values[schema.kind_at]
    seq = rec.values[schema.seq_at]
    if (kind is not None and kind not in KINDS) or (seq is not None and seq != rowid):
        return None
    values = list(rec.values) + [None] * (len(schema.columns) - len(rec.values))
    row = [values[i] if i is not None else None for i in schema.order]
    row[0] = rowid
    return tuple(row)


def _cut_reason(cell: pg.TableCell, rec: pg.Record | None) -> str:
    if not cell.payload.whole:
        return cell.payload.break_reason or "its bytes end early"
    if rec is not None and not rec.complete:
        return "its record is cut"
    return "its text is not valid in the database's encoding"


def _index_rowids(reader: _Reader, data: bytes, head: pg.PageHeader, kind_only: bool) -> list[int]:
    """The seqs the entries of an index page name (the last column of each key). With `kind_only`, only entries
    shaped like ch_kind's (a kind and an integer)."""
    out = []
    for payload in reader.index_keys(data, head):
        rec = pg.decode_record(payload.data, payload.declared, reader.image.header.encoding)
        if rec is None or not rec.complete or not rec.values or type(rec.values[-1]) is not int:
            continue
        if kind_only and not (len(rec.values) == 2 and rec.values[0] in KINDS):
            continue
        out.append(rec.values[-1])
    return out


def read_history_pages(image: Image) -> PageRows:
    """Every history row on the pages of `image`, with what says which rows existed. Never raises on any bytes.
    When the header's page size, reserved bytes or encoding may lie, the reading that finds more rows wins."""
    from qwenmem.core.history.image import alternatives

    best = _read(image)
    for other in alternatives(image):
        got = _read(other)
        if len(got.rows) > len(best.rows):
            best = got
    return best


def _read(image: Image) -> PageRows:
    out = PageRows(pages=image.page_count, notes=list(image.notes))
    reader = _Reader(image)
    schema = _schema(reader)
    linked: set[int] = set()
    if schema.readable:
        tree, out.lost_leaves, _ = reader.walk(schema.roots[TABLE], True)
        linked = set(tree)
    else:
        out.notes.append("the schema (page 1) or the table's root could not be read: rows were found by their "
                         "shape on every page")
    free, free_whole = pg.freelist(image.header, reader.page, image.page_count)
    if free & linked:  # a freelist that names pages of the live table is not believed (it would hide rows)
        free = set()
    if not free_whole and image.header.intact and image.header.freelist_trunk:
        out.notes.append("the freelist does not read whole: rows on freed pages it no longer names are told from "
                         "live ones only by the store's indexes")
    _evidence(reader, schema, out)
    seen = _Seen()
    for n in range(1, image.page_count + 1):
        got = None if n == reader.lock else reader.head(n)
        if got is None:
            continue
        data, head = got
        if head.kind == pg.LEAF_TABLE:
            _leaf_rows(reader, n, data, head, schema, n in free, n in linked, out, seen)
        elif n not in free and head.kind in (pg.LEAF_INDEX, pg.INTERIOR_INDEX) and not out.known_exact:
            out.known.update(_index_rowids(reader, data, head, True))
    if out.known_exact:  # a row on an unlinked page that the whole index does not name was deleted
        for seq in [s for s in out.rows if s not in out.known and s not in seen.linked]:
            del out.rows[seq]
            out.free_page_rows += 1
    out.known |= set(out.cut)
    out.unlinked = len(set(out.rows) - seen.linked)
    out.from_wal = len(seen.wal)
    return out


@dataclass
class _Seen:
    linked: set[int] = field(default_factory=set)  # seqs read from pages the table's b-tree reaches
    wal: set[int] = field(default_factory=set)  # seqs read from WAL frames


def _leaf_rows(reader: _Reader, n: int, data: bytes, head: pg.PageHeader, schema: _Schema, free: bool,
               linked: bool, out: PageRows, seen: _Seen) -> None:
    encoding = reader.image.header.encoding
    for cell in reader.table_cells(data, head):
        serials = pg.record_serials(cell.payload.data)
        if serials is None or not _shaped(serials, schema):
            continue
        rec = pg.decode_record(cell.payload.data, cell.payload.declared, encoding, serials)
        row = None if rec is None else _as_history(cell.rowid, rec, schema)
        if rec is None or row is None:
            continue
        if free:
            out.free_page_rows += 1
            continue
        if cell.payload.whole and rec.complete and not rec.bad_text:
            if cell.rowid in out.rows and not linked:
                continue  # the copy the b-tree reaches wins
            out.rows[cell.rowid] = row
            out.cut.pop(cell.rowid, None)
            (seen.linked.add if linked else seen.linked.discard)(cell.rowid)
            (seen.wal.add if reader.image.from_wal(n) else seen.wal.discard)(cell.rowid)
        elif cell.rowid not in out.rows:
            out.cut[cell.rowid] = CutRow(cell.rowid, _cut_reason(cell, rec), row)


def _evidence(reader: _Reader, schema: _Schema, out: PageRows) -> None:
    """Rows known to exist, from the indexes (walked from the schema) and the full-text documents."""
    if not schema.readable:
        return
    for name in schema.indexes:
        tree, _, whole = reader.walk(schema.roots[name], False)
        seqs: set[int] = set()
        for n in tree:
            got = reader.head(n)
            if got is not None:
                seqs.update(_index_rowids(reader, *got, kind_only=False))
        if whole:  # SQLite changes an index in the same transaction as its rows: this is the exact set
            out.known, out.known_exact = seqs, True
            return
        out.known |= seqs
    if DOCSIZE in schema.roots:
        tree, _, _ = reader.walk(schema.roots[DOCSIZE], True)
        for n in tree:
            got = reader.head(n)
            if got is not None and got[1].kind == pg.LEAF_TABLE:
                out.known.update(cell.rowid for cell in reader.table_cells(*got))
