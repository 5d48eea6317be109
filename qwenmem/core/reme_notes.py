"""ReMe 0.4 Markdown notes as QwenPaw 2.x writes them (qwenpaw2-workspace.md §5.3, §6), read-only.

* topic note `memory/<YYYY-MM-DD>/<name>.md`: YAML front matter (`name`, `description`, `session_id`,
  `source_conversation`, …) then the body;
* day index `memory/<YYYY-MM-DD>.md`: front matter `name: '<date>'`, any text, and a generated block
  `<!-- notes:auto -->` … `<!-- /notes:auto -->` of `- [[memory/<date>/<file>]] name: … description: …` lines;
* digest `digest/{procedure,personal,wiki}/<name>.md`: front matter, body, a `## Sources` list of `[[memory/…]]`.

Front matter is split off only when it is a `---` fence on line 1, a closing `---` (or `...`) line, and YAML that
parses to a mapping (or is empty): anything else stays body, so a 1.x log that opens with a horizontal rule never
loses text. ReMe excludes front matter from its chunks and starts the body on the line after the closing fence
(observed: the Berlin note's chunk is lines 8-14, its fence closes on line 7).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import PurePosixPath

MAX_FRONT_MATTER_CHARS = 64 * 1024  # a note's front matter is a few lines; a huge one is not parsed (stays body)
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
AUTO_OPEN = re.compile(r"^\s*<!--\s*([\w.-]+):auto\s*-->\s*$")
AUTO_CLOSE = re.compile(r"^\s*<!--\s*/([\w.-]+):auto\s*-->\s*$")
WIKILINK = re.compile(r"\[\[([^\[\]\n|]+)(?:\|[^\[\]\n]*)?\]\]")
CORE_NAMES = ("MEMORY.md", "memory.md")
# How a line that qwenmem's dream promotes into MEMORY.md names the note it came from: "- fact (from [[memory/…]])".
# Comparisons of entries ignore it (dream/normalize.py), so the same fact from two notes is still one fact.
# (?<![ \t]): a match starts at the first blank of a run; without it a long run of blanks was quadratic
CITATION = re.compile(r"(?<![ \t])[ \t]*\(from \[\[([^\[\]\n|]+)\]\]\)")

# What a file is, by where it lives (kind), for labels, filters and what dream may touch.
CORE, NOTE, DAY_INDEX, DAILY_LOG, DIGEST, OTHER = "core", "note", "day_index", "daily_log", "digest", "other"


@dataclass(frozen=True)
class AutoBlock:
    """A generated block, 1-based inclusive lines of the whole file (markers included)."""

    name: str  # "notes" for <!-- notes:auto -->
    start_line: int
    end_line: int
    closed: bool  # False: no closing marker, the block runs to the end of the file


@dataclass
class Note:
    # the parsed front matter, unknown keys included (YAML: keys and values of any type)
    meta: dict[object, object] = field(default_factory=dict)
    front_matter_lines: int = 0  # lines 1..N are front matter (fences included); 0 when there is none
    body: str = ""  # the text after the front matter, exactly as in the file
    problem: str | None = None  # why a fenced block at the top was not taken as front matter

    @property
    def body_start_line(self) -> int:
        """The file's line number of the body's first line."""
        return self.front_matter_lines + 1

    @property
    def title(self) -> str | None:
        return _text(self.meta.get("title")) or _text(self.meta.get("name"))

    @property
    def description(self) -> str | None:
        return _text(self.meta.get("description"))

    @property
    def tags(self) -> list[str]:
        return parse_tags(self.meta.get("tags", self.meta.get("tag")))

    def date(self, rel: str | None = None) -> str | None:
        """The note's day: front matter `date`, else `created`, else the date in its path."""
        for key in ("date", "created"):
            found = _as_date(self.meta.get(key))
            if found:
                return found
        return path_date(rel) if rel else None


def _text(value: object) -> str | None:
    if isinstance(value, (str, int, float, date)) and not isinstance(value, bool):
        text = str(value).strip()
        return text or None
    return None


def _as_date(value: object) -> str | None:
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        head = value.strip()[:10]
        if DATE_RE.match(head):
            try:
                return date.fromisoformat(head).isoformat()
            except ValueError:
                return None
    return None


