"""Promoting the day's log into MEMORY.md without an LLM: new facts under a dated heading, newer facts replacing
the entries they contradict, and nothing that MEMORY.md already says.

Which log entries are facts: the top-level list items under a heading (level 2 or deeper) that names facts,
decisions, preferences, lessons or reflections, in English, Chinese or Spanish (`promote="facts"`, the default), or
every top-level list item (`promote="all"`). A whole daily log is mostly routine work notes, which QwenPaw's own
protocol says not to keep, so the default is the narrow one. In either mode, qwenmem's own compaction notes,
questions, greetings and lines of conversation are never promoted (facts.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from qwenmem.core.dream.changelog import ADDED, MERGED, REPLACED, Change
from qwenmem.core.dream.embedder import TextEmbedder
from qwenmem.core.dream.evidence import keys_agree, restates
from qwenmem.core.dream.facts import not_a_fact, qwenmem_note_lines
from qwenmem.core.dream.markdown import MemoryDoc, reindent_item
from qwenmem.core.dream.secrets import secrets_in
from qwenmem.core.reme_notes import cited_source, without_citations
from qwenmem.core.dream.normalize import (bigrams, containment, dice, is_cjk_heavy, normalize, numbers,
                                          same_subject)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

FACT_HEADINGS = re.compile(
    r"fact|decision|decided|preference|prefer|lesson|learn|reflection|insight|takeaway|remember|rule|todo|"
    r"事实|事實|决策|決策|决定|決定|偏好|经验|經驗|教训|教訓|反思|结论|結論|要点|要點|持久化记忆|长期记忆|规则|"
    r"hecho|decisi|preferencia|lecci|aprendizaje|reflexi|conclusi|regla|recordar",
    re.I)

PROMOTE_MODES = ("facts", "all", "none")


@dataclass
class Candidate:
    lines: list[str]  # the item re-indented to the top level, with "- " as its marker
    text: str
    key: str
    source_line: int  # 1-based line in the daily log
    heading: str | None
    rejected: str | None = None  # why it is not a fact to promote (a question, qwenmem's own note, …)


@dataclass
class PromotionPlan:
    replacements: dict[int, tuple[Candidate, Change]] = field(default_factory=dict)  # MEMORY item index → new
    additions: list[tuple[Candidate, Change]] = field(default_factory=list)
    skipped: list[tuple[Candidate, str]] = field(default_factory=list)


def log_candidates(log: MemoryDoc, mode: str = "facts") -> list[Candidate]:
    if mode == "none":
        return []
    out = []
    own_notes = qwenmem_note_lines(log)
    for i, item in enumerate(log.items):
        if item.parent is not None:
            continue
        if item.start in own_notes:
            continue  # qwenmem compact's note on a compacted conversation: not the user's facts
        path = [h for h in log.heading_path(item.section) if h.level >= 2]
        if mode == "facts" and not any(FACT_HEADINGS.search(h.title) for h in path):
            continue
        text = without_citations(log.item_text(i))  # a 2.x entry's "(from [[note]])" is where, not what
        key = normalize(text)
        if not key:
            continue
        lines = reindent_item(log.item_lines(i), "", "-", "\n")
        out.append(Candidate(lines, text, key, item.start + 1, path[-1].title if path else None, not_a_fact(text)))
    return out


def source_of(cand: Candidate, date: str) -> str:
    """Where a log entry came from: the note a 2.x entry cites (core/reme_promote.py), else the daily log's line."""
    return cited_source("".join(cand.lines)) or f"memory/{date}.md line {cand.source_line}"


def _min_len(key: str) -> int:
    return 6 if is_cjk_heavy(key) else 12


def plan_promotions(memory: MemoryDoc, removed: set[int], candidates: list[Candidate], date: str,
                    embedder: TextEmbedder | None = None, threshold: float = 0.9) -> PromotionPlan:
    plan = PromotionPlan()
    body_key = normalize("".join(memory.lines[memory.front_matter:]))
    targets = _Targets.of(memory, removed)
    sims = _similarities(embedder, candidates, [targets.text[i] for i in targets.indexes])
    seen: set[str] = set()
    for c_pos, cand in enumerate(candidates):
        why_not = _skip_reason(cand, candidates, seen, body_key)
        if why_not is not None:
            plan.skipped.append((cand, why_not))
            continue
        row = sims[c_pos] if sims is not None else None
        match = _best_match(cand, targets, plan.replacements, row, threshold)
        _record(plan, memory, cand, match, source_of(cand, date), date)
    return plan


