"""Splicing whole lines: the only way a plan turns into a new MEMORY.md."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Splice:
    start: int  # first line replaced (0-based)
    end: int  # first line kept after the replaced range; start == end inserts
    lines: tuple[str, ...] = ()
    order: int = 0  # several insertions at one point keep the order they were planned in


def apply_splices(lines: list[str], splices: list[Splice]) -> list[str]:
    ordered = sorted(splices, key=lambda s: (s.start, s.end, s.order))
    out: list[str] = []
    pos = 0
    for s in ordered:
        if s.start < pos:
            raise ValueError(f"overlapping edits at line {s.start + 1}")
        out.extend(lines[pos:s.start])
        out.extend(s.lines)
        pos = s.end
    out.extend(lines[pos:])
    return out

