"""Line-based chunking with line ranges, compatible with ReMe's chunk_markdown and a little better.

ReMe (reme-index.md §2.2): ~1600 characters per chunk, whole lines carried over until >= 320 characters of
overlap, long lines cut into max_chars pieces that keep their line number. Three deliberate differences:
  * the carried overlap never makes a chunk exceed max_chars (ReMe's overlap is uncapped, so one long line
    produces 3,200-character chunks);
  * blank lines at the ends of a chunk are trimmed, so a range never points past the file's last line;
  * `headings=True` starts a new chunk at a Markdown heading once the current chunk is at least a quarter full,
    so a section is not glued to the tail of the previous one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

HEADING = re.compile(r"^#{1,6}\s")


@dataclass(frozen=True)
class ChunkSpec:
    max_chars: int = 1600
    overlap_chars: int = 320
    headings: bool = False

    @property
    def id(self) -> str:
        """Identity recorded in the manifest: a different chunker means every file is re-chunked."""
        return f"lines-v1:max={self.max_chars}:overlap={self.overlap_chars}:headings={int(self.headings)}"


@dataclass(frozen=True)
class Chunk:
    path: str  # workspace-relative, posix
    start_line: int  # 1-based, inclusive
    end_line: int
    text: str

    @property
    def hash(self) -> str:
        return text_hash(self.text)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _pieces(text: str, max_chars: int) -> list[tuple[int, str]]:
    """(line number, piece) for every line; a line longer than max_chars becomes several pieces."""
    out: list[tuple[int, str]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if len(line) <= max_chars:
            out.append((number, line))
        else:
            out.extend((number, line[i:i + max_chars]) for i in range(0, len(line), max_chars))
    return out


def chunk_text(path: str, text: str, spec: ChunkSpec = ChunkSpec()) -> list[Chunk]:
    max_chars = max(32, spec.max_chars)
    pieces = _pieces(text.replace("\r\n", "\n"), max_chars)
    chunks: list[Chunk] = []
    current: list[tuple[int, str]] = []
    size = 0

    def flush() -> None:
        # Blank lines at either end are not content: the range names the lines that say something (ReMe's
        # end_line points past the file's last line when it ends with a newline).
        lo, hi = 0, len(current)
        while lo < hi and not current[lo][1].strip():
            lo += 1
        while hi > lo and not current[hi - 1][1].strip():
            hi -= 1
        if lo < hi:
            chunks.append(Chunk(path, current[lo][0], current[hi - 1][0], "\n".join(p for _, p in current[lo:hi])))

    for number, piece in pieces:
        cost = len(piece) + 1
        at_heading = spec.headings and HEADING.match(piece) and size >= max_chars // 4
        if current and (size + cost > max_chars or at_heading):
            flush()
            carried: list[tuple[int, str]] = []
            carried_size = 0
            if not at_heading:
                for item in reversed(current):
                    if carried_size >= spec.overlap_chars or carried_size + len(item[1]) + 1 + cost > max_chars:
                        break
                    carried.insert(0, item)
                    carried_size += len(item[1]) + 1
            current, size = carried, carried_size
        current.append((number, piece))
        size += cost
    if current:
        flush()
    return chunks