@dataclass
class _Targets:
    """The MEMORY.md entries a log entry may match or replace: top-level entries without sub-items that dedupe
    keeps, with their text (blanks collapsed), normalized key and bigrams."""

    indexes: list[int]
    text: dict[int, str]
    key: dict[int, str]
    grams: dict[int, set[str]]

    @classmethod
    def of(cls, memory: MemoryDoc, removed: set[int]) -> _Targets:
        indexes = [i for i, item in enumerate(memory.items)
                   if item.parent is None and not item.children and i not in removed]
        text = {i: " ".join(memory.item_text(i).split()) for i in indexes}
        key = {i: normalize(text[i]) for i in indexes}
        return cls(indexes, text, key, {i: bigrams(key[i]) for i in indexes})


def _skip_reason(cand: Candidate, candidates: list[Candidate], seen: set[str], body_key: str) -> str | None:
    """Why a log entry is not promoted at all, or None. Adds its key to `seen` once it is not a repeat."""
    if cand.rejected:
        return cand.rejected
    if cand.key in seen:
        return "repeated in the daily log"
    longer = next((o for o in candidates if len(o.key) > len(cand.key) and cand.key in o.key
                   and numbers(cand.text) <= numbers(o.text)), None)
    if longer is not None:
        return f"contained in the longer log entry at line {longer.source_line}"
    seen.add(cand.key)
    if cand.key in body_key:
        return "already in MEMORY.md"
    if secrets_in(cand.text):
        return "contains a secret-looking value; never promoted to long-term memory"
    return None


PRESENT = "present"  # a match that MEMORY.md already states: the log entry is skipped
# (target item index, MERGED | REPLACED | PRESENT, its score)
Match = tuple[int, str, float]


def _best_match(cand: Candidate, targets: _Targets, taken: dict[int, tuple[Candidate, Change]],
                sims: NDArray[np.float32] | None, threshold: float) -> Match | None:
    """The MEMORY.md entry the log entry extends (the first one it contains), else the most similar one it
    replaces, else one it restates; `sims` is the candidate's cosine with each target, in target order."""
    best: Match | None = None
    cand_grams = bigrams(cand.key)
    for t_pos, t in enumerate(targets.indexes):
        if t in taken:
            continue
        old_key = targets.key[t]
        if not old_key:
            continue
        old_text = targets.text[t]
        old_nums, new_nums = numbers(old_text), numbers(cand.text)
        if len(old_key) >= _min_len(old_key) and old_key in cand.key and old_nums <= new_nums:
            return t, MERGED, 1.0
        lexical = dice(targets.grams[t], cand_grams)
        semantic = float(sims[t_pos]) if sims is not None else 0.0
        similar = (lexical >= 0.55 and containment(targets.grams[t], cand_grams) >= 0.7) or semantic >= threshold
        score = best[2] if best is not None else 0.0
        if similar and old_nums and old_nums != new_nums and max(lexical, semantic) > score \
                and same_subject(old_text, cand.text) and keys_agree(old_text, cand.text):
            best = t, REPLACED, max(lexical, semantic)
        elif semantic >= threshold and best is None and restates(cand.text, old_text):
            best = t, PRESENT, semantic
    return best


def _record(plan: PromotionPlan, memory: MemoryDoc, cand: Candidate, match: Match | None, log_ref: str,
            date: str) -> None:
    if match is None:
        plan.additions.append((cand, Change(ADDED, f"new fact from {log_ref}"
                                            + (f" ({cand.heading})" if cand.heading else ""),
                                            new="".join(cand.lines).rstrip("\n"), section=date)))
        return
    best, why, score = match
    if why == PRESENT:
        plan.skipped.append((cand, f"near-duplicate of MEMORY.md line {memory.items[best].start + 1} "
                                   f"(cosine {score:.2f})"))
    elif why == MERGED:
        change = Change(MERGED, f"the entry from {log_ref} repeats this one and adds to it; the longer one stays",
                        old="".join(memory.item_lines(best)).rstrip("\r\n"), new="".join(cand.lines).rstrip("\n"),
                        line=memory.items[best].start + 1, section=_section(memory, best))
        plan.replacements[best] = (cand, change)
    else:  # REPLACED
        change = Change(REPLACED, f"the newer fact from {log_ref} supersedes it (same subject, different values)",
                        old="".join(memory.item_lines(best)).rstrip("\r\n"), new="".join(cand.lines).rstrip("\n"),
                        line=memory.items[best].start + 1, section=_section(memory, best),
                        similarity=round(score, 4))
        plan.replacements[best] = (cand, change)


def _section(doc: MemoryDoc, item_index: int) -> str | None:
    s = doc.items[item_index].section
    return doc.headings[s].title if s is not None else None


def _similarities(embedder: TextEmbedder | None, candidates: list[Candidate],
                  targets: list[str]) -> NDArray[np.float32] | None:
    """Cosines, candidates by targets (the embedder's rows are L2-normalised)."""
    if embedder is None or not candidates or not targets:
        return None
    vectors = embedder.embed([c.text for c in candidates] + targets)
    return vectors[:len(candidates)] @ vectors[len(candidates):].T
