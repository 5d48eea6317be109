"""How messages are rendered for a summarizer (QwenPaw's AsMsgStat.format, spec qwenpaw-workspace.md §4.5).

Each message becomes `[timestamp] name:` followed by one line per block; every block text has its newlines turned
into spaces and is cut to 1000 characters plus "...". Tool results show only the part before <<<TRUNCATED>>>.
Unlike QwenPaw, which silently drops the older messages that do not fit the summarizer's budget, `chunk_messages`
splits the rendered history into budget-sized chunks so every removed message is summarized.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from qwenmem.core.compaction.gen1.prune import MARKER
from qwenmem.core.tokens import TokenCounter

BLOCK_CHARS = 1000
_MEDIA = ("image", "audio", "video")


def _clip(text: str, limit: int = BLOCK_CHARS) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


def _tool_output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    parts = []
    for block in output if isinstance(output, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text") or ""))
        elif block.get("type") in _MEDIA + ("file",):
            source: dict[str, Any] = block["source"] if isinstance(block.get("source"), dict) else {}
            if source.get("type") != "base64":
                parts.append(f"[{block['type']}] {source.get('url') or ''}")
    return "\n".join(parts)


def format_block(block: Any, include_thinking: bool = True) -> str:
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        text = str(block.get("text") or "")
        return f"[text]: {_clip(text)}" if text else ""
    if kind == "thinking":
        text = str(block.get("thinking") or "")
        return f"[think]: {_clip(text)}" if include_thinking and text else ""
    if kind in _MEDIA:
        source = block.get("source")
        url = source if isinstance(source, str) else (source.get("url") or "") if isinstance(source, dict) else ""
        return f"[{kind}]: {url}"
    if kind == "tool_use":
        try:
            params = json.dumps(block.get("input", ""), ensure_ascii=False)
        except (TypeError, ValueError):
            params = str(block.get("input"))
        return f"[tool_use]: {block.get('name') or ''} params={_clip(params)}"
    if kind == "tool_result":
        output = _tool_output_text(block.get("output", ""))
        if not output:
            return ""
        return f"[tool_result]: {block.get('name') or ''} output={_clip(output.split(MARKER)[0])}"
    return ""


def format_message(msg: Any, include_thinking: bool = True) -> str:
    if not isinstance(msg, dict):
        return ""
    stamp = msg.get("timestamp") or ""
    header = (f"[{stamp}] " if stamp else "") + f"{msg.get('name') or msg.get('role') or ''}:"
    content = msg.get("content")
    if isinstance(content, str):
        lines = [f"[text]: {_clip(content)}"] if content else []
    else:
        lines = [format_block(b, include_thinking) for b in content] if isinstance(content, list) else []
    return "\n".join([header] + [line for line in lines if line])


def chunk_messages(messages: Sequence[Any], budget: int, counter: TokenCounter,
                   include_thinking: bool = True) -> list[str]:
    """Oldest-first chunks of rendered messages, each within `budget` tokens (a single larger message gets a chunk
    of its own, as QwenPaw always includes the newest message)."""
    chunks: list[str] = []
    parts: list[str] = []
    used = 0
    for msg in messages:
        rendered = format_message(msg, include_thinking)
        cost = counter.count(rendered)
        if parts and used + cost > budget:
            chunks.append("\n\n".join(parts))
            parts, used = [], 0
        parts.append(rendered)
        used += cost
    if parts:
        chunks.append("\n\n".join(parts))
    return chunks
