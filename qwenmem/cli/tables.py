"""Tables for people that fit the terminal, and the same rows as tab-separated values for programs.

At any width the columns that name things (session, path, name) are never dropped or wrapped: they are shortened
in the middle (`ou_cb6f9ef3…d1bf9a00`), which keeps both the channel prefix and the distinguishing tail; `sessions
show`, `repair` and `compact` accept that shortened form back (core.sessions.find_session). Numbers are never
shortened. Columns that only repeat part of the key (channel, user) go first, then those with an early drop rank
(size, modified), before anything is shortened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from qwenmem.cli import output

ELLIPSIS = "…"
GAP = 2  # Rich's padding between two columns of a box-less table
MIN_KEY = 16  # a name shortened below this says nothing
MIN_TEXT = 6
MIN_WRAP = 20
EARLY_DROP = 2  # columns ranked up to this (size, modified) go before anything is shortened; the rest after


class Kind(str, Enum):
    KEY = "key"  # session, path, name: shortened in the middle, never dropped
    NUMBER = "number"  # never shortened
    LABEL = "label"  # a status word: never shortened
    TEXT = "text"  # shortened at the end
    WRAP = "wrap"  # a long dotted name (a setting's source): wrapped after its dots onto continuation lines


@dataclass(frozen=True)
class Column:
    header: str
    kind: Kind = Kind.TEXT
    justify: Literal["left", "right", "center"] = "left"
    drop: int = 0  # 0: never dropped; otherwise dropped in ascending order when the table is too wide
    redundant: bool = False  # repeats part of the key column (a session's channel and user): dropped first


@dataclass(frozen=True)
class Cell:
    """A cell's plain text (what is measured, shortened and written as TSV) and an optional Rich style."""

    text: str
    style: str = ""
    raw: str | None = None  # what TSV gets instead of `text` (1234 for "1,234", bytes for "1.2 KB")


def number(n: int) -> Cell:
    return Cell(f"{n:,}", raw=str(n))


CellValue = str | Cell


def _cell(value: CellValue) -> Cell:
    return value if isinstance(value, Cell) else Cell(value)


def width_of(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def shorten_middle(text: str, width: int) -> str:
    """`text` in at most `width` cells, the middle replaced by an ellipsis (wide CJK characters count twice)."""
    if width_of(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    room = width - 1
    head_room, tail_room = (room + 1) // 2, room // 2
    head, used = "", 0
    for ch in text:
        if used + width_of(ch) > head_room:
            break
        head, used = head + ch, used + width_of(ch)
    tail, used = "", 0
    for ch in reversed(text):
        if used + width_of(ch) > tail_room:
            break
        tail, used = ch + tail, used + width_of(ch)
    return head + ELLIPSIS + tail


def shorten_end(text: str, width: int) -> str:
    if width_of(text) <= width:
        return text
    out, used = "", 0
    for ch in text:
        if used + width_of(ch) > width - 1:
            break
        out, used = out + ch, used + width_of(ch)
    return out + ELLIPSIS


@dataclass(frozen=True)
class Fitted:
    columns: list[int]  # indexes of the columns kept, in order
    widths: dict[int, int]  # the width each kept column gets


def fit(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], width: int) -> Fitted:
    """Which columns to show and how wide, so that the table fits `width` cells where it can."""
    natural = {i: max([width_of(c.header)] + [width_of(r[i].text) for r in rows]) for i, c in enumerate(columns)}
    kept = list(range(len(columns)))

    def total() -> int:
        return sum(widths[i] for i in kept) + GAP * (len(kept) - 1)

    widths = dict(natural)
    droppable = sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: columns[i].drop)

    def drop(ranks: range) -> None:
        for i in droppable:
            if total() > width and columns[i].drop in ranks and i in kept:
                kept.remove(i)

    def shrink(kind: Kind, floor: int) -> None:
        shrinkable = [i for i in kept if columns[i].kind is kind and widths[i] > floor]
        while total() > width and shrinkable:
            widest = max(shrinkable, key=lambda i: widths[i])  # take from the widest first
            widths[widest] -= min(total() - width, widths[widest] - floor)
            shrinkable = [i for i in shrinkable if widths[i] > floor]

    for i in [i for i, c in enumerate(columns) if c.redundant]:
        if total() > width:
            kept.remove(i)
    drop(range(1, EARLY_DROP + 1))
    shrink(Kind.WRAP, MIN_WRAP)
    shrink(Kind.TEXT, MIN_TEXT)
    shrink(Kind.KEY, MIN_KEY)
    drop(range(EARLY_DROP + 1, 1 << 30))
    return Fitted(kept, widths)


