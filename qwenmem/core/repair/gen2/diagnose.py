"""Diagnose and plan the repair of a QwenPaw 2.x session file (`{"agent": {"state": …, "scroll"?, "mode_state"}}`).

The byte-level damage (BOM, invalid UTF-8, truncation, trailing garbage, concatenated documents, lone surrogates)
is found as for 1.x (diagnose.py does the decoding and the split); this module salvages the 2.x document and makes
its state pass AgentScope 2.0's validation (rules.py, fix.py). Pure: no file system access.
"""

from __future__ import annotations

import json
import re
from typing import Any

from qwenmem.core.repair.gen2 import fix, rules
from qwenmem.core.repair.classes import (CONCATENATED, NOT_A_SESSION, OK, TRAILING_GARBAGE,
                                         DAMAGED, TRUNCATED, alternative)
from qwenmem.core.repair.documents import DocSpan, Split
from qwenmem.core.repair.encoding import replace_surrogates_noted
from qwenmem.core.repair.fixes import Removal
from qwenmem.core.session_model import gen1_doc, gen2

SCHEMA_INVALID = "schema_invalid"  # messages/fields AgentScope 2.0 rejects: QwenPaw refuses the whole session
MISPLACED_BLOCKS = "misplaced_blocks"  # blocks the role may not hold (spec §2.3)
GEN1_IN_GEN2 = "gen1_in_gen2_workspace"
CONTEXT_PATH = gen2.CONTEXT_PATH
_DECODER = json.JSONDecoder()


def span_value(span: DocSpan) -> Any:
    return span.value if span.complete else span.value.value


is_gen2_value = gen2.is_document


def is_gen2_span(span: DocSpan) -> bool:
    return is_gen2_value(span_value(span))


def _is_gen2_msg(value: Any) -> bool:
    """An AgentScope 2.0 Msg dict (1.x messages carry `timestamp`, not `created_at`)."""
    return (isinstance(value, dict) and value.get("role") in rules.ROLES and isinstance(value.get("content"), list)
            and "created_at" in value and "timestamp" not in value)


def _msg_list(value: Any) -> bool:
    """A list of mostly 2.x messages (damage may have broken some, or cut the last one short)."""
    if not isinstance(value, list) or not value:
        return False
    good = sum(1 for m in value if _is_gen2_msg(m))
    return good >= 1 and good * 2 >= len(value)


def _is_state(value: Any) -> bool:
    return isinstance(value, dict) and _msg_list(gen2.context_in(value)) and not gen1_doc.has_memory_key(value)


def rewrap(value: Any) -> tuple[dict[str, Any], str, tuple[Any, ...]] | None:
    """A JSON value that is not a 2.x session but holds one's conversation: (the session, what it was, the path of
    its message list inside the value).
    QwenPaw loads such a file as an empty session and its next save replaces it (spec §2.6, §8.1)."""
    agent = gen2.agent_value(value)
    if agent is not None and not gen2.is_document(value):
        key = next((k for k, v in agent.items() if _is_state(v)), None)
        if key is not None and not gen1_doc.has_memory_key(agent):  # the "state" key itself was damaged
            return (gen2.with_agent(value, gen2.renamed_to_state(agent, key)),
                    f"an agent whose \"state\" key was damaged ({key!r})", gen2.context_path(key))
    if isinstance(value, dict) and not gen2.has_agent_key(value):
        state = gen2.state_in(value)
        if isinstance(state, dict) and _is_state(state):
            return (gen2.document_of_agent(dict(value)), "an agent dict without its \"agent\" wrapper",
                    gen2.CONTEXT_PATH[1:])
        if _is_state(value):
            return gen2.new_document(value), "a bare AgentState", gen2.CONTEXT_PATH[2:]
    if _msg_list(value):
        return gen2.new_document(gen2.state_with_context(value)), "a bare list of 2.x messages", ()
    return None


def is_gen2_candidate(span: DocSpan) -> bool:
    return is_gen2_span(span) or rewrap(span_value(span)) is not None


def _context_len(value: Any) -> int:
    ctx = gen2.context_of(value)
    return len(ctx) if isinstance(ctx, list) else 0


def _newest(value: Any) -> str:
    ctx = gen2.context_of(value)
    stamps: list[str] = [m["created_at"] for m in ctx or []
                         if isinstance(m, dict) and isinstance(m.get("created_at"), str)]
    return max(stamps, default="")