def parse_tags(value: object) -> list[str]:
    """A YAML list, or a string of comma/space separated tags; '#' prefixes dropped, order kept, no duplicates."""
    items: list[object] = []
    if isinstance(value, str):
        items = re.split(r"[,\s]+", value)
    elif isinstance(value, (list, tuple)):
        items = [v for v in value if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
    out: list[str] = []
    for item in items:
        tag = str(item).strip().lstrip("#").strip()
        if tag and tag not in out:
            out.append(tag)
    return out


def path_date(rel: str) -> str | None:
    """memory/2026-12-01/x.md and memory/2026-12-01.md -> 2026-12-01 (first dated path part, a real date)."""
    for part in PurePosixPath(rel).parts:
        stem = part[:-3] if part.endswith(".md") else part
        if DATE_RE.match(stem):
            found = _as_date(stem)
            if found:
                return found
    return None


def _line_end(text: str, start: int) -> int:
    """Index just past the line starting at `start` (its newline included)."""
    nl = text.find("\n", start)
    return len(text) if nl < 0 else nl + 1


def parse_note(text: str) -> Note:
    """Split `text` into front matter and body; never raises, never drops a character (see the module doc)."""
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return Note(body=text)
    pos, n = _line_end(text, 0), 1
    while pos < len(text):
        end = _line_end(text, pos)
        n += 1
        line = text[pos:end].rstrip("\r\n")
        if line.rstrip() in ("---", "..."):
            yaml_text = text[_line_end(text, 0):pos]
            meta, problem = _load_yaml(yaml_text)
            if problem:
                return Note(body=text, problem=problem)
            return Note(meta, n, text[end:])
        if pos - 4 > MAX_FRONT_MATTER_CHARS:
            return Note(body=text, problem=f"front matter longer than {MAX_FRONT_MATTER_CHARS} characters")
        pos = end
    return Note(body=text, problem="front matter fence is never closed")


def _load_yaml(yaml_text: str) -> tuple[dict[object, object], str | None]:
    import yaml

    if len(yaml_text) > MAX_FRONT_MATTER_CHARS:
        return {}, f"front matter longer than {MAX_FRONT_MATTER_CHARS} characters"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        doc = yaml.load(yaml_text, Loader=loader)  # noqa: S506 - a SafeLoader: no object construction
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {}, f"front matter is not valid YAML ({first})"
    if doc is None:  # empty is front matter; comments only (a "# heading" between two rules) is text
        return {}, None if not yaml_text.strip() else "front matter holds no YAML, only comments"
    if not isinstance(doc, dict):
        return {}, f"front matter is a YAML {type(doc).__name__}, not a mapping"
    return doc, None


def auto_blocks(text: str) -> list[AutoBlock]:
    """Every generated `<!-- X:auto -->` … `<!-- /X:auto -->` block (ReMe's day index keeps `notes`)."""
    blocks: list[AutoBlock] = []
    open_name, open_line = None, 0
    lines = text.split("\n")  # lines end at \n only, as the index numbers them (not at \x1e, \u2028 …)
    if lines and lines[-1] == "":
        lines.pop()
    for i, line in enumerate(lines, 1):
        if open_name is None:
            m = AUTO_OPEN.match(line.rstrip("\r"))
            if m:
                open_name, open_line = m.group(1), i
        else:
            m = AUTO_CLOSE.match(line.rstrip("\r"))
            if m and m.group(1) == open_name:
                blocks.append(AutoBlock(open_name, open_line, i, True))
                open_name = None
    if open_name is not None:
        blocks.append(AutoBlock(open_name, open_line, max(len(lines), open_line), False))
    return blocks


def wikilinks(text: str) -> list[str]:
    """`[[target]]` and `[[target|label]]` targets, in order, without duplicates."""
    out: list[str] = []
    for m in WIKILINK.finditer(text):
        target = m.group(1).strip()
        if target and target not in out:
            out.append(target)
    return out


def cite(rel: str) -> str:
    return f" (from [[{rel}]])"


def cited_source(text: str) -> str | None:
    """The note a promoted line cites, if any."""
    m = CITATION.search(text)
    return m.group(1) if m else None


def without_citations(text: str) -> str:
    return CITATION.sub("", text)


def kind_of(rel: str, note: Note | None = None, daily_dir: str = "memory", digest_dir: str = "digest") -> str:
    """core (MEMORY.md), note (memory/<date>/x.md), day_index (memory/<date>.md with front matter or a notes
    block), daily_log (a 1.x memory/<date>.md), digest (digest/**), other."""
    parts = PurePosixPath(rel).parts
    if len(parts) == 1 and parts[0] in CORE_NAMES:
        return CORE
    if parts and parts[0] == digest_dir:
        return DIGEST
    if parts and parts[0] == daily_dir:
        if len(parts) >= 3 and DATE_RE.match(parts[1]):
            return NOTE
        if len(parts) == 2 and DATE_RE.match(parts[1][:-3]) and parts[1].endswith(".md"):
            if note is not None and (note.front_matter_lines or any(b.name == "notes" for b in auto_blocks(note.body))):
                return DAY_INDEX
            return DAILY_LOG
    return OTHER
