"""Which generation a session document is (spec qwenpaw2-workspace.md §7.2 rule 4), and reading it either way."""

from __future__ import annotations

import re
from typing import Any

from qwenmem.core.session_model import gen1, gen2
from qwenmem.core.session_model.model import Session

GEN1, GEN2 = gen1.GEN1, gen2.GEN2


def classify_document(doc: Any) -> str | None:
    """`agent.state` → 2.x; `agent.memory` (or QwenPaw's test shape `{"memory": …}`) → 1.x; else None (not a
    session: `.synced.json`, chats.json, a list…)."""
    if gen2.agent_of(doc) is not None:
        return GEN2
    if gen1.memory_holder(doc) is not None:
        return GEN1
    return None


def read_document(doc: Any) -> Session | None:
    """The Session of a parsed document, or None when it is not a session of either generation."""
    kind = classify_document(doc)
    if kind == GEN2:
        return gen2.read(doc)
    if kind == GEN1:
        return gen1.read(doc)
    return None


# Both generations dump the agent's first key first: 1.x `memory`, 2.x `state` (spec §2.2; json.dumps keeps order).
_HEAD = re.compile(rb'^\s*\{\s*"agent"\s*:\s*\{\s*"(state|memory)"\s*:')


def sniff_generation(head: bytes) -> str | None:
    """A guess from the first bytes of a file, to parse each file once; None when the start is unusual (the full
    parse decides then)."""
    m = _HEAD.match(head)
    if not m:
        return None
    return GEN2 if m.group(1) == b"state" else GEN1
