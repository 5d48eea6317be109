"""What qwenmem's dream promotes into MEMORY.md on a QwenPaw 2.x workspace (ReMe 0.4 memory, read-only).

2.x no longer maintains MEMORY.md (qwenpaw2-workspace.md §5.1, §6); the day's knowledge is in ReMe's files. This
builds, for one day, a daily log in the 1.x shape that the existing promotion reads, from:
  * the day page memory/<date>.md: its own text (a 1.x log, or the journal part of a day index), without front
    matter and without the generated <!-- notes:auto --> block;
  * every topic note memory/<date>/**/*.md: its body, headings and lists as written;
  * every digest/**/*.md page whose sources cite a note of that day: its body without front matter and without
    its "## Sources" list, paragraphs turned into list items (a digest is written in prose).
Every top-level list item ends with a citation of its file, `(from [[memory/2026-12-01/lisbon-trip.md]])`, which
a promoted line keeps. Nothing here writes: ReMe regenerates these files and qwenmem never rewrites them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from qwenmem.core import reme_notes as notes
from qwenmem.core.errors import UnsafeLinkError, WorkspaceError
from qwenmem.core.fsio import read_with_snapshot
from qwenmem.core.workspace import Workspace

MAX_NOTE_BYTES = 10 * 1024 * 1024  # ReMe's own limit for what it indexes
LIST_ITEM = re.compile(r"^(?:[-*+]|\d{1,9}[.)])[ \t]+\S")
FENCE = re.compile(r"^\s*(```|~~~)")
SOURCES_HEADING = re.compile(r"^#{1,6}\s+(sources|来源|來源|出处|fuentes)\s*$", re.I)
HEADING = re.compile(r"^#{1,6}\s")


@dataclass
class DayLog:
    text: str | None
    sources: list[str] = field(default_factory=list)  # workspace-relative, in the order they were read
    warnings: list[str] = field(default_factory=list)

    def describe(self) -> str | None:
        return ", ".join(self.sources) if self.sources else None


def _read(path: Path, rel: str, log: DayLog) -> str | None:
    try:
        data, _ = read_with_snapshot(path, max_bytes=MAX_NOTE_BYTES)
    except WorkspaceError as exc:  # a refused link keeps its full line: it names the link (maybe a folder above)
        detail = str(exc) if isinstance(exc, UnsafeLinkError) else str(exc).removeprefix(f"{path}: ")
        log.warnings.append(f"{rel}: not read for promotion ({detail})")
        return None
    return data.decode("utf-8", errors="replace").removeprefix("\ufeff")


def _cited(body: str, rel: str) -> list[str]:
    """The body's lines, each top-level list item ending with the file's citation (code fences untouched)."""
    out, fence = [], None
    for line in body.replace("\r\n", "\n").split("\n"):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1) == fence:
                fence = None
        elif m:
            fence = m.group(1)
        elif LIST_ITEM.match(line) and not notes.cited_source(line):
            line = line.rstrip() + notes.cite(rel)
        out.append(line)
    return out


def _without_blocks(body: str) -> str:
    lines = body.split("\n")
    drop = {n for b in notes.auto_blocks(body) for n in range(b.start_line - 1, b.end_line)}
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)


def _digest_lines(body: str) -> list[str]:
    """A digest page as list items: paragraphs become items; the Sources section is left out."""
    out: list[str] = []
    paragraph: list[str] = []
    in_sources, fence = False, None

    def flush() -> None:
        if paragraph:
            out.append("- " + " ".join(p.strip() for p in paragraph))
            paragraph.clear()

    for line in body.replace("\r\n", "\n").split("\n"):
        if fence or FENCE.match(line):
            flush()
            m = FENCE.match(line)
            fence = None if (fence and m and m.group(1) == fence) else (fence or (m.group(1) if m else None))
            if not in_sources:
                out.append(line)
            continue
        if HEADING.match(line):
            flush()
            in_sources = bool(SOURCES_HEADING.match(line.strip()))
            if not in_sources:
                out.append(line)
            continue
        if in_sources:
            continue
        if not line.strip():
            flush()
            out.append("")
        elif LIST_ITEM.match(line) or line.startswith((" ", "\t")) and not paragraph:
            flush()
            out.append(line)
        else:
            paragraph.append(line)
    flush()
    if not any(HEADING.match(line) for line in out):
        out = ["## Facts", ""] + out  # a page of prose states facts about its subject
    return out


def _cites_day(body: str, daily_dir: str, date: str) -> bool:
    day = f"{daily_dir}/{date}"
    return any(link == f"{day}.md" or link.startswith(day + "/") for link in notes.wikilinks(body))


def day_log(ws: Workspace, date: str, daily_dir: str = "memory", digest_dir: str = "digest") -> DayLog:
    log = DayLog(None)
    parts: list[str] = [f"# {date}", ""]
    day_page = ws.path / daily_dir / f"{date}.md"
    if day_page.is_file():
        rel = f"{daily_dir}/{date}.md"
        text = _read(day_page, rel, log)
        if text is not None:
            body = _without_blocks(notes.parse_note(text).body)
            if body.strip():
                log.sources.append(rel)
                parts += [f"# {rel}", *_cited(body, rel), ""]
    folder = ws.path / daily_dir / date
    if folder.is_dir():
        for path in sorted(folder.rglob("*.md")):
            rel = path.relative_to(ws.path).as_posix()
            if any(p.startswith(".") for p in path.relative_to(folder).parts) or not path.is_file():
                continue
            text = _read(path, rel, log)
            if text is None:
                continue
            log.sources.append(rel)
            parts += [f"# {rel}", *_cited(notes.parse_note(text).body, rel), ""]
    digest = ws.path / digest_dir
    if digest.is_dir():
        for path in sorted(digest.rglob("*.md")):
            rel = path.relative_to(ws.path).as_posix()
            if any(p.startswith(".") for p in path.relative_to(digest).parts) or not path.is_file():
                continue
            text = _read(path, rel, log)
            body = notes.parse_note(text).body if text is not None else ""
            if not _cites_day(body, daily_dir, date):
                continue
            log.sources.append(rel)
            parts += [f"# {rel}", *_cited("\n".join(_digest_lines(body)), rel), ""]
    if log.sources:
        log.text = "\n".join(parts).rstrip("\n") + "\n"
    return log
