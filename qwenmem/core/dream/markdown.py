"""MEMORY.md as structure: front matter, headings, list items, and the lines that must never be touched.

The document is kept as its original lines (with their line endings), so rendering is lossless by construction:
every edit is a splice of whole lines, and lines nobody edited come back byte for byte. Code fences and tables are
"protected": no list item is ever found inside them, so dedupe and promotion cannot change them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
# The closing "###" and trailing blanks are stripped in Python (_heading_title): `(.*?)\s*#*\s*$` backtracked
# quadratically on a heading with a long run of blanks (issue 10 item 6: a dream --dry-run past 20 s)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})(?:\s+(.*))?$")
_HR = re.compile(r"^\s{0,3}([-*_])(?:\s*\1){2,}\s*$")
_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])(\s+)(.*)$")
_TABLE_SEP = re.compile(r"^\s*(?:\|\s*)?:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)+(?:\|\s*)?$")  # no two \s* side by side


@dataclass(frozen=True)
class Heading:
    line: int
    level: int
    title: str


@dataclass
class Item:
    """One list item and everything nested under it (its subtree), as the half-open line range [start, end)."""

    start: int
    end: int
    indent: int
    marker: str
    parent: int | None  # index into MemoryDoc.items
    section: int | None  # index into MemoryDoc.headings (the nearest heading above), None before any heading
    children: list[int] = field(default_factory=list)


@dataclass
class MemoryDoc:
    lines: list[str]
    front_matter: int  # how many leading lines are front matter (0 when there is none)
    headings: list[Heading]
    items: list[Item]
    protected: set[int]
    newline: str

    def render(self) -> str:
        return "".join(self.lines)

    def item_text(self, index: int) -> str:
        """The item's words without list markers or indentation (its subtree included)."""
        item = self.items[index]
        parts = []
        for n in range(item.start, item.end):
            m = _ITEM.match(self.lines[n].rstrip("\r\n"))
            parts.append(m.group(4) if m else self.lines[n].strip())
        return "\n".join(p for p in parts if p)

    def item_head(self, index: int) -> str:
        m = _ITEM.match(self.lines[self.items[index].start].rstrip("\r\n"))
        return m.group(4) if m else ""

    def item_lines(self, index: int) -> list[str]:
        item = self.items[index]
        return self.lines[item.start:item.end]

    def heading_path(self, heading_index: int | None) -> list[Heading]:
        """The heading and its ancestors, outermost first."""
        if heading_index is None:
            return []
        path = [self.headings[heading_index]]
        for h in reversed(self.headings[:heading_index]):
            if h.level < path[0].level:
                path.insert(0, h)
        return path

    def section_end(self, heading_index: int) -> int:
        """First line after the section of headings[heading_index] (next heading of the same or higher level)."""
        level = self.headings[heading_index].level
        for h in self.headings[heading_index + 1:]:
            if h.level <= level:
                return h.line
        return len(self.lines)


def split_lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def dominant_newline(lines: list[str]) -> str:
    crlf = sum(1 for line in lines if line.endswith("\r\n"))
    return "\r\n" if crlf > len(lines) / 2 else "\n"


def _front_matter_length(lines: list[str]) -> int:
    if not lines or lines[0].strip() not in ("---", "\ufeff---"):
        return 0
    for n in range(1, len(lines)):
        if lines[n].strip() in ("---", "..."):
            return n + 1
    return 0  # an unterminated '---' is just a horizontal rule followed by text


def _indent_width(line: str) -> int:
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))


def _heading_title(h: re.Match[str]) -> str:
    """The heading text without the closing sequence: trailing blanks, then #s, then blanks."""
    return (h.group(2) or "").rstrip().rstrip("#").strip()


def parse(text: str) -> MemoryDoc:
    lines = split_lines(text)
    fm = _front_matter_length(lines)
    protected: set[int] = set(range(fm))
    headings: list[Heading] = []
    fence: str | None = None
    for n in range(fm, len(lines)):
        line = lines[n].rstrip("\r\n")
        m = _FENCE.match(line)
        if fence is not None:
            protected.add(n)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
                fence = None
            continue
        if m:
            fence = m.group(1)
            protected.add(n)
            continue
        if line.lstrip().startswith("|"):
            protected.add(n)
        elif "|" in line and _TABLE_SEP.match(line):
            protected.add(n)
            if n > 0 and lines[n - 1].strip():
                protected.add(n - 1)
            k = n + 1
            while k < len(lines) and "|" in lines[k] and lines[k].strip():
                protected.add(k)
                k += 1
    for n in range(fm, len(lines)):
        if n in protected:
            continue
        h = _HEADING.match(lines[n].rstrip("\r\n"))
        if h and _heading_title(h):
            headings.append(Heading(n, len(h.group(1)), _heading_title(h)))
    doc = MemoryDoc(lines, fm, headings, [], protected, dominant_newline(lines))
    _find_items(doc)
    return doc


def _find_items(doc: MemoryDoc) -> None:
    lines, protected = doc.lines, doc.protected
    heading_lines = {h.line: i for i, h in enumerate(doc.headings)}
    section: int | None = None
    open_items: list[int] = []  # stack of item indices whose subtree may still grow
    for n in range(doc.front_matter, len(lines)):
        raw = lines[n].rstrip("\r\n")
        if n in heading_lines:
            section = heading_lines[n]
            open_items.clear()
            continue
        if not raw.strip():
            continue
        indent = _indent_width(raw)
        m = None if (n in protected or _HR.match(raw)) else _ITEM.match(raw)
        if m:
            while open_items and doc.items[open_items[-1]].indent >= indent:
                open_items.pop()
            parent = open_items[-1] if open_items else None
            doc.items.append(Item(n, n + 1, indent, m.group(2), parent, section))
            index = len(doc.items) - 1
            if parent is not None:
                doc.items[parent].children.append(index)
            open_items.append(index)
            for i in open_items:
                doc.items[i].end = n + 1
            continue
        # A non-item line belongs to the open items it is indented under, or lazily continues the last one.
        lazy = n > 0 and lines[n - 1].strip() != "" and (n - 1) not in protected and not _HR.match(raw) \
            and n not in protected
        while open_items and indent <= doc.items[open_items[-1]].indent and not lazy:
            open_items.pop()
        if _HR.match(raw) and indent <= 3:
            open_items.clear()
            continue
        for i in open_items:
            doc.items[i].end = n + 1


def reindent_item(lines: list[str], new_indent: str, marker: str | None, newline: str) -> list[str]:
    """Move an item's lines to a new indentation (keeping nesting), optionally with another list marker."""
    if not lines:
        return []
    first = lines[0].rstrip("\r\n")
    m = _ITEM.match(first)
    base = _indent_width(first)
    out = []
    if m:
        out.append(f"{new_indent}{marker or m.group(2)}{m.group(3)}{m.group(4)}{newline}")
    else:
        out.append(f"{new_indent}{first.strip()}{newline}")
    for line in lines[1:]:
        raw = line.rstrip("\r\n")
        if not raw.strip():
            out.append(newline)
            continue
        extra = max(_indent_width(raw) - base, 0)
        out.append(f"{new_indent}{' ' * extra}{raw.lstrip()}{newline}")
    return out
