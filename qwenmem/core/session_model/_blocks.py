"""Normalising one content block of either generation (a helper of gen1/gen2; imports only model)."""

from __future__ import annotations

import json
from typing import Any

from qwenmem.core.session_model.model import (DATA, HINT, OTHER, TEXT, THINKING, TOOL_CALL, TOOL_RESULT, Block)

_MEDIA_GEN1 = ("image", "audio", "video", "file")


def flatten_output(output: Any) -> str:
    """A tool output as text: a string as-is, text blocks joined by newlines, media as a reference (like
    history.db's `content` column, spec §3.3)."""
    if isinstance(output, str):
        return output
    if not isinstance(output, list):
        return "" if output is None else str(output)
    parts = []
    for item in output:
        if isinstance(item, dict):
            if item.get("type") == "text":
                parts.append(str(item.get("text") or ""))
            else:
                parts.append(media_reference(item))
        elif isinstance(item, str):
            parts.append(item)
    return "\n".join(parts)


def media_reference(block: dict[str, Any]) -> str:
    raw_source = block.get("source")
    source: dict[str, Any] = raw_source if isinstance(raw_source, dict) else {}
    where = source.get("url") or block.get("url") or block.get("path") or ""
    if source.get("type") == "base64" or block.get("data"):
        where = where or "inline data"
    kind = source.get("media_type") or block.get("type") or "data"
    name = block.get("name") or ""
    return f"[{kind}: {name} — {where}]" if name else f"[{kind}: {where}]"


def _input_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def normalize_block(block: Any) -> Block:
    if isinstance(block, str):  # 1.x string content is one text block
        return Block(TEXT, block, raw=block)
    if not isinstance(block, dict):
        return Block(OTHER, "", original_type=type(block).__name__, raw=block)
    kind = block.get("type")
    if kind == TEXT:
        return Block(TEXT, str(block.get("text") or ""), raw=block)
    if kind == THINKING:
        return Block(THINKING, str(block.get("thinking") or ""), raw=block)
    if kind == HINT:
        hint = block.get("hint")
        return Block(HINT, hint if isinstance(hint, str) else flatten_output(hint), raw=block)
    if kind in (TOOL_CALL, "tool_use"):
        raw_input = block.get("input") if kind == TOOL_CALL else (block.get("raw_input") or block.get("input"))
        return Block(TOOL_CALL, "", tool_name=_str(block.get("name")), tool_call_id=_str(block.get("id")),
                     tool_input=_input_text(raw_input), tool_state=_str(block.get("state")),
                     original_type=kind, raw=block)
    if kind == TOOL_RESULT:
        return Block(TOOL_RESULT, flatten_output(block.get("output")), tool_name=_str(block.get("name")),
                     tool_call_id=_str(block.get("id")), tool_state=_str(block.get("state")), raw=block)
    if kind == DATA or kind in _MEDIA_GEN1:
        return Block(DATA, media_reference(block), original_type=kind, raw=block)
    return Block(OTHER, "", original_type=str(kind), raw=block)


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def normalize_content(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [Block(TEXT, content, raw=content)]
    if isinstance(content, list):
        return [normalize_block(b) for b in content]
    return []
