"""The embedding pieces of each chunk, with a chunk's overlap with its neighbours in pieces of its own.

Chunks overlap (ReMe carries >= 320 characters of whole lines into the next chunk), so a fifth of every chunk's
text is also in the chunk before or after it. Split from each chunk's first line, the pieces that cover that text
differ between the two chunks and are embedded twice. Here a chunk is split as head | middle | tail, where head is
the lines it shares with the previous chunk of its file and tail the lines it shares with the next: the tail of one
chunk and the head of the next are the same lines, hence the same pieces, and reindexing embeds each distinct piece
text once. Every piece still lies inside its chunk, so a chunk's vector score speaks only of its own lines.
"""

from __future__ import annotations

from typing import Protocol


class Splitter(Protocol):
    @property
    def align_overlap(self) -> bool: ...

    def split(self, text: str) -> list[str]: ...


def shared_lines(before: str | None, after: str | None, limit: int = 256) -> int:
    """How many lines the end of `before` and the start of `after` have in common (0 when either is unknown)."""
    if not before or not after:
        return 0
    a, b = before.split("\n"), after.split("\n")
    for n in range(min(len(a), len(b), limit), 0, -1):
        if a[-n:] == b[:n]:
            return n
    return 0


def chunk_pieces(emb: Splitter, text: str, previous: str | None = None, following: str | None = None) -> list[str]:
    """The pieces of one chunk; `previous` / `following`: the neighbouring chunks' texts in the same file."""
    if not emb.align_overlap:
        return emb.split(text)
    lines = text.split("\n")
    head = shared_lines(previous, text)
    tail = shared_lines(text, following)
    if head + tail > len(lines):  # the chunk is nearly all overlap: keep the head aligned, split the rest
        tail = 0
    segments = [lines[:head], lines[head:len(lines) - tail], lines[len(lines) - tail:]]
    out = [p for seg in segments if (part := "\n".join(seg)).strip() for p in emb.split(part)]
    return out or emb.split(text)
