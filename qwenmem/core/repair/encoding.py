"""Decoding damaged bytes without losing count: every replacement is reported, nothing fails.

QwenPaw reads sessions with `errors="surrogatepass"` (so an encoded lone surrogate `ED A0 80` loads) but writes
without it (so its next save of such a string truncates the file to 0 bytes). We decode the same way, then replace
lone surrogates with U+FFFD before anything is written, and count each replacement.
"""

from __future__ import annotations

import codecs
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from qwenmem.core.repair.classes import LONE_SURROGATES
from qwenmem.core.surrogates import REPLACEMENT, fix_surrogates

BOM = b"\xef\xbb\xbf"
_HANDLER = "qwenmem-counting"
# one decode's scratch, per thread: a codec error handler gets no argument to carry it, so decode_counting resets
# it before the decode and reads it right after (nothing survives one call)
_state = threading.local()


def _counting_handler(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):  # registered for decoding only
        raise exc
    data, start = exc.object, exc.start
    if (data[start] == 0xED and start + 2 < len(data)
            and 0xA0 <= data[start + 1] <= 0xBF and 0x80 <= data[start + 2] <= 0xBF):
        # an encoded surrogate (what surrogatepass would accept): keep it as a surrogate for now, so that a
        # CESU-style pair can still be joined; lone ones are replaced later and counted there
        code = 0xD000 | ((data[start + 1] & 0x3F) << 6) | (data[start + 2] & 0x3F)
        _state.encoded_surrogates += 1
        return chr(code), start + 3
    _state.invalid.append(start)
    return REPLACEMENT, exc.end


codecs.register_error(_HANDLER, _counting_handler)


@dataclass
class Decoded:
    text: str
    bom: bool = False
    invalid_offsets: list[int] = field(default_factory=list)  # byte offsets of replaced invalid sequences
    encoded_surrogates: int = 0

    @property
    def invalid_count(self) -> int:
        return len(self.invalid_offsets)


def decode_counting(data: bytes) -> Decoded:
    bom = data.startswith(BOM)
    body = data[3:] if bom else data
    try:
        return Decoded(body.decode("utf-8"), bom)
    except UnicodeDecodeError:
        pass
    _state.invalid, _state.encoded_surrogates = [], 0
    text = body.decode("utf-8", _HANDLER)
    offset = 3 if bom else 0
    return Decoded(text, bom, [o + offset for o in _state.invalid], _state.encoded_surrogates)


def has_surrogates(obj: Any) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


@dataclass
class SurrogateFix:
    value: Any
    lone: int = 0
    joined: int = 0


def replace_surrogates(obj: Any) -> SurrogateFix:
    """Replace lone surrogates in every string (keys too) with U+FFFD; join split pairs. Untouched if clean."""
    if not has_surrogates(obj):
        return SurrogateFix(obj)
    fix = SurrogateFix(None)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            if not any("\ud800" <= c <= "\udfff" for c in value):
                return value
            fixed, lone, joined = fix_surrogates(value)
            fix.lone += lone
            fix.joined += joined
            return fixed
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {walk(k): walk(v) for k, v in value.items()}
        return value

    fix.value = walk(obj)
    return fix


class FixLog(Protocol):
    """Where a diagnosis records its classes, counts and planned actions (1.x and 2.x diagnoses alike)."""

    replacements: dict[str, int]
    actions: list[str]

    def add(self, cls: str) -> None: ...


def replace_surrogates_noted(log: FixLog, obj: Any, why: str) -> tuple[Any, bool]:
    """replace_surrogates, with what it did recorded in `log`; `why` says what QwenPaw would do with the lone
    surrogates (it differs per generation). Returns (the value, whether anything changed)."""
    fixed = replace_surrogates(obj)
    if not (fixed.lone or fixed.joined):
        return obj, False
    if fixed.lone:
        log.add(LONE_SURROGATES)
        log.replacements["lone_surrogates"] = fixed.lone
        log.actions.append(f"replace {fixed.lone} lone surrogate(s) with U+FFFD ({why})")
    if fixed.joined:
        log.replacements["surrogate_pairs_joined"] = fixed.joined
        log.actions.append(f"join {fixed.joined} split surrogate pair(s) into the characters they encode")
    return fixed.value, True