def pick_best(spans: list[DocSpan]) -> DocSpan:
    """The newest, then complete, then longest conversation (the later one on a tie)."""
    return max(reversed(spans), key=lambda s: (_newest(span_value(s)), s.complete, _context_len(span_value(s))))


def validation_problems(data: bytes) -> list[str]:
    """Why QwenPaw 2.x would refuse (or empty) these bytes; [] when AgentState validation passes."""
    import json

    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return [f"not strict UTF-8 JSON: {exc}"]
    if not is_gen2_value(doc):
        return ["not a 2.x session document"]
    return [str(v) for v in rules.state_violations(gen2.state_of(doc))]


# A serialised Msg starts with its name then its content (spec §2.3 key order); quotes inside strings are escaped,
# so an unescaped match can only be the start of a message (blocks start with "type").
_MSG_START = re.compile(r'\{\s*"name"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*"content"\s*:')
_TAIL_KEYS = re.compile(r'"(' + "|".join(gen2.AGENT_TAIL_KEYS) + r')"\s*:\s*')


def _resync_messages(text: str, stop: int, known: set[Any]) -> list[Any]:
    """Complete messages after a damaged stretch of the context. Damage can swallow the start of the next message
    into a string, so the scan starts at the last message start before the point where the parse stopped."""
    starts = [m.start() for m in _MSG_START.finditer(text, 0, stop)]
    pos = starts[-1] if starts else stop
    out: list[dict[str, Any]] = []
    while True:
        m = _MSG_START.search(text, pos)
        if not m:
            return out
        try:
            value, end = _DECODER.raw_decode(text, m.start())
        except ValueError:
            pos = m.end()
            continue
        mid = value.get("id") if isinstance(value, dict) else None
        if _is_gen2_msg(value) and not (isinstance(mid, str) and mid in known):
            out.append(value)
            if isinstance(mid, str):
                known.add(mid)
        pos = end


def _resync_tail(text: str, doc: dict[str, Any]) -> None:
    """`scroll` / `mode_state` of the agent, when they survive after the damage (the last occurrence wins)."""
    found = {}
    for m in _TAIL_KEYS.finditer(text):
        try:
            value, _ = _DECODER.raw_decode(text, m.end())
        except ValueError:
            continue
        if isinstance(value, dict):
            found[m.group(1)] = value
    for key, value in found.items():
        gen2.agent_dict(doc).setdefault(key, value)


def _salvage_truncated(d: Any, span: DocSpan, doc: dict[str, Any]) -> None:
    parsed = span.value
    ctx = gen2.context_of(doc)
    cut_inside = [p for p in parsed.partial_paths if p[:3] == CONTEXT_PATH and len(p) > 3]
    if isinstance(ctx, list) and ctx and any(p[3] == len(ctx) - 1 for p in cut_inside):
        d.removed_cut = ctx.pop()
        d.messages_lost = 1
        d.notes.append("1 message was cut by the damage and cannot be recovered")
    where = f" at character {span.offset + parsed.end:,}"
    extra = []
    if isinstance(ctx, list) and any(p[:3] == CONTEXT_PATH for p in parsed.partial_paths):
        extra = _resync_messages(span.text, parsed.end, {m.get("id") for m in ctx if isinstance(m, dict)
                                                         and isinstance(m.get("id"), str)})
        ctx.extend(extra)
    if extra:
        d.add(DAMAGED)
        d.actions.append(f"rebuild from the messages that survive the damage{where} ({len(extra)} recovered after it)")
        _resync_tail(span.text, doc)
    else:
        d.add(TRUNCATED)
        d.actions.append(f"rebuild from the messages that survive the damage{where}")
    missing = gen2.missing_tail_keys(doc)
    gen2.ensure_mode_state(doc)
    lost = [p for p in parsed.partial_paths if p[:3] != CONTEXT_PATH]
    if lost or missing:
        what = sorted({".".join(map(str, p[:3])) for p in lost} | {f"agent.{k}" for k in missing})
        d.notes.append("cut off with the damage (AgentScope/QwenPaw defaults apply on load): " + ", ".join(what))
    if gen2.SCROLL_KEY in missing:
        d.notes.append("no scroll state survived: if this session used the scroll strategy, QwenPaw starts its "
                       "bookkeeping afresh (history.db still holds the rows)")


