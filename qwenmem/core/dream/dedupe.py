"""Finding duplicate entries inside MEMORY.md without an LLM.

Scope rules (so that nothing meaningful is lost):
  * only list items are candidates; code fences, tables, headings and paragraphs are never touched;
  * nested items are compared only with their siblings (a "状态: ✅" under two different parents is two facts);
  * top-level items are compared within their section, and across sections only when they are long enough to be
    a statement rather than a repeated label (_long_enough);
  * an entry goes only when what stays states all of it (evidence.restates): an embedding cosine alone is never
    evidence, because a topic-level model scores distinct facts of one file as high as paraphrases;
  * a "possibly contradictory" flag needs the two entries to be about the same thing (evidence.same_subject).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from qwenmem.core.dream.changelog import FLAGGED, MERGED, REMOVED, Change, ChangeAction
from qwenmem.core.dream.embedder import TextEmbedder
from qwenmem.core.dream.evidence import keys_agree, negations, restates, same_subject, values_differ
from qwenmem.core.dream.markdown import _ITEM, MemoryDoc
from qwenmem.core.dream.normalize import is_cjk_heavy, normalize, numbers


MAX_PAIRWISE = 3000  # entries per list; beyond this the O(n²) containment and embedding passes are skipped


@dataclass
class DedupePlan:
    removed: dict[int, Change]  # item index → why it goes
    flagged: list[Change]
    notes: list[str]


def _scope_groups(doc: MemoryDoc) -> dict[tuple[str, Any], list[int]]:
    groups: dict[tuple[str, Any], list[int]] = {}
    for i, item in enumerate(doc.items):
        key = ("children", item.parent) if item.parent is not None else ("section", item.section)
        groups.setdefault(key, []).append(i)
    return groups


def _section_title(doc: MemoryDoc, item_index: int) -> str | None:
    s = doc.items[item_index].section
    return doc.headings[s].title if s is not None else None


def _describe(doc: MemoryDoc, i: int) -> str:
    return "".join(doc.item_lines(i)).rstrip("\r\n")


def _depth(doc: MemoryDoc, group: tuple[str, Any]) -> int:
    kind, ref = group
    if kind == "section":
        return 0
    depth, parent = 1, doc.items[ref].parent
    while parent is not None:
        depth, parent = depth + 1, doc.items[parent].parent
    return depth


def find_duplicates(doc: MemoryDoc, embedder: TextEmbedder | None = None, threshold: float = 0.9) -> DedupePlan:
    run = _Run(doc)
    skipped_groups: list[int] = []
    # Deepest lists first, so that a parent is compared by what is left of it once its own duplicates are gone.
    groups = sorted(_scope_groups(doc).items(), key=lambda kv: -_depth(doc, kv[0]))
    for _, members in groups:
        run.read(members)
        run.exact_duplicates(members)
        alive = [i for i in members if run.keys[i] and i not in run.removed and not doc.items[i].children]
        if len(alive) > MAX_PAIRWISE:
            skipped_groups.append(len(alive))
            continue
        run.contained_entries(alive)

    # 3. near-duplicates by meaning, when an embedding model is available
    flagged: list[Change] = []
    if embedder is not None:
        _near_duplicates(doc, embedder, threshold, run.keys, run.raw, run.removed, flagged, run.drop)
    notes = [f"a list of {n} entries is too long to compare pairwise (limit {MAX_PAIRWISE}); only exact and "
             "normalized duplicates were removed there" for n in skipped_groups]
    return DedupePlan(run.removed, flagged, notes)


class _Run:
    """What one find_duplicates shares between its steps: the entries gone so far and each entry's text."""

    def __init__(self, doc: MemoryDoc) -> None:
        self.doc = doc
        self.removed: dict[int, Change] = {}
        self.removed_lines: set[int] = set()
        self.line_texts: dict[int, str] = {}  # an item's text spans its descendants: parse each line once, not per ancestor
        self.seen_anywhere: dict[str, int] = {}  # top-level entries' keys, across sections
        self.keys: dict[int, str] = {}  # normalized text
        self.raw: dict[int, str] = {}  # text with runs of blanks as one space

    def line_text(self, n: int) -> str:
        text = self.line_texts.get(n)
        if text is None:
            m = _ITEM.match(self.doc.lines[n].rstrip("\r\n"))
            text = self.line_texts[n] = m.group(4) if m else self.doc.lines[n].strip()
        return text

    def live_text(self, i: int) -> str:
        """The item's text without descendants already found to be duplicates (they are processed first)."""
        item = self.doc.items[i]
        parts = [self.line_text(n) for n in range(item.start, item.end) if n not in self.removed_lines]
        return "\n".join(p for p in parts if p)

    def drop(self, i: int, keeper: int, action: ChangeAction, reason: str, similarity: float | None = None) -> None:
        doc = self.doc
        self.removed[i] = Change(action, reason, old=_describe(doc, i), new=None, line=doc.items[i].start + 1,
                                 section=_section_title(doc, i), similarity=similarity)
        self.removed_lines.update(range(doc.items[i].start, doc.items[i].end))

    def read(self, members: list[int]) -> None:
        for i in members:
            text = self.live_text(i)
            self.keys[i], self.raw[i] = normalize(text), " ".join(text.split())

    def exact_duplicates(self, members: list[int]) -> None:
        """1. exact and normalized duplicates: the first occurrence stays."""
        items, keys = self.doc.items, self.keys
        seen: dict[str, int] = {}
        for i in members:
            key = keys[i]
            if not key:
                continue
            first = seen.get(key)
            if first is None and items[i].parent is None and _long_enough(key):
                first = self.seen_anywhere.get(key)
            if first is not None:
                same = self.live_text(i) == self.live_text(first)
                kind = "exact duplicate" if same else "normalized duplicate (differs only in spacing, case or punctuation)"
                self.drop(i, first, REMOVED, f"{kind} of line {items[first].start + 1}")
                continue
            seen[key] = i
            if items[i].parent is None:
                self.seen_anywhere.setdefault(key, i)

    def contained_entries(self, alive: list[int]) -> None:
        """2. an entry whose whole text is repeated inside a longer sibling entry adds nothing."""
        items, keys, raw, removed = self.doc.items, self.keys, self.raw, self.removed
        for i in alive:
            if i in removed or not _long_enough(keys[i], latin_min=12, cjk_min=6):
                continue
            for j in alive:
                if j == i or j in removed or len(keys[j]) <= len(keys[i]):
                    continue
                if keys[i] in keys[j] and numbers(raw[i]) <= numbers(raw[j]) and _may_contain(raw[i], raw[j]):
                    self.drop(i, j, MERGED, f"its whole text is contained in the longer entry at line {items[j].start + 1}")
                    break


