"""Line wrapping for people: by display width (a CJK character is two cells), between words in Latin text and
between characters in CJK text, with the usual line-breaking rules (kinsoku): closing punctuation (`。，、）」`) never
starts a line and opening punctuation (`（「`) never ends one. Continuation lines get a hanging indent.

Rich wraps at spaces only, so a run of Chinese is one long "word" to it: it jumps to the next line after `- [x]` and
is then cut wherever the width ends, a lone `。` starting the next line. Everything here is plain text in, plain
text (or Rich Text, styles kept) out; nothing is lost except the spaces at the breaks.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

#: never at the start of a line (closing brackets and quotes, stops, commas, small kana, iteration marks)
CLOSING = frozenset("。．，、）」』】〕〉》〗〙〛〟！？：；…‥・ー々ゝゞ〜～’”»›"
                    "ぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮヵヶ"
                    "﹐﹑﹒﹔﹕﹖﹗﹚﹜﹞" ",.;:!?)]}%")
#: never at the end of a line
OPENING = frozenset("（「『【〔〈《〖〘〚〝‘“«‹﹙﹛﹝" "([{")

_LIST_ITEM = re.compile(r"^(\s*)(?:[-*+•]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")


@lru_cache(maxsize=4096)
def cells(ch: str) -> int:
    from rich.cells import cell_len

    return cell_len(ch)


def width_of(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def _wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F")


def _may_break_between(a: str, b: str) -> bool:
    """Between two non-space characters: only where CJK text is involved, and never against kinsoku."""
    if b in CLOSING or a in OPENING:
        return False
    return _wide(a) or _wide(b)


def _segments(text: str) -> list[tuple[int, int, int]]:
    """The text cut at every break opportunity: (start, end, end with the spaces after it). A paragraph's leading
    spaces (its indentation) stay with its first segment."""
    out: list[tuple[int, int, int]] = []
    n, i = len(text), 0
    while i < n and text[i].isspace():
        i += 1
    start = 0
    while i < n:
        if text[i].isspace():
            end = i
            while i < n and text[i].isspace():
                i += 1
            if i < n and text[i] in CLOSING and ord(text[i]) > 0x7F:
                continue  # `… [3 more]`, ` 。`: a full-width closing mark after a space still never starts a line
            out.append((start, end, i))
            start = i
            continue
        if i + 1 < n and not text[i + 1].isspace() and _may_break_between(text[i], text[i + 1]):
            out.append((start, i + 1, i + 1))
            start = i + 1
        i += 1
    if start < n or not out:
        out.append((start, n, n))
    return out


def _split_long(text: str, start: int, end: int, room: int, first_room: int) -> list[tuple[int, int]]:
    """A segment wider than a whole line (a URL, a long identifier): cut by characters, still never leaving a
    closing mark at the start of the next piece or an opening one at the end of a piece when it can be helped."""
    pieces: list[tuple[int, int]] = []
    at, avail = start, first_room
    while at < end:
        used, j = 0, at
        while j < end and used + cells(text[j]) <= max(avail, 1):
            used += cells(text[j])
            j += 1
        if j == at:
            j = at + 1  # a character wider than the line: it goes alone
        k = j
        while at + 1 < k < end and (text[k] in CLOSING or text[k - 1] in OPENING):
            k -= 1
        if k > at + 1 or k == j:
            j = k
        pieces.append((at, j))
        at, avail = j, room
    return pieces


def line_spans(text: str, width: int, first: int = 0, rest: int = 0) -> list[tuple[int, int]]:
    """Where to cut one paragraph (no newlines) so that each line fits `width` cells after its prefix (`first`
    cells on the first line, `rest` on the others): a list of (start, end) offsets into `text`."""
    if not text:
        return [(0, 0)]
    spans: list[tuple[int, int]] = []
    line_start: int | None = None
    line_end = used = 0
    pending = 0  # the width of the spaces between the line so far and the next segment

    def room() -> int:
        return max(width - (first if not spans else rest), 1)

    for start, end, spaced in _segments(text):
        seg = width_of(text[start:end])
        if line_start is not None and used + pending + seg <= room():
            line_end, used = end, used + pending + seg
        else:
            if line_start is not None:
                spans.append((line_start, line_end))
            if seg > room():
                pieces = _split_long(text, start, end, max(width - rest, 1), room())
                spans.extend(pieces[:-1])
                start = pieces[-1][0]
                seg = width_of(text[start:end])
            line_start, line_end, used = start, end, seg
        pending = width_of(text[end:spaced])
    if line_start is not None:
        spans.append((line_start, line_end))
    return spans or [(0, 0)]


def list_hang(line: str) -> str:
    """The hanging indent for a Markdown list item (`- [x] ` -> 6 spaces), else the line's own indentation."""
    m = _LIST_ITEM.match(line)
    if m:
        return " " * width_of(m.group(0))
    return line[:len(line) - len(line.lstrip())]


def wrap(text: str, width: int, indent: str = "", hang: str | None = None, lists: bool = False) -> list[str]:
    """`text` (newlines kept as paragraph ends) as lines of at most `width` cells: the first line of each
    paragraph after `indent`, the others after `hang` (default: `indent`, or the list item's hang with `lists`)."""
    lines: list[str] = []
    for para in text.split("\n"):
        extra = list_hang(para) if lists else ""
        cont = (hang if hang is not None else indent) + extra
        for k, (s, e) in enumerate(line_spans(para, width, width_of(indent), width_of(cont))):
            lines.append(((indent if k == 0 else cont) + para[s:e]).rstrip())
    return lines


def wrap_rich(text: Any, width: int, indent: str = "", hang: str | None = None) -> list[Any]:
    """The same for a Rich Text (styles kept): one Text per line."""
    from rich.text import Text

    lines: list[Any] = []
    offset = 0
    cont = hang if hang is not None else indent
    for para in text.plain.split("\n"):
        piece = text[offset:offset + len(para)]
        for k, (s, e) in enumerate(line_spans(para, width, width_of(indent), width_of(cont))):
            line = Text(indent if k == 0 else cont) + piece[s:e]
            line.rstrip()
            lines.append(line)
        offset += len(para) + 1
    return lines