def _pick_document(d: Any, split: Split) -> tuple[DocSpan, Any, str]:
    """The span to keep, its (possibly rewrapped) document, and what it was when it is not a session ("")."""
    spans = [s for s in split.docs if is_gen2_span(s)]
    if spans:
        best = pick_best(spans)
        return best, span_value(best), ""
    # a value that holds a 2.x conversation without being a session
    best = next(s for s in split.docs if is_gen2_candidate(s))
    doc, rewrapped, prefix = rewrap(span_value(best))  # type: ignore[misc]
    ctx = gen2.context_of(doc)
    n = len(prefix)
    cut_last = not best.complete and isinstance(ctx, list) and bool(ctx) and any(
        tuple(p[:n]) == prefix and len(p) > n and p[n] == len(ctx) - 1 for p in best.value.partial_paths)
    if cut_last:
        d.removed_cut = ctx.pop()
        d.messages_lost = 1
        d.notes.append("1 message was cut by the damage and cannot be recovered")
    if not best.complete:
        d.add(TRUNCATED)
        d.actions.append("rebuild from the messages that survive the damage")
    return best, doc, rewrapped


def _other_documents(d: Any, text: str, split: Split, best: DocSpan, doc: Any) -> None:
    d.add(CONCATENATED)
    d.actions.append(f"keep document {split.docs.index(best) + 1} of {len(split.docs)} (the newest and most "
                     f"complete conversation, {_context_len(doc)} messages); the others go to quarantine")
    for span in split.docs:
        if span is not best:
            n = _context_len(span_value(span)) if is_gen2_span(span) else 0  # noqa: SIM108
            d.alternatives.append(alternative("document", span.start, span.end, n, text))


def _trailing_garbage(d: Any, text: str, split: Split) -> None:
    d.add(TRAILING_GARBAGE)
    extra = sum(e - s for s, e in split.garbage)
    d.actions.append(f"drop {extra:,} character(s) of stray text outside the document (kept in quarantine); "
                     "QwenPaw's loader skips it, but its history import marks the file errored forever")
    for s, e in split.garbage:
        d.alternatives.append(alternative("garbage", s, e, 0, text))


def _byte_damage(d: Any, text: str, split: Split, best: DocSpan, doc: Any, rewrapped: str) -> bool:
    """Classes and actions for what happened to the bytes around and inside the document; True if any."""
    changed = False
    if rewrapped:
        d.add(NOT_A_SESSION)
        d.actions.append(f"rebuild a session around the {_context_len(doc)} message(s) of {rewrapped}, with "
                         "AgentScope's defaults for the rest (QwenPaw loads this file as an empty session)")
        changed = True
    if len(split.docs) > 1:
        _other_documents(d, text, split, best, doc)
        changed = True
    if bool(split.garbage) or (best.complete and split.nul_tail):
        _trailing_garbage(d, text, split)
        changed = True
    if not best.complete and not rewrapped:
        _salvage_truncated(d, best, doc)
        changed = True
    elif not best.complete:
        gen2.ensure_mode_state(doc)
        changed = True
    return changed


def _without_surrogates(d: Any, doc: Any) -> tuple[Any, bool]:
    return replace_surrogates_noted(d, doc, "QwenPaw 2.x cannot save this session: its atomic write fails on them")


def _report_violations(d: Any, before: list[rules.Violation]) -> None:
    d.add(SCHEMA_INVALID)
    if any(v.rule.split("-holds-")[0] in ("user", "system") and "-holds-" in v.rule for v in before):
        d.add(MISPLACED_BLOCKS)
    for v in before[:20]:
        d.violations.append(str(v))
    if len(before) > 20:
        d.violations.append(f"... and {len(before) - 20} more")
    d.notes.append(f"QwenPaw 2.x refuses this session ({len(before)} validation error(s)); every request on "
                   "it fails and nothing is saved")


def _apply_context_fix(d: Any, state: dict[str, Any], result: fix.ContextFix) -> None:
    gen2.set_context_in(state, result.context)
    d.removed.extend(result.removed)
    d.actions.extend(result.actions[:30])
    if len(result.actions) > 30:
        d.actions.append(f"... and {len(result.actions) - 30} more fixes of the same kinds")
    if result.removed_messages:
        d.actions.append(f"move {result.removed_messages} message(s) AgentScope 2.0 cannot load into the "
                         "quarantine record")
    blocks_out = sum(1 for r in result.removed if "removed from this message" in r.reason)
    if blocks_out:
        d.actions.append(f"move {blocks_out} invalid or misplaced block(s) into the quarantine record")