def _may_contain(inner: str, outer: str) -> bool:
    """A substring is not a restatement when the longer entry is keyed differently ("端口: 8080" inside
    "管理端口: 8080") or negates it ("... does not use pgbouncer")."""
    return keys_agree(inner, outer) and negations(inner) == negations(outer)


def _long_enough(key: str, latin_min: int = 16, cjk_min: int = 8) -> bool:
    return len(key) >= (cjk_min if is_cjk_heavy(key) else latin_min)


def _near_duplicates(doc: MemoryDoc, embedder: TextEmbedder, threshold: float, keys: dict[int, str], raw: dict[int, str],
                     removed: dict[int, Change], flagged: list[Change],
                     drop: Callable[[int, int, ChangeAction, str, float | None], None]) -> None:
    candidates = [i for i in range(len(doc.items)) if doc.items[i].parent is None and keys[i]
                  and not doc.items[i].children and i not in removed]
    if len(candidates) < 2 or len(candidates) > MAX_PAIRWISE:
        return
    import numpy as np

    vectors = np.asarray(embedder.embed([raw[i] for i in candidates]), dtype=np.float32)
    flagged_items: set[int] = set()
    statement = {i: _long_enough(keys[i]) for i in candidates}  # once per entry, not once per pair
    sims = np.triu(vectors @ vectors.T, k=1)
    for a_pos, b_pos in np.argwhere(sims >= threshold):  # row-major: pairs come in document order
        a, b = candidates[a_pos], candidates[b_pos]
        if a in removed or b in removed:
            continue
        sim = float(sims[a_pos, b_pos])
        same_scope = doc.items[a].section == doc.items[b].section
        if not same_scope and not (statement[a] and statement[b]):
            continue
        keep, lose = (a, b) if len(keys[a]) >= len(keys[b]) else (b, a)
        forward = restates(raw[lose], raw[keep])
        if not forward and restates(raw[keep], raw[lose]):
            keep, lose, forward = lose, keep, True  # equally long, clauses reordered: the one restated goes
        if forward:
            drop(lose, keep, REMOVED, f"near-duplicate of line {doc.items[keep].start + 1} (embedding cosine "
                 f"{sim:.2f} ≥ {threshold:g}, and that entry states every clause of it word for word; the more detailed "
                 "entry stays)", round(sim, 4))
        elif b not in flagged_items and same_subject(raw[a], raw[b]) and values_differ(raw[a], raw[b]):
            flagged_items.add(b)  # one flag per entry: a list of templated lines must not flag every pair
            flagged.append(Change(FLAGGED, f"about the same thing as line {doc.items[a].start + 1} (cosine "
                                  f"{sim:.2f}) but the values differ; possibly contradictory, left for review",
                                  old=_describe(doc, b), line=doc.items[b].start + 1,
                                  section=_section_title(doc, b), similarity=round(sim, 4)))
