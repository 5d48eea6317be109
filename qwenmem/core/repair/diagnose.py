"""Classify one session file's bytes and work out the repaired document. Pure: no file system access."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from qwenmem.core import sessions as S
from qwenmem.core.repair import fixes
from qwenmem.core.repair.gen2 import diagnose as gen2
from qwenmem.core.repair.documents import WS, WS_NUL, Salvaged, pick_best, salvage_document, split_documents
from qwenmem.core.repair.encoding import decode_counting, replace_surrogates_noted
from qwenmem.core.repair.gen1.strict import strict_load_bytes_problems
from qwenmem.core.salvage_documents import SummaryState
from qwenmem.core.session_model import gen1
from qwenmem.core.session_model.model import Generation
from qwenmem.core.repair.classes import (  # noqa: F401  (re-exported: the names callers import from here)
    BOM, BROKEN_MESSAGES, CLASSES, CONCATENATED, DAMAGED, DUPLICATE_IDS, EMPTY, INCOMPLETE_STATE, INVALID_UTF8,
    LONE_SURROGATES, NOT_A_SESSION, OK, ORPHAN_TOOL_PAIRS, TRAILING_GARBAGE, TRUNCATED, Alternative, alternative)


@dataclass
class Diagnosis:
    classes: list[str] = field(default_factory=list)
    session: S.SessionDoc | None = None
    new_bytes: bytes | None = None  # what a repair writes; None when there is nothing to write
    unrecoverable: bool = False
    messages_found: int = 0
    messages_intact: int = 0
    messages_lost: int = 0
    messages_removed: int = 0
    messages_added: int = 0
    summary: SummaryState = "intact"
    replacements: dict[str, int] = field(default_factory=dict)
    actions: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # repairs that need a flag
    notes: list[str] = field(default_factory=list)
    removed: list[fixes.Removal] = field(default_factory=list)
    alternatives: list[Alternative] = field(default_factory=list)
    generation: Generation = "1.x"
    violations: list[str] = field(default_factory=list)  # 2.x: what AgentState validation rejects, per message
    check_bytes: Callable[[bytes], list[str]] | None = None  # 2.x: validation of the bytes to write
    messages_moved: int = 0  # 2.x: messages whose every block moved into the message it belongs to
    state_reset: bool = False
    removed_cut: Any = None
    write_mode: int | None = None  # the mode the written file gets (None: it keeps its own)

    @property
    def needs_repair(self) -> bool:
        return self.classes != [OK]

    def add(self, cls: str) -> None:
        if cls not in self.classes:
            self.classes.append(cls)


def diagnose(data: bytes, fix_tool_pairs: bool = False) -> Diagnosis:
    try:
        return _diagnose(data, fix_tool_pairs)
    except RecursionError:  # e.g. 100,000 nested arrays: json (and QwenPaw's loader) cannot parse it at all
        d = Diagnosis()
        d.add(NOT_A_SESSION)
        d.unrecoverable = True
        d.notes.append(S.TOO_DEEP + ": nothing in it can be recovered")
        return d


def _diagnose(data: bytes, fix_tool_pairs: bool = False) -> Diagnosis:
    d = Diagnosis()
    decoded = decode_counting(data)
    changed = _decoding_damage(d, decoded)
    text = decoded.text
    if not text.strip(WS_NUL):
        d.add(EMPTY)
        d.unrecoverable = True
        kind = "0 bytes" if not data else ("NUL-filled" if "\x00" in text else "whitespace only")
        d.notes.append(f"the file is empty ({kind}): nothing in it can be recovered")
        return d
    split = split_documents(text)
    if any(gen2.is_gen2_candidate(s) for s in split.docs):
        gen2_result: Diagnosis = gen2.diagnose_gen2(d, text, split, changed)
        return gen2_result
    candidates: list[Salvaged] = [salvage_document(span) for span in split.docs]
    sessions = [c for c in candidates if c.doc is not None]
    if not sessions:
        _nothing_recoverable(d, split, candidates)
        return d
    best = pick_best(sessions)
    changed = _document_damage(d, text, split, candidates, best) or changed
    d.summary = best.summary
    if best.summary in ("cut", "lost"):
        d.notes.append("the compressed summary was " + ("cut off" if best.summary == "cut" else "after the damage")
                       + " and is lost")
    session = best.session
    assert session is not None  # `sessions` holds the candidates with a document
    doc, replaced = _without_surrogates(d, session, best.layout)
    changed = replaced or changed
    changed = _rebuilt_state(d, best) or changed
    d.notes.extend(best.notes)
    d.messages_found = len(doc.content)
    changed = _message_fixes(d, doc, fix_tool_pairs) or changed
    d.messages_removed = _count_removed_messages(d.removed)
    d.session = doc
    d.messages_intact = len(doc.content) - d.messages_added
    if not d.classes:
        d.classes.append(OK)
    if changed:
        _encode(d, doc)
    return d


def _decoding_damage(d: Diagnosis, decoded: Any) -> bool:
    changed = False
    if decoded.bom:
        d.add(BOM)
        d.replacements["bom"] = 1
        d.actions.append("strip the UTF-8 BOM (QwenPaw loads a file with a BOM as an empty session)")
        changed = True
    if decoded.invalid_count:
        d.add(INVALID_UTF8)
        d.replacements["invalid_bytes"] = decoded.invalid_count
        d.actions.append(f"replace {decoded.invalid_count} invalid UTF-8 sequence(s) with U+FFFD "
                         f"(first at byte {decoded.invalid_offsets[0]})")
        changed = True
    return changed


def _nothing_recoverable(d: Diagnosis, split: Any, candidates: list[Salvaged]) -> None:
    d.unrecoverable = True
    if len(split.docs) > 1:
        d.add(CONCATENATED)
    if any(not c.complete for c in candidates) or not candidates:
        d.add(TRUNCATED if candidates else TRAILING_GARBAGE)
    else:
        d.add(NOT_A_SESSION)
    reasons = "; ".join(dict.fromkeys(c.reason for c in candidates)) or "no JSON document found"
    d.notes.append(f"nothing recoverable: {reasons}")


def _document_damage(d: Diagnosis, text: str, split: Any, candidates: list[Salvaged], best: Salvaged) -> bool:
    """Other documents, stray text, and damage inside the kept document; True if any."""
    changed = False
    if len(split.docs) > 1:
        d.add(CONCATENATED)
        d.actions.append(f"keep document {candidates.index(best) + 1} of {len(split.docs)} (the most complete and "
                         f"newest conversation, {len(best.ids)} messages); the others go to quarantine")
        changed = True
    if bool(split.garbage) or (bool(split.docs) and split.docs[-1].complete and split.nul_tail):
        d.add(TRAILING_GARBAGE)
        extra = sum(e - s for s, e in split.garbage) or len(text.rstrip(WS)) - split.docs[-1].end
        nul = " (NUL bytes)" if split.nul_tail else ""
        d.actions.append(f"drop {extra:,} character(s) of stray text{nul} outside the document (kept in quarantine)")
        changed = True
    for cand, span in zip(candidates, split.docs):
        if cand is not best:
            d.alternatives.append(_alternative("document", span.start, span.end, len(cand.ids), text))
    for s, e in split.garbage:
        d.alternatives.append(_alternative("garbage", s, e, 0, text))
    if not best.complete:
        d.add(DAMAGED if best.resynced_items or best.summary == "resynced" else TRUNCATED)
        where = f" at character {best.damage_at:,}" if best.damage_at is not None else ""
        d.actions.append(f"rebuild from the messages that survive the damage{where}"
                         + (f" ({best.resynced_items} recovered after it)" if best.resynced_items else ""))
        d.messages_lost = best.partial_items
        if best.partial_items:
            d.notes.append("1 message was cut by the damage and cannot be recovered")
        changed = True
    return changed


def _without_surrogates(d: Diagnosis, doc: S.SessionDoc, layout: str) -> tuple[S.SessionDoc, bool]:
    value, replaced = replace_surrogates_noted(d, doc.doc, "QwenPaw's next save would truncate this file to 0 bytes")
    return (S.SessionDoc(value, layout), True) if replaced else (doc, False)


def _rebuilt_state(d: Diagnosis, best: Salvaged) -> bool:
    """A session rebuilt around a bare value, or state keys supplied; True if either."""
    changed = False
    if best.rewrapped:
        d.add(NOT_A_SESSION)
        d.actions.append(f"rebuild a session around the {len(best.ids)} message(s) of {best.rewrapped}, "
                         "with QwenPaw's defaults for the rest (QwenPaw loads this file as an empty session)")
        changed = True
    elif best.filled_keys and best.complete:
        d.add(INCOMPLETE_STATE)
    if best.filled_keys:
        what = ", ".join(best.filled_keys)
        d.actions.append(f"supply missing state: {what}" if best.complete else
                         f"re-create the state that followed the damage with QwenPaw's defaults: {what}")
        changed = True
    return changed


def _message_fixes(d: Diagnosis, doc: S.SessionDoc, fix_tool_pairs: bool) -> bool:
    """Broken messages, repeated ids and tool pairs; True if anything changed."""
    changed = False
    removed, marks_reset = fixes.remove_broken(doc)
    if removed or marks_reset:
        d.add(BROKEN_MESSAGES)
        if removed:
            d.actions.append(f"move {len(removed)} broken message(s) out of the conversation into the quarantine record")
        if marks_reset:
            d.actions.append(f"reset {marks_reset} malformed marks list(s) to []")
        d.removed.extend(removed)
        changed = True
    exact, distinct = fixes.duplicate_ids(doc)
    if exact or distinct:
        d.add(DUPLICATE_IDS)
        if exact:
            d.removed.extend(fixes.remove_exact_duplicates(doc))
            d.actions.append(f"remove {len(exact)} exact repeat(s) of an earlier message (kept in quarantine)")
            changed = True
        if distinct:
            d.notes.append(f"{len(distinct)} message(s) reuse an earlier id with different content; left as they are")
    return _tool_pair_fixes(d, doc, fix_tool_pairs) or changed


def _tool_pair_fixes(d: Diagnosis, doc: S.SessionDoc, fix_tool_pairs: bool) -> bool:
    pairs = fixes.tool_pairs(doc)
    if not pairs.count:
        return False
    d.add(ORPHAN_TOOL_PAIRS)
    what = (f"{len(pairs.dangling_uses)} tool_use without a tool_result, "
            f"{len(pairs.orphan_results)} tool_result without a tool_use")
    if not fix_tool_pairs:
        d.pending.append(f"{what}: run with --fix-tool-pairs to close them")
        return False
    removed_pairs, _dropped_blocks, added = fixes.fix_tool_pairs(doc)
    d.removed.extend(removed_pairs)
    d.messages_added = added
    d.actions.append(f"fix tool pairs ({what}): drop orphan results, close dangling calls with a "
                     "\"result lost\" result")
    return True


def _encode(d: Diagnosis, doc: S.SessionDoc) -> None:
    d.new_bytes = gen1.encode(doc.doc)
    if doc.layout == "agent":
        problems = strict_load_bytes_problems(d.new_bytes)
        if problems:  # a bug of ours, never written
            d.new_bytes = None
            d.unrecoverable = True
            d.notes.append("internal check failed, nothing will be written: " + "; ".join(problems[:3]))


def _count_removed_messages(removed: list[fixes.Removal]) -> int:
    """Removals of whole messages (not of blocks inside a kept message)."""
    return sum(1 for r in removed if "removed from this message" not in r.reason)


_alternative = alternative
