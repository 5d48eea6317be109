"""Reading damaged session files: an incremental, tolerant JSON parse that keeps every complete value.

`json.JSONDecoder.raw_decode` alone recovers nothing from a truncated file (the outer object never closes),
so the spine of the document (top object → agent → memory → content) is walked by hand, while every
complete sub-value is still decoded by the C decoder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from qwenmem.core import sessions as S

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


class _Partial:
    """Marks a container that was cut off before its closing bracket."""


@dataclass
class Parsed:
    value: Any
    end: int
    complete: bool
    partial_paths: list[tuple] = field(default_factory=list)


def _skip_ws(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in _WS:
        pos += 1
    return pos


def tolerant_parse(text: str, pos: int = 0, path: tuple = ()) -> Parsed:
    """Parse one JSON value from `pos`. Complete values come back as-is; a truncated container comes back with
    all its complete members and `complete=False`. A truncated scalar comes back as `_Partial`."""
    pos = _skip_ws(text, pos)
    try:
        value, end = _DECODER.raw_decode(text, pos)
        return Parsed(value, end, True)
    except json.JSONDecodeError:
        pass
    if pos >= len(text):
        return Parsed(_Partial(), pos, False, [path])
    opener = text[pos]
    if opener == "{":
        return _parse_object(text, pos + 1, path)
    if opener == "[":
        return _parse_array(text, pos + 1, path)
    return Parsed(_Partial(), pos, False, [path])


def _parse_array(text: str, pos: int, path: tuple) -> Parsed:
    out: list = []
    while True:
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == "]":
            return Parsed(out, pos + 1, True)
        if pos < len(text) and text[pos] == "," and out:
            pos += 1
        item = tolerant_parse(text, pos, path + (len(out),))
        if not item.complete:
            if not isinstance(item.value, _Partial):
                out.append(item.value)
            return Parsed(out, item.end, False, item.partial_paths or [path + (len(out),)])
        out.append(item.value)
        pos = item.end


def _parse_object(text: str, pos: int, path: tuple) -> Parsed:
    out: dict = {}
    while True:
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == "}":
            return Parsed(out, pos + 1, True)
        if pos < len(text) and text[pos] == "," and out:
            pos = _skip_ws(text, pos + 1)
        try:
            key, pos = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError:
            return Parsed(out, pos, False, [path])
        if not isinstance(key, str):
            return Parsed(out, pos, False, [path])
        pos = _skip_ws(text, pos)
        if pos >= len(text) or text[pos] != ":":
            return Parsed(out, pos, False, [path + (key,)])
        item = tolerant_parse(text, pos + 1, path + (key,))
        if not item.complete:
            if not isinstance(item.value, _Partial):
                out[key] = item.value
            return Parsed(out, item.end, False, item.partial_paths or [path + (key,)])
        out[key] = item.value
        pos = item.end


@dataclass
class Salvage:
    session: S.SessionDoc | None
    notes: list[str]
    messages_recovered: int = 0
    damaged_items: int = 0


def salvage_text(text: str) -> Salvage:
    """Best effort: the session a repair would keep (the most complete and newest document, every complete message
    before and after the damage point). Read-only; `qwenmem sessions repair` is what writes it."""
    from qwenmem.core.repair.documents import pick_best, salvage_document, split_documents

    split = split_documents(text)
    notes: list[str] = []
    if len(split.docs) > 1:
        notes.append(f"{len(split.docs)} JSON documents in one file")
    if split.garbage:
        notes.append(f"extra data outside the JSON document at character {split.garbage[0][0]}")
    candidates = [salvage_document(span) for span in split.docs]
    sessions = [c for c in candidates if c.doc is not None]
    if not sessions:
        reasons = "; ".join(dict.fromkeys(c.reason for c in candidates)) or "no JSON document found"
        return Salvage(None, notes + [f"nothing recoverable: {reasons}"])
    best = pick_best(sessions)
    kept = len(best.session.content)
    if not best.complete:
        notes.append(f"damaged: kept {kept} complete message(s)"
                     + (", dropped 1 cut-off message" if best.partial_items else "")
                     + (f", {best.resynced_items} found after the damage" if best.resynced_items else ""))
    return Salvage(best.session, notes, kept, best.partial_items)


def content_warnings(session: S.SessionDoc) -> list[str]:
    """Problems in a structurally valid session that QwenPaw would trip over."""
    warnings: list[str] = []
    seen: dict[str, int] = {}
    uses: dict[str, int] = {}
    results: dict[str, int] = {}
    for i, item in enumerate(session.content):
        if isinstance(item, list) and len(item) != 2:
            warnings.append(f"item {i}: a content item has {len(item)} elements, not [message, marks]")
            continue
        msg = item[0] if isinstance(item, list) else item
        for problem in S.message_problems(msg):
            warnings.append(f"message {i}: {problem}")
        if isinstance(msg, dict) and isinstance(msg.get("id"), str):
            if msg["id"] in seen:
                warnings.append(f"message {i}: duplicate id {msg['id']!r} (first at {seen[msg['id']]})")
            seen.setdefault(msg["id"], i)
        for tid in S.tool_use_ids(msg):
            uses.setdefault(tid, i)
        for tid in S.tool_result_ids(msg):
            results.setdefault(tid, i)
    for tid, i in uses.items():
        if tid not in results:
            warnings.append(f"message {i}: tool_use {tid!r} has no tool_result")
    for tid, i in results.items():
        if tid not in uses:
            warnings.append(f"message {i}: tool_result {tid!r} answers no tool_use")
    if _has_surrogates(session.doc):
        warnings.append("lone surrogate characters (QwenPaw's next save would truncate this file to 0 bytes)")
    return warnings


def _has_surrogates(obj: Any) -> bool:
    text = json.dumps(obj, ensure_ascii=False)
    try:
        text.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def replace_surrogates(obj: Any):
    """Lone surrogates → U+FFFD, split pairs joined (see repair.encoding); returns a SurrogateFix."""
    from qwenmem.core.repair.encoding import replace_surrogates as _replace

    return _replace(obj)
