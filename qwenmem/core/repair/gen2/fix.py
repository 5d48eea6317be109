"""Make a QwenPaw 2.x `state.context` pass AgentScope 2.0 validation, keeping every block whose meaning survives.

Order of preference for a bad piece: fix it in place where the fix is forced by the format (a string content is one
text block, a dict tool input is its JSON text, a legacy 1.x block is converted as QwenPaw's own converter does);
move it where it belongs (a tool_result in a user message goes next to its tool_call); otherwise take it out to
the quarantine record (`Removal`), never silently. Nothing is ever invented beyond what validation forces.
"""

from __future__ import annotations

import json
import mimetypes
from dataclasses import dataclass, field
from typing import Any, Callable

from qwenmem.core.jsonsafe import copy_json
from qwenmem.core.repair.gen2.from_gen1 import ensure_url_scheme, file_as_text
from qwenmem.core.repair.fixes import Removal
from qwenmem.core.session_model import gen2
from qwenmem.core.repair.gen2.rules import (ALLOWED_BY_ROLE, BLOCK_TYPES, FINISHED_REASONS, ROLES, TOOL_CALL_STATES,
                                        TOOL_RESULT_STATES, _media_list_problems, _opt_str, _usage_ok, block_problems,
                                        effective_type, source_problems)

_ASSISTANT_ONLY = ("tool_call", "tool_result", "thinking", "hint")


@dataclass
class ContextFix:
    context: list[Any]
    removed: list[Removal] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    moved_blocks: int = 0
    removed_messages: int = 0  # whole messages out (broken), not emptied-by-moving
    emptied_messages: int = 0  # messages whose every block moved elsewhere
    fixed_fields: int = 0
    promoted: int = 0
    removed_ids: set[Any] = field(default_factory=set)

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.actions or self.moved_blocks or self.emptied_messages or self.fixed_fields
                    or self.promoted)


def _guess_media_type(block: dict[str, Any], source: dict[str, Any]) -> str | None:
    where = source.get("url") or block.get("name") or block.get("url") or block.get("path") or ""
    data = source.get("data")
    if isinstance(data, str) and data.startswith("data:") and ";" in data:
        return data[5:data.index(";")]
    guess = mimetypes.guess_type(str(where))[0] if where else None
    return guess


def _fix_source(block: dict[str, Any], fix: ContextFix, where: str) -> bool:
    """True when the data block's source is (now) valid."""
    source = block.get("source")
    if not isinstance(source, dict):
        return False
    problems = source_problems(source)
    if problems == ["data-media_type-missing"]:
        guess = _guess_media_type(block, source) or "application/octet-stream"
        source["media_type"] = guess
        fix.fixed_fields += 1
        fix.actions.append(f"{where}: data block without media_type: set to {guess} (guessed from its name/URL; "
                           "AgentScope 2.0 requires it)")
        return True
    return not problems


def _legacy_block(block: dict[str, Any]) -> dict[str, Any] | None:
    """1.x blocks as QwenPaw's msg_from_dict converts them (spec §2.6; repair/gen2/from_gen1.py), or None when the result
    would still not validate."""
    kind = block.get("type")
    converted: dict[str, Any] | None = None
    if kind == "tool_use" and isinstance(block.get("id"), str) and isinstance(block.get("name"), str):
        raw = block.get("input") or block.get("raw_input") or "{}"  # QwenPaw's order: input, then raw_input
        text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
        converted = {"type": "tool_call", "id": block["id"], "name": block["name"], "input": text}
    elif kind in ("image", "audio", "video"):
        src = block.get("source")
        if isinstance(src, dict) and (isinstance(src.get("url"), str) or isinstance(src.get("data"), str)):
            source: dict[str, Any] = dict(src)
            source.setdefault("type", "url" if "url" in src else "base64")
            if source["type"] == "url" and isinstance(source.get("url"), str):
                source["url"] = ensure_url_scheme(source["url"])  # a local path becomes a file:// URL
            source.setdefault("media_type", _guess_media_type(block, src) or f"{kind}/*")
            converted = {"type": "data", "source": source}
    elif kind == "file":
        converted = file_as_text(block)
    return converted if converted is not None and not block_problems(converted) else None


def _fix_common(block: dict[str, Any]) -> int:
    n = 0
    if "id" in block and not isinstance(block["id"], str):
        if isinstance(block["id"], (int, float)) and not isinstance(block["id"], bool):
            block["id"] = str(block["id"])
        else:
            del block["id"]
        n += 1
    if "created_at" in block and not isinstance(block["created_at"], str):
        del block["created_at"]
        n += 1
    if "finished_at" in block and not _opt_str(block["finished_at"]):
        block["finished_at"] = None
        n += 1
    return n


