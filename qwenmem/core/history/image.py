"""The pages a reader of a (possibly damaged) history.db sees: the main file, with the committed frames of its
`-wal` laid over it, read with `pread` (never mapped: a file cut while we read it must not kill the process).

Page size: the header's when it is intact, else the WAL's, else the one under which most pages look like b-tree
pages (a header overwritten with the rest of page 1).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from qwenmem.core.confine import NotRegularFileError, read_bytes
from qwenmem.core.history import pages as pg
from qwenmem.core.history.wal import WalPages, read_wal

Reader = Callable[[int, int], bytes]  # (offset, length) -> bytes (shorter at the end of the data)
GUESS_SAMPLE = 64


@dataclass
class Image:
    read_main: Reader
    main_size: int
    read_wal_bytes: Reader | None
    wal: WalPages
    header: pg.Header
    page_count: int = 0  # pages a reader can ask for (the file's, or the last commit's when larger)
    notes: list[str] = field(default_factory=list)

    @property
    def page_size(self) -> int:
        return self.header.page_size

    def from_wal(self, pageno: int) -> bool:
        return pageno in self.wal.pages

    def page(self, pageno: int) -> bytes | None:
        """The page's bytes (shorter when the file is cut inside it), or None when it is not in the file."""
        if pageno < 1 or pageno > self.page_count:
            return None
        at = self.wal.pages.get(pageno)
        if at is not None and self.read_wal_bytes is not None:
            return self.read_wal_bytes(at, self.page_size)
        start = (pageno - 1) * self.page_size
        if start >= self.main_size:
            return None
        return self.read_main(start, self.page_size)


def _bytes_reader(data: bytes) -> Reader:
    return lambda offset, length: data[offset:offset + length]


def _fd_reader(fd: int) -> Reader:
    def read(offset: int, length: int) -> bytes:
        try:
            return os.pread(fd, length, offset)
        except OSError:
            return b""
    return read


def _guess_page_size(read: Reader, size: int) -> int:
    best, best_score = 4096, -1
    for candidate in (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512):
        pages = min(size // candidate, GUESS_SAMPLE)
        score = sum(1 for n in range(2, pages + 1)
                    if pg.page_header(read((n - 1) * candidate, candidate), n, candidate) is not None)
        if score > best_score:
            best, best_score = candidate, score
    return best


def build(read_main: Reader, main_size: int, wal_bytes: bytes | None) -> Image:
    wal = read_wal(wal_bytes) if wal_bytes else WalPages()
    read_wal_bytes = _bytes_reader(wal_bytes) if wal_bytes and wal.pages else None
    first = read_main(0, pg.HEADER_SIZE)
    header = pg.read_header(first, wal.page_size or 4096)
    notes: list[str] = []
    if not header.intact:
        if wal.pages and wal.pages.get(1) is not None and wal_bytes:
            header = pg.read_header(wal_bytes[wal.pages[1]:wal.pages[1] + pg.HEADER_SIZE], wal.page_size)
        if not header.intact:
            size = wal.page_size or _guess_page_size(read_main, main_size)
            header = pg.Header(page_size=size)
            notes.append(f"the database header is damaged: pages read as {size} bytes, text as UTF-8, the "
                         "freelist unknown")
    elif wal.pages and 1 in wal.pages and wal_bytes:  # the header a reader sees is the last committed page 1
        newer = pg.read_header(wal_bytes[wal.pages[1]:wal.pages[1] + pg.HEADER_SIZE], header.page_size)
        header = newer if newer.intact else header
    if wal.page_size and wal.page_size != header.page_size:
        notes.append(f"the -wal's page size ({wal.page_size}) differs from the database's; its frames were not read")
        wal, read_wal_bytes = WalPages(), None
    if wal_bytes and wal.problem:
        notes.append(f"the -wal was not read: {wal.problem}")
    size = header.page_size
    count = max(-(-main_size // size), wal.db_size, max(wal.pages, default=0))
    return Image(read_main, main_size, read_wal_bytes, wal, header, count, notes)


def alternatives(image: Image) -> list[Image]:
    """Other readings of a file whose header may lie (a damaged page size, reserved-bytes or encoding field
    reads as valid): the page size most pages agree with, no reserved bytes, UTF-8, as QwenPaw's stores have."""
    if not image.header.intact:
        return []
    size = image.wal.page_size or _guess_page_size(image.read_main, image.main_size)
    plain = (size, 0, "utf-8")
    if (image.page_size, image.header.reserved, image.header.encoding) == plain:
        return []
    header = replace(image.header, page_size=size, reserved=0, encoding="utf-8")
    count = max(-(-image.main_size // size), image.wal.db_size, max(image.wal.pages, default=0))
    return [replace(image, header=header, page_count=count, notes=[*image.notes, "the database header's page size, "
                    f"reserved bytes or text encoding were not believed: read as {size}-byte pages, UTF-8"])]


def from_bytes(data: bytes, wal: bytes | None = None) -> Image:
    """An image of bytes in memory (any bytes)."""
    return build(_bytes_reader(data), len(data), wal)


class FileImage:
    """An image of a file on disk and its `-wal` (read whole: a WAL is small next to the store it belongs to)."""

    def __init__(self, path: Path):
        self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        try:
            size = os.fstat(self.fd).st_size
            wal_path = Path(f"{path}-wal")
            wal = _read_wal(wal_path)
            self.image = build(_fd_reader(self.fd), size, wal)
        except BaseException:
            os.close(self.fd)
            raise

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Image:
        return self.image

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_wal(wal_path: Path) -> bytes | None:
    """The -wal's bytes, or None when there is none, or it is a link or not a regular file (never opened then: a FIFO
    would block the read)."""
    if wal_path.is_symlink():
        return None
    try:
        return read_bytes(wal_path)
    except (FileNotFoundError, IsADirectoryError, NotRegularFileError):
        return None
