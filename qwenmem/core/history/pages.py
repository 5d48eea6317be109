"""SQLite's database file format, read page by page without SQLite (https://www.sqlite.org/fileformat2.html).

Written from the published specification, for salvage: it reads the bytes of a damaged file and never trusts
them. Every function here either returns what the bytes say or a sign that they say nothing usable (None, an
empty list); none raises on any input. The parts:

* the 100-byte database header (§1.3): page size, reserved bytes per page, page count, freelist, text encoding;
* b-tree pages (§1.6): the page header, the cell pointer array, and the four cell layouts (table leaf/interior,
  index leaf/interior), with the payload split between the page and its chain of overflow pages (§1.6, "the
  amount of payload that spills onto overflow pages");
* varints and records (§2.1): the record header of serial types, and the values of each type;
* the freelist (§1.5): trunk pages and their leaf page numbers, so freed pages (old rows) are told apart;
* the lock-byte page (§1.4): the page holding byte 2^30, which SQLite never uses.

WAL frames are in `wal.py`; which rows belong to QwenPaw's history table is `pagerows.py`'s business.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

MAGIC = b"SQLite format 3\x00"
HEADER_SIZE = 100
LOCK_BYTE = 1 << 30
INTERIOR_INDEX, INTERIOR_TABLE, LEAF_INDEX, LEAF_TABLE = 2, 5, 10, 13
PAGE_KINDS = frozenset({INTERIOR_INDEX, INTERIOR_TABLE, LEAF_INDEX, LEAF_TABLE})
ENCODINGS = {1: "utf-8", 2: "utf-16-le", 3: "utf-16-be"}
MAX_CHAIN = 1 << 20  # overflow pages followed for one cell at most (a 4 GiB row at 4 KiB pages)

Value = None | int | float | str | bytes
Row = tuple[Value, ...]
PageSource = Callable[[int], bytes | None]  # page number -> its bytes (shorter when cut), None when absent


def valid_page_size(size: int) -> bool:
    return 512 <= size <= 65536 and size & (size - 1) == 0


@dataclass(frozen=True)
class Header:
    """What the database header says, or the defaults a damaged one leaves us (`intact` False)."""

    page_size: int = 4096
    reserved: int = 0
    page_count: int = 0  # 0: not recorded (or not trusted)
    freelist_trunk: int = 0
    freelist_count: int = 0
    encoding: str = "utf-8"
    intact: bool = False  # the magic string and a valid page size were there

    @property
    def usable(self) -> int:
        return self.page_size - self.reserved


def read_header(first: bytes, fallback_page_size: int = 4096) -> Header:
    """The header at the start of `first` (page 1, or the file's first bytes)."""
    if len(first) < HEADER_SIZE or not first.startswith(MAGIC):
        return Header(page_size=fallback_page_size)
    raw = int.from_bytes(first[16:18], "big")
    size = 65536 if raw == 1 else raw
    if not valid_page_size(size):
        return Header(page_size=fallback_page_size)
    reserved = first[20]
    if size - reserved < 480:  # the spec's minimum usable size
        reserved = 0
    change_counter = first[24:28]
    count = int.from_bytes(first[28:32], "big") if first[92:96] == change_counter else 0
    return Header(page_size=size, reserved=reserved, page_count=count,
                  freelist_trunk=int.from_bytes(first[32:36], "big"),
                  freelist_count=int.from_bytes(first[36:40], "big"),
                  encoding=ENCODINGS.get(int.from_bytes(first[56:60], "big"), "utf-8"), intact=True)


def lock_byte_page(page_size: int) -> int:
    """The page that holds byte offset 2^30: never a b-tree, freelist or overflow page (§1.4)."""
    return LOCK_BYTE // page_size + 1


def varint(buf: bytes, at: int) -> tuple[int, int] | None:
    """(value, offset after it), or None when the bytes end first. Big-endian, 7 bits per byte, the ninth byte
    whole (§2.1); values are 64-bit two's complement."""
    if 0 <= at < len(buf) and buf[at] < 0x80:
        return buf[at], at + 1
    value = 0
    for i in range(9):
        if at + i >= len(buf):
            return None
        byte = buf[at + i]
        if i == 8:
            value = (value << 8) | byte
            break
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return _signed(value), at + i + 1
    return _signed(value), at + 9


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def serial_size(serial: int) -> int | None:
    """Bytes a value of this serial type takes in the record body (None: reserved, not a valid record)."""
    if serial < 0 or serial in (10, 11):
        return None
    if serial < 12:
        return (0, 1, 2, 3, 4, 6, 8, 8, 0, 0)[serial]
    return (serial - 12) // 2 if serial % 2 == 0 else (serial - 13) // 2


@dataclass(frozen=True)
class Record:
    """A decoded record. `values` has one item per column its header names; with `complete` False the payload
    ended first (cut), and the columns past the cut are None and named in `missing_from`."""

    values: tuple[Value, ...]
    complete: bool
    serials: tuple[int, ...]
    missing_from: int  # index of the first column the payload did not hold whole (len(values) when complete)
    bad_text: bool = False  # a text value that is not valid in the database's encoding


def record_serials(payload: bytes) -> tuple[int, ...] | None:
    """The serial types of a record, from its header alone (the first bytes of the payload)."""
    head = varint(payload, 0)
    if head is None or head[0] < 1 or head[0] > len(payload) or head[0] > 1 << 16:
        return None
    size, at = head
    serials: list[int] = []
    while at < size:
        got = varint(payload, at)
        if got is None or got[1] > size or serial_size(got[0]) is None:
            return None
        serials.append(got[0])
        at = got[1]
    return tuple(serials)


def decode_record(payload: bytes, total: int | None = None, encoding: str = "utf-8",
                  serials: tuple[int, ...] | None = None) -> Record | None:
    """The record in `payload`. `total` is the payload size the cell declares: when `payload` is shorter (its
    overflow chain was cut), the columns it holds whole are read and the rest reported missing. None when the bytes
    are not a record (bad header, body not matching the declared size). `serials`: record_serials(payload), when
    the caller has them already."""
    serials = record_serials(payload) if serials is None else serials
    head = varint(payload, 0)
    if serials is None or head is None:
        return None
    at = head[0]
    total = len(payload) if total is None else total
    body = sum(serial_size(s) or 0 for s in serials)
    if at + body != total:
        return None
    values: list[Value] = []
    bad_text = False
    missing_from = len(serials)
    for i, serial in enumerate(serials):
        size = serial_size(serial) or 0
        if at + size > len(payload):
            missing_from = i
            values.extend(None for _ in serials[i:])
            break
        value, ok = _value(serial, payload[at:at + size], encoding)
        bad_text = bad_text or not ok
        values.append(value)
        at += size
    return Record(tuple(values), missing_from == len(serials), serials, missing_from, bad_text)


def _value(serial: int, raw: bytes, encoding: str) -> tuple[Value, bool]:
    if serial == 0:
        return None, True
    if 1 <= serial <= 6:
        return int.from_bytes(raw, "big", signed=True), True
    if serial == 7:
        return struct.unpack(">d", raw)[0], True
    if serial in (8, 9):
        return serial - 8, True
    if serial % 2 == 0:
        return bytes(raw), True
    try:
        return raw.decode(encoding), True
    except UnicodeDecodeError:
        return raw.decode(encoding, errors="replace"), False


@dataclass(frozen=True)
class PageHeader:
    kind: int
    cells: int
    right_child: int  # interior pages: the right-most child page (0 for leaves)
    start: int  # offset of the b-tree header in the page (100 on page 1)
    pointers: int  # offset of the cell pointer array


def page_header(page: bytes, pageno: int, usable: int) -> PageHeader | None:
    """The b-tree page header (§1.6), or None when the page is not a plausible b-tree page."""
    start = HEADER_SIZE if pageno == 1 else 0
    if len(page) < start + 8 or page[start] not in PAGE_KINDS:
        return None
    kind = page[start]
    cells = int.from_bytes(page[start + 3:start + 5], "big")
    content = int.from_bytes(page[start + 5:start + 7], "big") or 65536
    interior = kind in (INTERIOR_INDEX, INTERIOR_TABLE)
    pointers = start + (12 if interior else 8)
    if pointers + 2 * cells > min(usable, content) or content > usable:
        return None
    right = int.from_bytes(page[start + 8:start + 12], "big") if interior and len(page) >= start + 12 else 0
    return PageHeader(kind, cells, right, start, pointers)


def cell_offsets(page: bytes, head: PageHeader, usable: int) -> Iterator[int]:
    """The cell offsets of the pointer array that point inside the cell content area."""
    floor = head.pointers + 2 * head.cells
    for i in range(head.cells):
        at = head.pointers + 2 * i
        if at + 2 > len(page):
            return
        offset = int.from_bytes(page[at:at + 2], "big")
        if floor <= offset < usable:
            yield offset


def local_size(payload: int, usable: int, table_leaf: bool) -> int:
    """How much of a payload stays on the b-tree page; the rest spills onto overflow pages (§1.6)."""
    most = usable - 35 if table_leaf else (usable - 12) * 64 // 255 - 23
    if payload <= most:
        return payload
    least = (usable - 12) * 32 // 255 - 23
    k = least + (payload - least) % (usable - 4)
    return k if k <= most else least


@dataclass(frozen=True)
class Payload:
    data: bytes  # the bytes read: `declared` long when whole
    declared: int
    overflow: tuple[int, ...]  # the overflow pages read, in chain order
    break_reason: str = ""  # why the chain ended early ("" when whole)

    @property
    def whole(self) -> bool:
        return len(self.data) == self.declared


def read_payload(page: bytes, at: int, declared: int, usable: int, table_leaf: bool, pages: PageSource,
                 page_count: int, lock_page: int) -> Payload:
    """A cell's payload starting at `at` in `page`: its local part, then its overflow chain while the chain's pages
    exist and link on. Reading stops (with the reason) at a page number out of range, a loop, or a missing page."""
    if declared < 0:
        return Payload(b"", 0, (), "negative payload size")
    local = local_size(declared, usable, table_leaf)
    parts = [page[at:at + local]]
    got = len(parts[0])
    if got < local:
        return Payload(parts[0], declared, (), "the page ends inside the cell")
    if local == declared:
        return Payload(parts[0], declared, ())
    if at + local + 4 > len(page):
        return Payload(parts[0], declared, (), "the page ends inside the cell")
    nxt = int.from_bytes(page[at + local:at + local + 4], "big")
    seen: list[int] = []
    reason = ""
    while got < declared:
        if nxt < 2 or (page_count and nxt > page_count) or nxt == lock_page or nxt in seen or len(seen) > MAX_CHAIN:
            reason = f"overflow page number {nxt} is not a page of the file"
            break
        over = pages(nxt)
        if over is None or len(over) < 4:
            reason = f"overflow page {nxt} is missing"
            break
        seen.append(nxt)
        take = min(usable - 4, declared - got)
        chunk = over[4:4 + take]
        parts.append(chunk)
        got += len(chunk)
        if len(chunk) < take:
            reason = f"overflow page {nxt} is cut"
            break
        nxt = int.from_bytes(over[:4], "big")
    data = b"".join(parts)[:declared]
    return Payload(data, declared, tuple(seen), reason if len(data) < declared else "")


@dataclass(frozen=True)
class TableCell:
    rowid: int
    payload: Payload
    offset: int


def table_leaf_cells(page: bytes, head: PageHeader, usable: int, pages: PageSource, page_count: int,
                     lock_page: int) -> Iterator[TableCell]:
    """The cells of a table leaf page: payload size varint, rowid varint, payload, first overflow page."""
    for offset in cell_offsets(page, head, usable):
        size = varint(page, offset)
        if size is None:
            continue
        rowid = varint(page, size[1])
        if rowid is None:
            continue
        yield TableCell(rowid[0], read_payload(page, rowid[1], size[0], usable, True, pages, page_count, lock_page),
                        offset)


def table_interior_cells(page: bytes, head: PageHeader, usable: int) -> list[tuple[int, int]]:
    """(left child page, rowid key) of each cell of a table interior page, then (right-most child, None-as-max)."""
    out: list[tuple[int, int]] = []
    for offset in cell_offsets(page, head, usable):
        if offset + 5 > len(page):
            continue
        key = varint(page, offset + 4)
        if key is not None:
            out.append((int.from_bytes(page[offset:offset + 4], "big"), key[0]))
    return out


def index_cells(page: bytes, head: PageHeader, usable: int, pages: PageSource, page_count: int,
                lock_page: int) -> Iterator[Payload]:
    """The key payloads of an index page (leaf: size varint, payload; interior: a 4-byte child page first)."""
    skip = 4 if head.kind == INTERIOR_INDEX else 0
    for offset in cell_offsets(page, head, usable):
        size = varint(page, offset + skip)
        if size is not None:
            yield read_payload(page, size[1], size[0], usable, False, pages, page_count, lock_page)


def freelist(header: Header, pages: PageSource, page_count: int) -> tuple[set[int], bool]:
    """(the freelist's trunk and leaf pages, whether the whole list was read) from the header's first trunk page
    (§1.5). Free pages keep the bytes of what they held before (deleted rows), so salvage must not read rows
    from them. Reading stops at the first page that is not a valid trunk (a live b-tree page read as one has a
    count or pointers out of range); the trunks read before it still count."""
    free: set[int] = set()
    trunk = header.freelist_trunk
    limit = page_count or (1 << 31)
    while trunk:
        if trunk < 2 or trunk > limit or trunk in free:
            return free, False
        data = pages(trunk)
        if data is None or len(data) < 8:
            return free, False
        count = int.from_bytes(data[4:8], "big")
        if count > (header.usable - 8) // 4 or len(data) < 8 + 4 * count:
            return free, False
        leaves = {int.from_bytes(data[8 + 4 * i:12 + 4 * i], "big") for i in range(count)}
        if len(leaves) != count or any(not 2 <= leaf <= limit for leaf in leaves) or leaves & free:
            return free, False
        free |= leaves | {trunk}
        trunk = int.from_bytes(data[:4], "big")
    return free, len(free) == header.freelist_count