def _gone_ids(d: Any, result: fix.ContextFix, agent: dict[str, Any], state: dict[str, Any]) -> set[Any]:
    """Ids of messages no longer in the context, for the scroll bookkeeping."""
    gone = set(result.removed_ids)
    if isinstance(d.removed_cut, dict) and isinstance(d.removed_cut.get("id"), str):
        gone.add(d.removed_cut["id"])
    scroll = gen2.scroll_in(agent)
    if d.messages_lost and isinstance(scroll, dict):
        # the cut message may have lost its id too: keep scroll's maps to the live context, the invariant QwenPaw
        # itself restores after every eviction (spec §2.2)
        live = {m.get("id") for m in gen2.context_in(state, []) if isinstance(m, dict) and isinstance(m.get("id"), str)}
        for key in ("persisted_ids", "seq_by_id", "leaf_by_id"):
            value = scroll.get(key)
            if isinstance(value, (list, dict)):
                gone |= {i for i in value if isinstance(i, str) and i not in live}
    return gone


def _encode(d: Any, doc: Any) -> None:
    d.new_bytes = gen2.encode(doc)
    problems = validation_problems(d.new_bytes)
    if problems:  # a rule we could not fix: never write a file QwenPaw would still refuse
        d.new_bytes = None
        d.unrecoverable = True
        d.notes.append("the repair could not make the file valid, nothing will be written: " + "; ".join(problems[:3]))


def diagnose_gen2(d: Any, text: str, split: Split, changed: bool) -> Any:
    """Fill the Diagnosis `d` (decoding classes already set) for a text holding a 2.x document."""
    best, doc, rewrapped = _pick_document(d, split)
    d.generation = "2.x"
    changed = _byte_damage(d, text, split, best, doc, rewrapped) or changed
    doc, replaced = _without_surrogates(d, doc)
    changed = replaced or changed
    agent = gen2.agent_dict(doc)
    state = gen2.state_in(agent)
    if not isinstance(state, dict):
        d.add(SCHEMA_INVALID)
        d.unrecoverable = True
        d.notes.append("agent.state is not an object: nothing in it can be recovered")
        return d
    before = rules.state_violations(state)
    context = gen2.context_in(state, [])
    if not isinstance(context, list):
        d.removed.append(_removal(-1, "state.context is not a list", context))
        context = []
        gen2.set_context_in(state, context)
        changed = True
    d.messages_found = len(context) + d.messages_lost
    if before:
        _report_violations(d, before)
    result = fix.fix_context(context)
    if result.changed:
        _apply_context_fix(d, state, result)
        changed = True
    gone = _gone_ids(d, result, agent, state)
    if gone:
        d.actions.extend(fix.prune_scroll(agent, gen2.context_in(state, []), gone))
    _fix_state_fields(state, d)
    changed = d.state_reset or changed
    d.messages_removed = result.removed_messages
    d.messages_moved = result.emptied_messages
    d.messages_intact = len(gen2.context_in(state, context))
    if not d.classes:
        d.classes.append(OK)
    d.check_bytes = validation_problems
    if changed:
        _encode(d, doc)
    return d


def _removal(index: int, reason: str, item: Any) -> Removal:
    return Removal(index, reason, item)


_STATE_DEFAULTS: dict[str, dict[str, Any]] = {"reply_context": {}, "permission_context": {}, "tool_context": {}, "tasks_context": {},
                   "middle_context": {}}


def _fix_state_fields(state: dict[str, Any], d: Any) -> None:
    """State-level fields that fail validation are reset to AgentScope's default; the old value is quarantined."""
    done = set()
    for v in rules.state_violations({k: v for k, v in state.items() if k != "context"}):
        key = {"session_id-not-string": "session_id", "summary-invalid": "summary"}.get(v.rule)
        key = key or next((k for k in _STATE_DEFAULTS if v.rule.startswith(k)), None)
        key = key or {"reply_id-not-string": "reply_context", "cur_iter-not-int": "reply_context",
                      "tasks-not-list": "tasks_context", "read_file_cache-not-list": "tool_context",
                      "activated_groups-not-list": "tool_context"}.get(v.rule)
        if key is None or key not in state or key in done:
            continue
        done.add(key)
        d.removed.append(_removal(-1, f"state.{key} reset to AgentScope's default ({v.detail})", {key: state[key]}))
        if key == "session_id":
            if isinstance(state[key], (int, float)) and not isinstance(state[key], bool):
                state[key] = str(state[key])
            else:
                del state[key]  # AgentScope generates one; QwenPaw keys the chat by the file name and chats.json
        elif key == "summary":
            state[key] = ""
        else:
            state[key] = dict(_STATE_DEFAULTS.get(key, {}))
        d.actions.append(f"state.{key}: {v.detail}; reset (the old value is in the quarantine record)")
        d.state_reset = True
