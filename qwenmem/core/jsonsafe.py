"""Decoding JSON that Python's json module cannot turn into plain values by itself.

An integer literal longer than `sys.get_int_max_str_digits()` (4,300 by default) makes `json.loads` raise a plain
ValueError, which is not a JSONDecodeError, so every `except JSONDecodeError` let it through as an internal error.
QwenPaw's own loader fails on such a session file the same way (it never loads, so it is never overwritten).
"""

from __future__ import annotations

import json
import sys
from typing import Any

_LIMIT = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0


class OversizedIntError(json.JSONDecodeError):
    """An integer literal with more digits than Python converts; a JSONDecodeError, so it counts as damage."""

    def __init__(self, digits: int):
        super().__init__(f"an integer literal of {digits:,} digits (over Python's {_LIMIT:,}-digit limit; "
                         "QwenPaw cannot load it either)", "", 0)


def _too_long(literal: str) -> bool:
    return bool(_LIMIT) and len(literal) - literal.startswith("-") > _LIMIT


def strict_int(literal: str) -> int:
    """parse_int for session files: an oversized literal is damage (OversizedIntError)."""
    if _too_long(literal):
        raise OversizedIntError(len(literal.lstrip("-")))
    return int(literal)


def lenient_int(literal: str) -> int | float:
    """parse_int for config files: an oversized literal reads as ±infinity, a value no integer setting accepts and
    every range check rejects, so that key falls back to its default and the rest of the file still counts."""
    if _too_long(literal):
        return float("-inf") if literal.startswith("-") else float("inf")
    return int(literal)


SESSION_DECODER = json.JSONDecoder(parse_int=strict_int)


def loads_session(text: str) -> Any:
    return SESSION_DECODER.decode(text)


def loads_config(text: str) -> Any:
    return json.loads(text, parse_int=lenient_int)


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (dicts, lists, scalars) without recursion: copy.deepcopy takes two Python frames
    per level, so a message field nested 500 deep (which json.loads reads, and QwenPaw loads) hit the recursion
    limit. Other objects are shared, as copy.copy would."""
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]  # (source, destination container, key in it)
    while stack:
        src, dest, key = stack.pop()
        if isinstance(src, dict):
            out: Any = {}
            dest[key] = out
            for k, v in src.items():
                if isinstance(v, (dict, list)):
                    out[k] = None
                    stack.append((v, out, k))
                else:
                    out[k] = v
        elif isinstance(src, list):
            out = [None] * len(src)
            dest[key] = out
            for i, v in enumerate(src):
                if isinstance(v, (dict, list)):
                    stack.append((v, out, i))
                else:
                    out[i] = v
        else:
            dest[key] = src
    return root[0]
