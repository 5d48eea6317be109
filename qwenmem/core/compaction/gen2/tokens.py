"""AgentScope 2.0's token estimate (`ChatModelBase.count_tokens`, agentscope/model/_base.py L369-455 @as2.0.10),
computed on the raw Msg dicts of a session file (spec qwenpaw2-workspace.md §4.2).

    texts  = system prompt, summary (as a user message), per block: text, thinking, hint text,
             tool_call.input (raw JSON string), tool_result output text; + json.dumps(tools, ensure_ascii=False)
    tokens = 2000 × data blocks + int(len("".join(texts).encode("utf-8")) / 4 + 0.5)

One rounding over the whole concatenation, so the parts are carried as byte counts (`Size`) and rounded once at the
end. `token_count_estimate_divisor` does not apply (QwenPaw 2.x uses it only for statistics).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

DATA_BLOCK_TOKENS = 2000  # _MULTIMODAL_DATA_BLOCK_TOKEN_ESTIMATE, agentscope/model/_base.py L34


@dataclass(frozen=True)
class Size:
    """Bytes of counted text and number of data blocks of some part of the model input."""

    nbytes: int = 0
    data: int = 0

    def __add__(self, other: "Size") -> "Size":
        return Size(self.nbytes + other.nbytes, self.data + other.data)

    @property
    def tokens(self) -> int:
        return tokens_of(self)


ZERO = Size()


def tokens_of(size: Size) -> int:
    return DATA_BLOCK_TOKENS * size.data + int(size.nbytes / 4 + 0.5)


def text_bytes(text: Any) -> int:
    return len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else 0


def _items_size(items: Any) -> Size:
    """A tool_result output or a hint given as a list: text blocks count their text, data blocks 2000 each."""
    nbytes = data = 0
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            if item.get("type") == "text":
                nbytes += text_bytes(item.get("text"))
            elif item.get("type") == "data":
                data += 1
    return Size(nbytes, data)


def block_size(block: Any) -> Size:
    if not isinstance(block, dict):
        return ZERO  # AgentScope logs "Unknown block type" and skips it
    kind = block.get("type")
    if kind == "text":
        return Size(text_bytes(block.get("text")))
    if kind == "thinking":
        return Size(text_bytes(block.get("thinking")))
    if kind == "hint":
        hint = block.get("hint")
        return Size(text_bytes(hint)) if isinstance(hint, str) else _items_size(hint)
    if kind == "tool_call":
        return Size(text_bytes(block.get("input")))
    if kind == "tool_result":
        output = block.get("output")
        return Size(text_bytes(output)) if isinstance(output, str) else _items_size(output)
    if kind == "data":
        return Size(0, 1)
    return ZERO


def blocks_of(msg: Any) -> list[Any]:
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def message_size(msg: Any) -> Size:
    total = ZERO
    for block in blocks_of(msg):
        total = total + block_size(block)
    return total


def summary_size(summary: Any) -> Size:
    """`state.summary` enters the input as UserMsg(summary) only when truthy: a string is one text block, a list is
    text/data blocks."""
    if not summary:
        return ZERO
    if isinstance(summary, str):
        return Size(text_bytes(summary))
    return message_size({"content": summary})


def count_tokens(messages: Iterable[Any], fixed: Size = ZERO, summary: Any = "") -> int:
    """Tokens of `[system] + [summary] + messages` with the system prompt and tool schemas given as `fixed`."""
    total = fixed + summary_size(summary)
    for msg in messages:
        total = total + message_size(msg)
    return tokens_of(total)
