"""A tolerant JSON parse that keeps every complete value of a damaged document. The bottom layer of the session
packages: imports nothing from qwenmem (tests/project/test_qwenpaw2_architecture.py).

`json.JSONDecoder.raw_decode` alone recovers nothing from a truncated file (the outer object never closes), so a
truncated container is walked by hand, while every complete sub-value is still decoded by the C decoder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


class _Partial:
    """Marks a container that was cut off before its closing bracket."""


# where a value sits in the document: object keys and array indexes from the top
JsonPath = tuple[str | int, ...]


@dataclass
class Parsed:
    value: Any
    end: int
    complete: bool
    partial_paths: list[JsonPath] = field(default_factory=list)


def _skip_ws(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in _WS:
        pos += 1
    return pos


def tolerant_parse(text: str, pos: int = 0, path: JsonPath = ()) -> Parsed:
    """Parse one JSON value from `pos`. Complete values come back as-is; a truncated container comes back with
    all its complete members and `complete=False`. A truncated scalar comes back as `_Partial`."""
    pos = _skip_ws(text, pos)
    try:
        value, end = _DECODER.raw_decode(text, pos)
        return Parsed(value, end, True)
    except ValueError:  # JSONDecodeError, or an integer literal too long for int() (issue 10 item 6)
        pass
    if pos >= len(text):
        return Parsed(_Partial(), pos, False, [path])
    opener = text[pos]
    if opener == "{":
        return _parse_object(text, pos + 1, path)
    if opener == "[":
        return _parse_array(text, pos + 1, path)
    return Parsed(_Partial(), pos, False, [path])


def _parse_array(text: str, pos: int, path: JsonPath) -> Parsed:
    out: list[Any] = []
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


def _parse_object(text: str, pos: int, path: JsonPath) -> Parsed:
    out: dict[str, Any] = {}
    while True:
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == "}":
            return Parsed(out, pos + 1, True)
        if pos < len(text) and text[pos] == "," and out:
            pos = _skip_ws(text, pos + 1)
        try:
            key, pos = _DECODER.raw_decode(text, pos)
        except ValueError:  # JSONDecodeError, or an integer literal too long for int() (issue 10 item 6)
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
