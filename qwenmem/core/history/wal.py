"""SQLite's write-ahead log, read frame by frame without SQLite (https://www.sqlite.org/fileformat2.html §4).

A `-wal` file is a 32-byte header (magic, format version, page size, checkpoint sequence, two salts, a checksum
of the header) and frames: a 24-byte frame header (page number, the database size in pages for a commit frame
and 0 otherwise, the salts again, a cumulative checksum) followed by one page. A frame counts only when its salts
match the header's and the running checksum over every frame up to it agrees; the pages of the frames up to the
last valid commit frame are what a reader sees over the main file (the latest frame of a page wins). Frames after
it belong to a transaction that never committed, or to an older generation of the log.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from qwenmem.core.history.pages import valid_page_size

WAL_HEADER, FRAME_HEADER = 32, 24
MAGIC_LE, MAGIC_BE = 0x377F0682, 0x377F0683  # the low bit says the checksum's byte order


@dataclass
class WalPages:
    """The committed page images of a WAL: page number -> (offset of the page's bytes in the WAL, frame index)."""

    page_size: int = 0
    pages: dict[int, int] = field(default_factory=dict)
    db_size: int = 0  # pages in the database after the last commit (0: no commit frame)
    frames: int = 0  # valid frames up to and including the last commit
    uncommitted: int = 0  # valid frames after the last commit (not read)
    invalid_from: int | None = None  # index of the first frame whose salt or checksum did not agree
    problem: str = ""  # why the header could not be used ("" when it could)


def _checksum(data: bytes, big_endian: bool, s0: int, s1: int) -> tuple[int, int]:
    """The WAL checksum (§4.1): over 32-bit words taken in pairs, s0 += x[i] + s1; s1 += x[i+1] + s0."""
    words = struct.unpack(f"{'>' if big_endian else '<'}{len(data) // 8 * 2}I", data[:len(data) // 8 * 8])
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def read_wal(wal: bytes) -> WalPages:
    """The committed frames of `wal` (any bytes: never raises)."""
    out = WalPages()
    if len(wal) < WAL_HEADER:
        out.problem = "shorter than a WAL header" if wal else ""
        return out
    magic = int.from_bytes(wal[:4], "big")
    if magic not in (MAGIC_LE, MAGIC_BE):
        out.problem = "not a WAL file (bad magic number)"
        return out
    big = magic == MAGIC_BE
    size = int.from_bytes(wal[8:12], "big")
    if not valid_page_size(size):
        out.problem = f"invalid page size {size}"
        return out
    s0, s1 = _checksum(wal[:24], big, 0, 0)
    if (s0, s1) != (int.from_bytes(wal[24:28], "big"), int.from_bytes(wal[28:32], "big")):
        out.problem = "the WAL header's checksum does not agree"
        return out
    out.page_size = size
    salts = wal[16:24]
    pending: dict[int, int] = {}
    at, index = WAL_HEADER, 0
    while at + FRAME_HEADER + size <= len(wal):
        frame = wal[at:at + FRAME_HEADER]
        s0, s1 = _checksum(frame[:8] + wal[at + FRAME_HEADER:at + FRAME_HEADER + size], big, s0, s1)
        if frame[8:16] != salts or (s0, s1) != (int.from_bytes(frame[16:20], "big"),
                                                int.from_bytes(frame[20:24], "big")):
            out.invalid_from = index
            break
        pageno, commit = int.from_bytes(frame[:4], "big"), int.from_bytes(frame[4:8], "big")
        if pageno >= 1:
            pending[pageno] = at + FRAME_HEADER
        index += 1
        if commit:
            out.pages.update(pending)
            pending.clear()
            out.db_size, out.frames = commit, index
        at += FRAME_HEADER + size
    out.uncommitted = index - out.frames
    return out