def _scalar_text(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _fix_media_list(value: Any, allow_str: bool) -> Any:
    """A tool output / hint / summary made valid, or None when nothing sensible is left."""
    if allow_str and isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        text = _scalar_text(value)
        return text
    kept = [item for item in value if not _media_list_problems([item], False)]
    return kept if len(kept) == len(value) else None


def _fix_text(block: dict[str, Any], fix: ContextFix, where: str) -> bool:
    kind = block["type"]
    if not isinstance(block.get(kind), str):
        text = _scalar_text(block.get(kind))
        if text is None:
            return False
        block[kind] = text
        fix.actions.append(f"{where}: {kind} {text!r} stored as a string")
    return True


def _fix_tool_call(block: dict[str, Any], fix: ContextFix, where: str) -> bool:
    if not isinstance(block.get("input"), str):
        try:
            block["input"] = json.dumps(block.get("input"), ensure_ascii=False)
        except (TypeError, ValueError):
            return False
        fix.actions.append(f"{where}: tool_call input stored as its JSON text (AgentScope 2.0 requires a string)")
    if "state" in block and block["state"] not in TOOL_CALL_STATES:
        fix.actions.append(f"{where}: unknown tool_call state {block.pop('state')!r} dropped (AgentScope's "
                           "default applies)")
    if "suggested_rules" in block and not isinstance(block["suggested_rules"], list):
        block["suggested_rules"] = []
    return True


def _fix_tool_result(block: dict[str, Any], fix: ContextFix, where: str) -> bool:
    output = _fix_media_list(block.get("output"), True)
    if output is None:
        return False
    block["output"] = output
    if "state" in block and block["state"] not in TOOL_RESULT_STATES:
        fix.actions.append(f"{where}: unknown tool_result state {block.pop('state')!r} dropped (AgentScope's "
                           "default applies)")
    if "metadata" in block and not isinstance(block["metadata"], dict):
        block["metadata"] = {}
    return True


def _fix_data(block: dict[str, Any], fix: ContextFix, where: str) -> bool:
    if not _fix_source(block, fix, where):
        return False
    if not _opt_str(block.get("name")):
        block["name"] = None
    return True


def _fix_hint(block: dict[str, Any], fix: ContextFix, where: str) -> bool:
    hint = _fix_media_list(block.get("hint"), True)
    if hint is None:
        return False
    block["hint"] = hint
    if not _opt_str(block.get("source")):
        block["source"] = None
    return True


# per block type: fix the block in place; False when it cannot be made valid
_KIND_FIXES: dict[str, Callable[[dict[str, Any], ContextFix, str], bool]] = {
    "text": _fix_text, "thinking": _fix_text, "tool_call": _fix_tool_call, "tool_result": _fix_tool_result,
    "data": _fix_data, "hint": _fix_hint}


def _converted_legacy(block: dict[str, Any], fix: ContextFix, where: str) -> Any:
    converted = _legacy_block(block)
    if converted is None:
        return None
    fix.fixed_fields += 1
    fix.actions.append(f"{where}: 1.x {block.get('type')} block converted to {converted['type']} "
                       "(as QwenPaw's 1.x converter does)")
    return converted


def fix_block(block: Any, fix: ContextFix, where: str) -> Any:
    """The block made valid, or None when it cannot be (the caller quarantines the original)."""
    if not isinstance(block, dict):
        return None
    if "type" not in block and effective_type(block) in BLOCK_TYPES:
        # AgentScope reads it as that type and writes the type on its next save: the same block, made explicit
        block = {"type": effective_type(block), **block}
    if block.get("type") not in BLOCK_TYPES:
        return _converted_legacy(block, fix, where)
    if not block_problems(block):
        return block
    common = _fix_common(block)
    if common:
        fix.fixed_fields += common
        fix.actions.append(f"{where}: {common} invalid id/created_at/finished_at field(s) reset")
    kind = block["type"]
    if not _KIND_FIXES[kind](block, fix, where):
        return None
    if kind in ("tool_call", "tool_result") and not all(isinstance(block.get(k), str) for k in ("id", "name")):
        return None
    fix.fixed_fields += 1
    return block if not block_problems(block) else None


def _fix_message_fields(msg: dict[str, Any], fix: ContextFix, where: str) -> bool:
    """False when the message cannot be a message at all."""
    content = msg.get("content")
    if isinstance(content, str):
        msg["content"] = [{"type": "text", "text": content}]
        fix.actions.append(f"{where}: string content turned into one text block (AgentScope 2.0 requires a list)")
    elif not isinstance(content, list):
        return False
    if msg.get("role") not in ROLES:
        role, why = _inferred_role(msg)
        if role is None:
            return False  # a user and an assistant message look alike: do not guess who spoke
        fix.actions.append(f"{where}: role {msg.get('role')!r} set to {role} ({why})")
        msg["role"] = role
    if not isinstance(msg.get("name"), str):
        msg["name"] = msg["role"]  # QwenPaw's converter: missing name -> the role
        fix.actions.append(f"{where}: missing name set to the role")
    if "id" in msg and not isinstance(msg["id"], str):
        _fix_message_id(msg, fix, where)
    for key, value in _field_resets(msg).items():
        fix.removed.append(Removal(-1, f"{where}: field {key} reset (invalid for AgentScope 2.0)", {key: msg[key]}))
        if value == "<dropped>":
            del msg[key]
        else:
            msg[key] = value
        fix.fixed_fields += 1
    return True


def _fix_message_id(msg: dict[str, Any], fix: ContextFix, where: str) -> None:
    if isinstance(msg["id"], (int, float)) and not isinstance(msg["id"], bool):
        msg["id"] = str(msg["id"])
        fix.actions.append(f"{where}: numeric id stored as a string")
    else:  # the content is worth more than the id: AgentScope gives it a fresh one on load
        fix.removed.append(Removal(-1, f"{where}: field id dropped (not a string; AgentScope gives the "
                                       "message a fresh id on load, so it no longer matches history rows)",
                                   {"id": msg.pop("id")}))
        fix.fixed_fields += 1


def _field_resets(msg: dict[str, Any]) -> dict[str, Any]:
    """{field: the value it is reset to} for the message's invalid optional fields ("<dropped>": deleted)."""
    resets: dict[str, Any] = {"metadata": {}} if "metadata" in msg and not isinstance(msg["metadata"], dict) else {}
    if "usage" in msg and not _usage_ok(msg["usage"]):
        resets["usage"] = None
    if "finished_at" in msg and not _opt_str(msg["finished_at"]):
        resets["finished_at"] = None
    if msg.get("finished_reason") is not None and msg["finished_reason"] not in FINISHED_REASONS:
        resets["finished_reason"] = None
    if msg.get("structured_output") is not None and not isinstance(msg["structured_output"], dict):
        resets["structured_output"] = None
    if msg.get("error") is not None and not isinstance(msg["error"], dict):
        resets["error"] = None
    if "created_at" in msg and not isinstance(msg["created_at"], str):
        resets["created_at"] = "<dropped>"
    return resets


def _inferred_role(msg: dict[str, Any]) -> tuple[str | None, str]:
    """The role a message's own evidence proves, or None: tool/thinking blocks only assistants hold; QwenPaw tags
    real user input `external_user_query` and names user messages `user`; only model replies carry usage."""
    kinds = {b.get("type") for b in msg["content"] if isinstance(b, dict) and isinstance(b.get("type"), str)}
    raw_metadata = msg.get("metadata")
    metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
    if kinds & set(_ASSISTANT_ONLY):
        return "assistant", "it holds tool/thinking blocks"
    if metadata.get("qwenpaw_tag") == "external_user_query":
        return "user", "QwenPaw tagged it as user input"
    if isinstance(msg.get("usage"), dict):
        return "assistant", "it carries model token usage"
    if msg.get("name") == "user":
        return "user", "its sender is named user"
    return None, ""


def _matching_call(context: list[Any], call_id: Any) -> tuple[dict[str, Any], int] | None:
    """The latest assistant message holding tool_call `call_id` and no result for it yet."""
    for msg in reversed(context):
        if msg.get("role") != "assistant":
            continue
        blocks = msg["content"]
        for j, b in enumerate(blocks):
            if isinstance(b, dict) and b.get("type") == "tool_call" and b.get("id") == call_id:
                if any(isinstance(o, dict) and o.get("type") == "tool_result" and o.get("id") == call_id
                       for o in blocks):
                    return None
                return msg, j
    return None


def fix_context(context: list[Any]) -> ContextFix:
    fix = ContextFix([])
    out = fix.context
    for i, original in enumerate(context):
        where = f"message {i}"
        msg = copy_json(original)  # the quarantine record keeps what was in the file
        if not isinstance(msg, dict) or not _fix_message_fields(msg, fix, where):
            fix.removed.append(Removal(i, f"{where}: not a message AgentScope 2.0 can load", original))
            fix.removed_messages += 1
            if isinstance(msg, dict) and isinstance(msg.get("id"), str):
                fix.removed_ids.add(msg["id"])
            continue
        blocks = []
        for j, block in enumerate(msg["content"]):
            fixed = fix_block(copy_json(block), fix, f"{where} block {j}")
            if fixed is None:
                fix.removed.append(Removal(i, f"{where} block {j}: removed from this message "
                                              f"({', '.join(block_problems(block))})", block))
            else:
                blocks.append(fixed)
        msg["content"] = blocks
        allowed = ALLOWED_BY_ROLE.get(msg["role"])
        if allowed is not None and any(b.get("type") not in allowed for b in blocks):
            placed = _place_misplaced(msg, blocks, allowed, out, fix, where, i)
            if placed is None:
                continue
            blocks = placed
        out.append(msg)
    return fix


def _place_misplaced(msg: dict[str, Any], blocks: list[Any], allowed: tuple[Any, ...], out: list[Any], fix: ContextFix, where: str,
                     index: int) -> list[Any] | None:
    """Move tool_results to their call; promote a message with nothing the role allows (QwenPaw's own rule for
    converted messages); quarantine the rest. None when every block moved (the message is dropped as empty)."""
    keep = []
    for block in blocks:
        if block.get("type") in allowed:
            keep.append(block)
            continue
        target = _matching_call(out, block.get("id")) if block.get("type") == "tool_result" else None
        if target is not None:
            tmsg, j = target
            tmsg["content"].insert(j + 1, block)
            fix.moved_blocks += 1
            fix.actions.append(f"{where}: tool_result {block.get('id')} moved next to its tool_call in the "
                               "assistant message before it")
            continue
        keep.append(block)
    if not keep:
        fix.emptied_messages += 1
        fix.removed.append(Removal(index, f"{where}: every block moved to the assistant message holding its "
                                          "tool_call; the emptied message removed", dict(msg, content=[])))
        if isinstance(msg.get("id"), str):
            fix.removed_ids.add(msg["id"])
        return None
    if not any(b.get("type") in allowed for b in keep):
        fix.actions.append(f"{where}: {msg['role']} message holding only {', '.join(sorted({b['type'] for b in keep}))} "
                           "blocks promoted to assistant (what QwenPaw's 1.x converter does)")
        msg["role"] = "assistant"
        fix.promoted += 1
        msg["content"] = keep
        return keep
    final = []
    for block in keep:
        if block.get("type") in allowed:
            final.append(block)
        else:
            fix.removed.append(Removal(index, f"{where}: {block.get('type')} block removed from this message (a "
                                              f"{msg['role']} message may hold only {'/'.join(allowed)})", block))
    msg["content"] = final
    return final


def prune_scroll(agent: dict[str, Any], context: list[Any], removed_ids: set[Any]) -> list[str]:
    """Keep scroll's maps to messages still in context (what QwenPaw does after an eviction, spec §2.2) and the
    placeholder's id in synthetic_ids (spec §10). Touches only ids this repair removed or placeholders it kept."""
    scroll = gen2.scroll_in(agent)
    if not isinstance(scroll, dict):
        return []
    live = {m.get("id") for m in context if isinstance(m, dict) and isinstance(m.get("id"), str)}
    gone = {i for i in removed_ids if isinstance(i, str) and i not in live}
    actions = []
    for key in ("persisted_ids", "synthetic_ids"):
        ids = scroll.get(key)
        if isinstance(ids, list) and any(isinstance(i, str) and i in gone for i in ids):
            scroll[key] = [i for i in ids if not (isinstance(i, str) and i in gone)]
            actions.append(f"scroll.{key}: dropped the ids of removed messages")
    for key in ("seq_by_id", "leaf_by_id"):
        mapping = scroll.get(key)
        if isinstance(mapping, dict) and any(i in gone for i in mapping):
            scroll[key] = {k: v for k, v in mapping.items() if k not in gone}
            actions.append(f"scroll.{key}: dropped the entries of removed messages")
    synthetic = scroll.get("synthetic_ids")
    if isinstance(synthetic, list):
        for m in context:
            meta = m.get("metadata") if isinstance(m, dict) else None
            if isinstance(meta, dict) and meta.get("qwenpaw_tag") == "scroll_memory" and isinstance(m.get("id"), str) \
                    and m["id"] not in synthetic:
                synthetic.append(m["id"])
                actions.append("scroll.synthetic_ids: added the id of the scroll placeholder")
    return actions