def render(columns: Sequence[Column], rows: Sequence[Sequence[CellValue]]) -> None:
    """Print the rows as a table fitted to the terminal, or as TSV with `--format tsv`. No terminal (a pipe into a
    file or a program, cron): every column its natural width. Never padded past the last column."""
    cells = [[_cell(v) for v in row] for row in rows]
    if output.table_format() == "tsv":
        for row in cells:
            output.out().file.write("\t".join((c.text if c.raw is None else c.raw).replace("\t", " ").replace("\n", " ")
                                                for c in row) + "\n")
        return
    console = output.out()
    width = output.table_width()
    fitted = fit(columns, cells, width if width is not None else 1 << 30)
    header = [Cell(columns[i].header, "bold") for i in fitted.columns]
    for k, row in enumerate([header, *([row[i] for i in fitted.columns] for row in cells)]):
        for physical in _wrapped(columns, fitted, row):
            console.print(_line(columns, fitted, physical, is_header=k == 0), soft_wrap=True, crop=False)


def wrap_dotted(text: str, width: int) -> list[str]:
    """`agent.json running.light_context_config.x` (or a path) in lines of at most `width` cells, broken after a
    dot or a slash or at a space (a piece longer than the line is cut where it must be)."""
    import re

    lines: list[str] = []
    line = ""
    for piece in re.findall(r"[^ ./]*[./]|[^ ./]+ ?| ", text):
        if line and width_of(line + piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        while width_of(piece.rstrip()) > width:
            head = _cells_prefix(piece, width)
            lines.append(head)
            piece = piece[len(head):]
        line += piece
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


def _cells_prefix(text: str, width: int) -> str:
    """The longest start of `text` that fits `width` terminal cells (a wide character is two; at least one
    character, so a cut always moves on)."""
    end = 1
    while end < len(text) and width_of(text[:end + 1]) <= width:
        end += 1
    return text[:end]


def _wrapped(columns: Sequence[Column], fitted: Fitted, row: Sequence[Cell]) -> list[list[Cell]]:
    """One logical row as its physical lines: a WRAP cell continues below, the other cells blank there."""
    pieces = [wrap_dotted(cell.text, fitted.widths[i]) if columns[i].kind is Kind.WRAP else [cell.text]
              for cell, i in zip(row, fitted.columns)]
    height = max(len(p) for p in pieces)
    return [[Cell(p[n] if n < len(p) else "", cell.style) for p, cell in zip(pieces, row)] for n in range(height)]


def _line(columns: Sequence[Column], fitted: Fitted, row: Sequence[Cell], is_header: bool) -> str:
    """One row as Rich markup: each cell shortened to its column, padded by its justification, GAP apart, with
    no padding after the last non-empty cell."""
    parts: list[str] = []
    for cell, i in zip(row, fitted.columns):
        col, exact = columns[i], fitted.widths[i]
        text = cell.text
        if not is_header and col.kind is Kind.KEY:
            text = shorten_middle(text, exact)
        elif is_header or col.kind in (Kind.TEXT, Kind.LABEL, Kind.NUMBER):
            text = shorten_end(text, exact)
        room = exact - width_of(text)
        justify = col.justify
        left = room if justify == "right" else room // 2 if justify == "center" else 0
        shown = output.escape(text)
        shown = f"[{cell.style}]{shown}[/]" if cell.style and text else shown
        parts.append(" " * left + shown + " " * (room - left))
    return (" " * GAP).join(parts).rstrip()
