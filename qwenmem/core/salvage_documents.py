"""Finding the session(s) inside a damaged text: split concatenated documents, salvage each, resync past damage.

A truncated file keeps every complete message before the cut (the spine top → agent → memory → content is walked
by `session_model.tolerant_json.tolerant_parse`, which still lets the C decoder read each complete value). When the damage is in the
middle (a torn write, a block of NULs), parsing resumes at the next message item after it: inside JSON strings
quotes are escaped, so an unescaped `{"id":` can only be the start of a serialised message.

Layer: on the 1.x document (session_model/gen1_doc.py) and the tolerant parser; below loading (sessions.py via
recovery.py) and repair, which both use it. It imports neither.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from qwenmem.core.jsonsafe import SESSION_DECODER
from qwenmem.core.session_model import gen1_doc
from qwenmem.core.session_model.gen1_doc import SessionDoc, message_problems
from qwenmem.core.session_model.tolerant_json import Parsed, _Partial, tolerant_parse

_DECODER = SESSION_DECODER  # an oversized integer literal is damage, not a crash
WS = " \t\r\n"
WS_NUL = WS + "\x00"
_AGENT_INNER = re.compile(r'"agent"\s*:\s*\{\s*(?:"memory"\s*:\s*\{\s*"content"\s*:|"state"\s*:\s*\{)')  # 1.x | 2.x
_MEMORY_DOC = re.compile(r'\{\s*"memory"\s*:\s*\{\s*"content"\s*:')
_ITEM_START = re.compile(r'\{\s*"id"\s*:')
_SUMMARY_KEY = re.compile(r'\]\s*,\s*"_compressed_summary"\s*:\s*')
_AGENT_TAIL = re.compile(r'\}\s*(?=,\s*"(?:toolkit|plan_notebook|name|_sys_prompt)"\s*:)')


def skip(text: str, pos: int, chars: str = WS) -> int:
    n = len(text)
    while pos < n and text[pos] in chars:
        pos += 1
    return pos


@dataclass
class DocSpan:
    start: int
    end: int
    complete: bool
    value: Any  # the decoded document, or the Parsed of a damaged one
    offset: int = 0  # where `text` starts in the file's text
    text: str = ""  # this document's segment of the file (a damaged document may not run past the next one)
    nested: bool = False  # an agent state found without its {"agent": ...} wrapper


@dataclass
class Split:
    docs: list[DocSpan]
    garbage: list[tuple[int, int]]  # character spans that belong to no document
    nul_tail: bool = False  # NUL bytes before or after the document(s)


def _document_starts(text: str) -> list[tuple[int, bool, bool]]:
    """(position, opening brace missing, nested) of each session start.

    A session starts with `{"agent": {"memory": {"content":`; if its first brace was damaged the start is the
    `"agent"` key. A `{"memory": {"content":` that is the value of some key is a session whose `"agent"` key was
    damaged (only QwenPaw's unit tests write a bare `{"memory": ...}`, and then at the top)."""
    starts = []
    for m in _AGENT_INNER.finditer(text):
        p = m.start() - 1
        while p >= 0 and text[p] in WS:
            p -= 1
        starts.append((p, False, False) if p >= 0 and text[p] == "{" else (m.start(), True, False))
    if starts:
        return starts
    for m in _MEMORY_DOC.finditer(text):
        p = m.start() - 1
        while p >= 0 and text[p] in WS:
            p -= 1
        starts.append((m.start(), False, p >= 0 and text[p] == ":"))
    return starts


def split_documents(text: str) -> Split:
    """Every JSON document in `text`, in order; a damaged one ends where the next document starts.

    The start of a session (`{"agent": {"memory": {"content":`) cannot occur inside one (quotes in strings are
    escaped), so a document cut off by a second write is never parsed as running into the next.
    """
    docs: list[DocSpan] = []
    garbage: list[tuple[int, int]] = []
    n = len(text)
    first = skip(text, 0, WS_NUL)
    starts = [s for s in _document_starts(text) if s[0] > first]
    if not starts or starts[0][0] != first:
        starts.insert(0, (first, False, False))
    bounds = starts + [(n, False, False)]
    for (seg_start, synthetic, nested), (seg_end, _, _) in zip(bounds, bounds[1:]):
        segment = ("{" if synthetic else "") + text[seg_start:seg_end]
        offset = seg_start - 1 if synthetic else seg_start
        pos = skip(segment, 0, WS_NUL)
        while pos < len(segment):
            if segment[pos] not in "{[":
                garbage.append((offset + pos, seg_end))
                break
            try:
                value, end = _DECODER.raw_decode(segment, pos)
            except json.JSONDecodeError:
                parsed = tolerant_parse(segment, pos)
                docs.append(DocSpan(max(offset + pos, 0), seg_end, False, parsed, offset, segment, nested))
                break
            docs.append(DocSpan(max(offset + pos, 0), offset + end, True, value, offset, segment, nested))
            pos = skip(segment, end, WS_NUL)
    last_end = docs[-1].end if docs and docs[-1].complete else n
    stray_nul = "\x00" in text[:first] or "\x00" in text[last_end:]
    return Split(docs, garbage, stray_nul)


# what became of a salvaged 1.x file's compressed summary: lost means it lay after the damage
SummaryState = Literal["intact", "absent", "cut", "resynced", "lost"]


@dataclass
class Salvaged:
    """One document read as a session, as far as it goes."""

    doc: dict[str, Any] | None
    layout: str = ""
    complete: bool = True
    reason: str = ""  # why this is not a session (doc is None)
    partial_items: int = 0  # messages cut by the damage point (lost)
    resynced_items: int = 0  # messages recovered after the damage point
    damage_at: int | None = None
    summary: SummaryState = "intact"
    filled_keys: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rewrapped: str = ""  # where the messages of a value that was not a session were found
    start: int = 0
    end: int = 0

    @property
    def session(self) -> SessionDoc | None:
        return SessionDoc(self.doc, self.layout) if self.doc is not None else None

    @property
    def messages(self) -> list[Any]:
        session = self.session  # None exactly when doc is
        return session.messages() if session is not None else []

    @property
    def ids(self) -> list[str]:
        return [m["id"] for m in self.messages if isinstance(m, dict) and isinstance(m.get("id"), str)]

    @property
    def newest_timestamp(self) -> str:
        stamps = [m.get("timestamp") for m in self.messages if isinstance(m, dict)]
        return max((t for t in stamps if isinstance(t, str)), default="")


def _valid_item(value: Any, pairs: bool) -> bool:
    if pairs:
        return (isinstance(value, list) and len(value) == 2 and isinstance(value[1], list)
                and not message_problems(value[0]))
    return isinstance(value, dict) and not message_problems(value)


def resync_items(text: str, pos: int, known_ids: set[str], pairs: bool, stop: int = 0) -> tuple[list[Any], int]:
    """Complete message items found after `pos` (near the damage point). Returns (items, position after the last).

    Before `stop` (where the parse gave up) only whole [message, marks] items count: a bare message there is
    the one the damage cut, and its marks are gone."""
    items: list[Any] = []
    cursor = last_end = pos
    while True:
        m = _ITEM_START.search(text, cursor)
        if not m:
            break
        brace = m.start()
        before = brace - 1
        while before >= 0 and text[before] in WS:
            before -= 1
        found = None
        if before >= cursor and text[before] == "[":
            try:
                value, end = _DECODER.raw_decode(text, before)
                if _valid_item(value, True):
                    found = (value if pairs else value[0], end)
            except json.JSONDecodeError:
                pass
        if found is None and (brace >= stop or not pairs):
            try:
                value, end = _DECODER.raw_decode(text, brace)
                if _valid_item(value, False):
                    found = ([value, []] if pairs else value, end)
            except json.JSONDecodeError:
                pass
        if found is None:
            cursor = m.end()
            continue
        item, end = found
        msg = item[0] if pairs else item
        if msg["id"] not in known_ids:
            items.append(item)
            known_ids.add(msg["id"])
        cursor = last_end = end
    return items, last_end


def _members(text: str, pos: int) -> dict[str, Any]:
    """Members of an object from a `,` onwards, as far as they decode (used for the agent's tail after damage)."""
    out: dict[str, Any] = {}
    n = len(text)
    while True:
        pos = skip(text, pos)
        if pos >= n or text[pos] != ",":
            return out
        pos = skip(text, pos + 1)
        try:
            key, pos = _DECODER.raw_decode(text, pos)
            pos = skip(text, pos)
            if not isinstance(key, str) or pos >= n or text[pos] != ":":
                return out
            value, pos = _DECODER.raw_decode(text, skip(text, pos + 1))
        except json.JSONDecodeError:
            return out
        out[key] = value


def _points_at(paths: list[tuple[Any, ...]], prefix: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    return [p for p in paths if p[: len(prefix)] == prefix]


def assistant_name(messages: list[Any]) -> str:
    names: Counter[str] = Counter(m["name"] for m in messages
                                  if isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("name"), str))
    return names.most_common(1)[0][0] if names else "QwenPaw"


def _is_message_item(value: Any) -> bool:
    return _valid_item(value, True) or _valid_item(value, False)


def _message_list(value: Any) -> bool:
    """A list that can be a conversation: [msg, marks] pairs or message objects, at least one of them loadable."""
    return (isinstance(value, list) and bool(value) and all(isinstance(i, (list, dict)) for i in value)
            and any(_is_message_item(i) for i in value))


_SHAPE_SEARCH_NODES = 10_000  # how many JSON values the search for a misplaced conversation looks at, at most


def find_conversation(obj: Any) -> tuple[dict[str, Any], str] | None:
    """A session object rebuilt around the messages in a value that is not one (spec §3.2: QwenPaw loads every
    such value as an empty session and saves that over it), with a description of where they were.

    Shapes, nearest the top first: a session nested under some key, the `agent` object alone, the `memory` object
    alone, a list of `[msg, marks]` items or of messages, one message."""
    queue: list[tuple[Any, str]] = [(obj, "the top-level value")]
    seen = 0
    while queue and seen < _SHAPE_SEARCH_NODES:
        value, where = queue.pop(0)
        seen += 1
        if isinstance(value, dict):
            agent = gen1_doc.agent_value(value)
            if seen > 1 and gen1_doc.holds_conversation(agent):
                return gen1_doc.document_of_agent(agent), f"a session nested in {where}"
            if gen1_doc.holds_conversation(value):
                return gen1_doc.document_of_agent(value), f"an agent state without its \"agent\" wrapper ({where})"
            if _valid_item(value, False):
                return gen1_doc.document_of_content([[value, []]]), f"a single message ({where})"
            if isinstance(value.get("content"), list) and (_message_list(value["content"]) or not value["content"]) \
                    and ("_compressed_summary" in value or value["content"]):
                return gen1_doc.document_of_memory(value), f"a memory object without its session ({where})"
            queue.extend((v, f"{where}[{json.dumps(k, ensure_ascii=False)}]") for k, v in value.items())
        elif isinstance(value, list):
            if _message_list(value):
                kind = "[message, marks] items" if any(isinstance(i, list) for i in value) else "messages"
                return gen1_doc.document_of_content(value), f"a bare list of {len(value)} {kind} ({where})"
            queue.extend((v, f"{where}[{i}]") for i, v in enumerate(value))
    return None


def _rewrapped(obj: Any, span: DocSpan) -> Salvaged | None:
    """`salvage_document` of the session rebuilt around the messages in a value that is not a session."""
    found = find_conversation(obj)
    if found is None:
        return None
    doc, where = found
    content = gen1_doc.content_of(doc)
    cut = not span.complete and bool(content) and not _is_message_item(content[-1])
    if cut:  # the item the damage cut off
        content.pop()
    result = salvage_document(DocSpan(span.start, span.end, True, doc, span.offset, span.text))
    result.complete, result.rewrapped, result.partial_items = span.complete, where, int(cut)
    if not span.complete:
        result.damage_at = span.offset + span.value.end
    return result


class _Spine(NamedTuple):
    """Where the conversation sits in a document: `holder` is the object that holds `memory`."""

    layout: str  # "agent" | "memory" (the agent state without its {"agent": ...} wrapper)
    holder: dict[str, Any]
    prefix: tuple[str, ...]  # the path of `holder` in the document
    memory: dict[str, Any]


def _spine(obj: dict[str, Any], span: DocSpan, base: dict[str, Any]) -> _Spine | Salvaged:
    """The spine of a session object, or the Salvaged of one that has none (rebuilt around its messages if it
    holds a conversation elsewhere)."""
    prefix: tuple[str, ...]  # where memory sits in the document
    agent = gen1_doc.agent_value(obj)
    if isinstance(agent, dict):
        layout, holder, prefix = "agent", agent, gen1_doc.AGENT_PREFIX
    elif isinstance(gen1_doc.memory_value(obj), dict):
        layout, holder, prefix = "memory", obj, ()
    else:
        what = "cut off before agent.memory" if not span.complete else "a JSON object without agent.memory"
        return _rewrapped(obj, span) or Salvaged(None, reason=what, **base)
    memory = gen1_doc.memory_value(holder)
    if not isinstance(memory, dict) or not isinstance(memory.get("content"), list):
        what = "cut off before the conversation" if not span.complete else "agent.memory.content is missing or not a list"
        return Salvaged(None, reason=what, **base)
    return _Spine(layout, holder, prefix, memory)


def _resync_after_damage(text: str, parsed: Parsed, memory: dict[str, Any], pairs: bool, result: Salvaged) -> int:
    """The conversation was cut: add the messages found after the damage point (and the compressed summary, if it
    was lost); returns where the text after them starts."""
    content = memory["content"]
    known = {m["id"] for m in (i[0] if isinstance(i, list) and i else i for i in content)
             if isinstance(m, dict) and isinstance(m.get("id"), str)}
    # damage can swallow the start of the next message into a string, so the parse may stop past it:
    # resume from the last message start before the stop (already-kept ids are skipped)
    resume = text.rfind('{"id":', 0, parsed.end)
    resume = resume - 1 if resume > 0 and text[resume - 1] == "[" else parsed.end if resume < 0 else resume
    extra, tail_from = resync_items(text, resume, known, pairs, parsed.end)
    tail_from = max(tail_from, parsed.end)
    content.extend(extra)
    result.resynced_items = len(extra)
    if "_compressed_summary" not in memory:
        for m in list(_SUMMARY_KEY.finditer(text, tail_from))[-1:]:
            try:
                memory["_compressed_summary"] = _DECODER.raw_decode(text, m.end())[0]
                result.summary = "resynced"
                tail_from = m.end()
            except json.JSONDecodeError:
                pass
    return tail_from


def _salvage_damaged(text: str, span: DocSpan, parsed: Parsed, spine: _Spine, result: Salvaged) -> None:
    """A damaged document: drop the cut-off message, note where the damage is, and recover what follows it."""
    content = spine.memory["content"]
    pairs = not content or isinstance(content[0], list)  # before the cut item goes
    content_path = spine.prefix + gen1_doc.CONTENT_PATH
    inside = [p for p in _points_at(parsed.partial_paths, content_path) if len(p) > len(content_path)]
    if any(p[len(content_path)] == len(content) - 1 for p in inside) and content:
        content.pop()
        result.partial_items = 1
    result.damage_at = span.offset + parsed.end
    if _points_at(parsed.partial_paths, spine.prefix + gen1_doc.SUMMARY_PATH):
        result.summary = "cut"
    tail_from = parsed.end
    if _points_at(parsed.partial_paths, content_path):
        tail_from = _resync_after_damage(text, parsed, spine.memory, pairs, result)
    if spine.layout == "agent":
        for m in list(_AGENT_TAIL.finditer(text, tail_from))[-1:]:
            for key, value in _members(text, m.end()).items():
                if key not in spine.holder and key != gen1_doc.MEMORY_KEY:
                    spine.holder[key] = value


def _fill_summary(memory: dict[str, Any], span: DocSpan, result: Salvaged) -> None:
    if "_compressed_summary" not in memory:
        if result.summary == "intact":
            result.summary = "absent" if span.complete else "lost"
        memory["_compressed_summary"] = ""
        result.filled_keys.append("memory._compressed_summary")
    elif not isinstance(memory["_compressed_summary"], str):
        result.notes.append("the compressed summary is not a string")


def _fill_agent(obj: dict[str, Any], holder: dict[str, Any], result: Salvaged) -> None:
    """The agent keys QwenPaw's loader needs, with their defaults; a toolkit or plan notebook it rejects is reset."""
    defaults = {"toolkit": {"active_groups": []}, "name": assistant_name(SessionDoc(obj, "agent").messages()),
                "_sys_prompt": ""}
    for key, value in defaults.items():
        if key not in holder:
            holder[key] = value
            result.filled_keys.append(key)
    toolkit = holder.get("toolkit")
    if not (isinstance(toolkit, dict) and isinstance(toolkit.get("active_groups"), list)
            and set(toolkit) <= {"active_groups"}):
        result.notes.append(f"toolkit {json.dumps(toolkit)[:80]} replaced by an empty one")
        holder["toolkit"] = {"active_groups": []}
        result.filled_keys.append("toolkit")
    plan = holder.get("plan_notebook")
    if "plan_notebook" in holder and not (isinstance(plan, dict) and "storage" in plan and "current_plan" in plan):
        holder["plan_notebook"] = {"storage": {"plans": {}}, "current_plan": None}
        result.filled_keys.append("plan_notebook")


def salvage_document(span: DocSpan) -> Salvaged:
    text = span.text
    parsed: Parsed | None = None if span.complete else span.value
    obj = span.value if parsed is None else parsed.value
    base: dict[str, Any] = dict(complete=span.complete, start=span.start, end=span.end)
    if not isinstance(obj, dict):
        kind = "cut off before anything could be read" if isinstance(obj, _Partial) else f"a JSON {type(obj).__name__}"
        return _rewrapped(obj, span) or Salvaged(None, reason=f"{kind}, not a session object", **base)
    spine = _spine(obj, span, base)
    if isinstance(spine, Salvaged):
        return spine
    layout, holder = spine.layout, spine.holder
    result = Salvaged(obj, layout, **base)
    if parsed is not None:  # the document is damaged
        _salvage_damaged(text, span, parsed, spine, result)
    if layout == "memory":
        # an agent state that lost its {"agent": ...} wrapper (QwenPaw's unit tests write a bare {"memory": ...});
        # the runner finds no "agent" in it, starts an empty conversation and saves that over the file
        holder = obj
        obj = gen1_doc.document_of_agent(obj)
        layout = "agent"
        result.doc, result.layout = obj, layout
        result.filled_keys.append("agent")
        result.rewrapped = result.rewrapped or "an agent state without its \"agent\" wrapper"
    _fill_summary(spine.memory, span, result)
    if layout == "agent":
        _fill_agent(obj, holder, result)
    return result


def _dominates(a: Salvaged, b: Salvaged) -> bool:
    ia, ib = set(a.ids), set(b.ids)
    return ib < ia or (ia == ib and a.complete and not b.complete)


def pick_best(candidates: list[Salvaged]) -> Salvaged:
    """The document with the most complete and newest conversation.

    A document whose message ids include all of another's (and more) wins outright; otherwise the one whose newest
    message is newest, then a complete one over a cut one, then the one with more messages, then the later one.
    """
    best = candidates[0]
    for cand in candidates[1:]:
        if _dominates(cand, best):
            best = cand
        elif _dominates(best, cand):
            continue
        elif (cand.newest_timestamp, cand.complete, len(cand.ids)) >= (best.newest_timestamp, best.complete, len(best.ids)):
            best = cand
    return best
