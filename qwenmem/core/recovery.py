"""Reading damaged session files: an incremental, tolerant JSON parse that keeps every complete value.

`json.JSONDecoder.raw_decode` alone recovers nothing from a truncated file (the outer object never closes),
so the spine of the document (top object → agent → memory → content) is walked by hand, while every
complete sub-value is still decoded by the C decoder.
"""

from __future__ import annotations

import json
import re
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


def _default_agent_keys(agent: dict) -> None:
    """QwenPaw's load_state_dict is strict: a missing module key throws after partial loading."""
    agent.setdefault("toolkit", {"active_groups": []})
    agent.setdefault("name", "QwenPaw")
    agent.setdefault("_sys_prompt", "")


def salvage_text(text: str) -> Salvage:
    """Best effort: the largest valid session that the damaged text still contains."""
    start = _skip_ws(text, 0)
    parsed = tolerant_parse(text, start)
    obj = parsed.value
    notes: list[str] = []
    if parsed.complete and _skip_ws(text, parsed.end) < len(text):
        notes.append(f"extra data after the first JSON document at character {parsed.end}")
    if not isinstance(obj, dict):
        return Salvage(None, notes + ["nothing recoverable: the file does not start with a JSON object"])
    agent = obj.get("agent") if isinstance(obj.get("agent"), dict) else None
    holder = agent if agent is not None else obj
    memory = holder.get("memory")
    if not isinstance(memory, dict) or not isinstance(memory.get("content"), list):
        return Salvage(None, notes + ["nothing recoverable: no agent.memory.content list"])
    damaged = 0
    content = memory["content"]
    if not parsed.complete:
        partial_item = any(len(p) >= 1 and _is_content_item_path(p, agent is not None) for p in parsed.partial_paths)
        if partial_item and content and not _item_complete(content[-1]):
            content.pop()
            damaged = 1
        elif partial_item and parsed.partial_paths and _points_inside_item(parsed.partial_paths, agent is not None):
            content.pop() if content else None
            damaged = 1
        notes.append(f"truncated: kept {len(content)} complete message(s)" + (", dropped 1 cut-off message" if damaged else ""))
    memory.setdefault("_compressed_summary", "")
    if agent is not None:
        _default_agent_keys(agent)
    return Salvage(S.SessionDoc(obj, "agent" if agent is not None else "memory"), notes, len(content), damaged)


def _is_content_item_path(path: tuple, has_agent: bool) -> bool:
    prefix = ("agent", "memory", "content") if has_agent else ("memory", "content")
    return path[: len(prefix)] == prefix and len(path) > len(prefix)


def _points_inside_item(paths: list[tuple], has_agent: bool) -> bool:
    depth = 4 if has_agent else 3
    return any(_is_content_item_path(p, has_agent) and len(p) > depth for p in paths)


def _item_complete(item: Any) -> bool:
    if isinstance(item, list):
        return len(item) == 2 and isinstance(item[0], dict) and isinstance(item[1], list) and not S.message_problems(item[0])
    return isinstance(item, dict) and not S.message_problems(item)


_REQUIRED = ("name", "role", "content", "id")
_LONE_SURROGATE = re.compile(
    r"[\ud800-\udfff]"  # decoded with surrogatepass from raw ED A0..BF bytes
    r"|\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"  # escaped high surrogate without a low one
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"  # low without a high
)


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def has_lone_surrogates(text: str) -> bool:
    # The full pattern is slow on megabytes of text; two C-speed pre-checks settle almost every file.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    if _ESCAPED_SURROGATE.search(text) is None:
        return False
    return _LONE_SURROGATE.search(text) is not None


def content_warnings(session: S.SessionDoc, text: str | None = None) -> list[str]:
    """Problems in a structurally valid session that QwenPaw would trip over. One pass, no re-serialising
    (this runs for every file in `sessions list`)."""
    warnings: list[str] = []
    seen: dict[str, int] = {}
    uses: dict[str, int] = {}
    results: dict[str, int] = {}
    roles = S.ROLES
    for i, item in enumerate(session.content):
        if type(item) is list:
            if len(item) != 2:
                warnings.append(f"item {i}: a content item has {len(item)} elements, not [message, marks]")
                continue
            msg = item[0]
        else:
            msg = item
        if type(msg) is not dict:
            warnings.append(f"message {i}: message is a {type(msg).__name__}, not an object")
            continue
        if not all(k in msg for k in _REQUIRED) or msg["role"] not in roles or type(msg["id"]) is not str \
                or not isinstance(msg["content"], (str, list)):
            warnings.extend(f"message {i}: {p}" for p in S.message_problems(msg))
        mid = msg.get("id")
        if type(mid) is str:
            if mid in seen:
                warnings.append(f"message {i}: duplicate id {mid!r} (first at {seen[mid]})")
            else:
                seen[mid] = i
        content = msg.get("content")
        if type(content) is list:
            for block in content:
                if type(block) is dict:
                    kind = block.get("type")
                    if kind == "tool_use":
                        uses.setdefault(str(block.get("id")), i)
                    elif kind == "tool_result":
                        results.setdefault(str(block.get("id")), i)
    for tid, i in uses.items():
        if tid not in results:
            warnings.append(f"message {i}: tool_use {tid!r} has no tool_result")
    for tid, i in results.items():
        if tid not in uses:
            warnings.append(f"message {i}: tool_result {tid!r} answers no tool_use")
    if has_lone_surrogates(text if text is not None else json.dumps(session.doc, ensure_ascii=False)):
        warnings.append("lone surrogate characters (QwenPaw's next save would truncate this file to 0 bytes)")
    return warnings
