"""The deterministic dream: dedupe MEMORY.md, then promote the day's log. Pure text in, text and reasons out."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from qwenmem.core.dream.changelog import Change
from qwenmem.core.dream.dedupe import find_duplicates
from qwenmem.core.dream.edits import Splice, apply_splices
from qwenmem.core.dream.markdown import MemoryDoc, _HR, parse, reindent_item
from qwenmem.core.dream.embedder import TextEmbedder
from qwenmem.core.dream.promote import Candidate, log_candidates, plan_promotions, source_of


@dataclass
class Consolidation:
    text: str
    changes: list[Change]
    flagged: list[Change] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # log entries not promoted, with why
    notes: list[str] = field(default_factory=list)


def consolidate(memory_text: str, log_text: str | None, date: str, embedder: TextEmbedder | None = None,
                threshold: float = 0.9,
                promote: str = "facts") -> Consolidation:
    doc = parse(memory_text)
    dedupe = find_duplicates(doc, embedder, threshold)
    removed = set(dedupe.removed)
    candidates = log_candidates(parse(log_text), promote) if log_text else []
    plan = plan_promotions(doc, removed, candidates, date, embedder, threshold)

    splices: list[Splice] = []
    changes: list[Change] = []
    for i in sorted(removed):
        if _has_removed_ancestor(doc, i, removed):
            continue
        splices.append(Splice(doc.items[i].start, doc.items[i].end))
        changes.append(dedupe.removed[i])
    for i, (cand, change) in sorted(plan.replacements.items()):
        item = doc.items[i]
        first = doc.lines[item.start]
        indent = first[:len(first) - len(first.lstrip())]
        splices.append(Splice(item.start, item.end, tuple(reindent_item(cand.lines, indent, item.marker, doc.newline))))
        changes.append(change)
    if plan.additions:
        gone = {n for i in removed for n in range(doc.items[i].start, doc.items[i].end)}
        splices.append(_dated_insertion(doc, date, [c for c, _ in plan.additions], gone))
        changes.extend(change for _, change in plan.additions)
    text = "".join(apply_splices(doc.lines, splices)) if splices else memory_text
    skipped = [f"{source_of(c, date)}: {why}" for c, why in plan.skipped]
    if promote == "facts" and log_text:
        skipped += _outside_fact_headings(doc, removed, candidates, parse(log_text), date, embedder, threshold)
    return Consolidation(text, changes, dedupe.flagged, skipped, dedupe.notes)


#: how a log entry the `facts` rule passed over is named in `skipped` (the CLI counts them by this text)
NOT_UNDER_A_FACT_HEADING = "not under a Facts/Decisions/Lessons… heading (the `facts` rule); `--promote all` would add it"


def _outside_fact_headings(doc: MemoryDoc, removed: set[int], candidates: list[Candidate], log: MemoryDoc, date: str,
                           embedder: TextEmbedder | None, threshold: float) -> list[str]:
    """The log entries `--promote all` would add or let replace an entry, but `facts` passed over: a dream that
    says "already tidy" says what it skipped and why."""
    taken = {c.source_line for c in candidates}
    others = [c for c in log_candidates(log, "all") if c.source_line not in taken]
    if not others:
        return []
    trial = plan_promotions(doc, removed, candidates + others, date, embedder, threshold)
    promoted = {id(c) for c, _ in trial.additions} | {id(c) for c, _ in trial.replacements.values()}
    return [f"{source_of(c, date)}: {NOT_UNDER_A_FACT_HEADING}" for c in others if id(c) in promoted]


def _has_removed_ancestor(doc: MemoryDoc, i: int, removed: set[int]) -> bool:
    parent = doc.items[i].parent
    while parent is not None:
        if parent in removed:
            return True
        parent = doc.items[parent].parent
    return False


def _list_marker(doc: MemoryDoc) -> str:
    markers = Counter(item.marker for item in doc.items if item.parent is None and not item.marker[0].isdigit())
    return markers.most_common(1)[0][0] if markers else "-"


def _grouped_items(candidates: list[Candidate], marker: str, nl: str, with_subheadings: bool) -> list[str]:
    """Promoted items grouped under their source heading, so that "状态: ✅" keeps saying what it is the state of."""
    out: list[str] = []
    current = object()
    for c in candidates:
        if with_subheadings and c.heading != current:
            current = c.heading
            if c.heading:
                if out:
                    out.append(nl)
                out += [f"### {c.heading}{nl}", nl]
        out += reindent_item(c.lines, "", marker, nl)
    return out


def _dated_insertion(doc: MemoryDoc, date: str, candidates: list[Candidate], gone: set[int]) -> Splice:
    nl = doc.newline
    marker = _list_marker(doc)
    items = _grouped_items(candidates, marker, nl, with_subheadings=any(c.heading for c in candidates))
    existing = next((k for k, h in enumerate(doc.headings) if h.title.strip() == date), None)
    if existing is not None:
        at = doc.section_end(existing)
        while at > doc.headings[existing].line + 1 and not doc.lines[at - 1].strip():
            at -= 1
        prev = _last_kept_line(doc, at, gone)
        block = ([nl] if prev is not None and doc.lines[prev].strip() and items[0].startswith("#") else []) + items
    else:
        at = _footer_start(doc)
        prev = _last_kept_line(doc, at, gone)
        block = [nl] if prev is not None and prev >= doc.front_matter and doc.lines[prev].strip() else []
        block += [f"## {date}{nl}", nl, *items]
    if at < len(doc.lines) and doc.lines[at].strip():
        block.append(nl)
    if prev is not None and not doc.lines[prev].endswith(("\n", "\r")):
        block.insert(0, nl)  # the file had no final newline
    return Splice(at, at, tuple(block), order=1)


def _last_kept_line(doc: MemoryDoc, at: int, gone: set[int]) -> int | None:
    n = at - 1
    while n >= 0 and n in gone:
        n -= 1
    return n if n >= 0 else None


def _footer_start(doc: MemoryDoc) -> int:
    """Where a trailing footer begins (a last horizontal rule followed by no heading and no list), else the end."""
    end = len(doc.lines)
    for n in range(end - 1, doc.front_matter - 1, -1):
        line = doc.lines[n].rstrip("\r\n")
        if n in doc.protected:
            return end
        if any(h.line == n for h in doc.headings) or any(item.start == n for item in doc.items):
            return end
        if _HR.match(line):
            while n > doc.front_matter and not doc.lines[n - 1].strip():
                n -= 1
            return n
    return end
