"""The damage classes `sessions repair` reports, and what a repair keeps aside (shared by the 1.x and 2.x
diagnosis; imports nothing from qwenmem)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

OK = "ok"
TRAILING_GARBAGE = "trailing_garbage"
CONCATENATED = "concatenated"
TRUNCATED = "truncated"
DAMAGED = "damaged_json"  # broken in the middle, with readable messages after the damage
EMPTY = "empty"
BOM = "bom"
INVALID_UTF8 = "invalid_utf8"
LONE_SURROGATES = "lone_surrogates"
NOT_A_SESSION = "not_a_session"
INCOMPLETE_STATE = "incomplete_state"  # a session missing toolkit/name/_sys_prompt/_compressed_summary
BROKEN_MESSAGES = "broken_messages"
ORPHAN_TOOL_PAIRS = "orphan_tool_pairs"
DUPLICATE_IDS = "duplicate_ids"

CLASSES = (OK, TRAILING_GARBAGE, CONCATENATED, TRUNCATED, DAMAGED, EMPTY, BOM, INVALID_UTF8, LONE_SURROGATES,
           NOT_A_SESSION, INCOMPLETE_STATE, BROKEN_MESSAGES, ORPHAN_TOOL_PAIRS, DUPLICATE_IDS)


AlternativeKind = Literal["document", "garbage"]  # a whole other document, or stray text


@dataclass
class Alternative:
    """A document or stray text that the repair does not keep; it goes to quarantine."""

    kind: AlternativeKind
    start: int
    end: int
    messages: int
    text: str


def alternative(kind: AlternativeKind, start: int, end: int, messages: int, text: str) -> Alternative:
    return Alternative(kind, start, end, messages, text[start:end])
