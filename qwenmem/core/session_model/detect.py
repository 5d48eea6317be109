"""Which generation a session document is (spec qwenpaw2-workspace.md §7.2 rule 4), and reading it either way."""

from __future__ import annotations

import json
import os
import re
from typing import Any, Final

from qwenmem.core.confine import NotRegularFileError, open_regular
from qwenmem.core.errors import QwenmemError
from qwenmem.core.session_model import gen1, gen2
from qwenmem.core.session_model.model import Session

GEN1: Final = gen1.GEN1
GEN2: Final = gen2.GEN2


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


HEAD_BYTES = 256
MAX_SNIFF_BYTES = 256 << 20  # as sessions.MAX_SESSION_BYTES: a larger file is left to the loader, which says so


def _open_regular(path: os.PathLike[str] | str) -> int | None:
    """A read descriptor of `path` if it is a regular file, else None (confine.open_regular, the one primitive)."""
    try:
        return open_regular(path)
    except (IsADirectoryError, NotRegularFileError):
        return None


def _parse(data: bytes) -> Any:
    """The document as the loader reads it: UTF-8 with surrogates, and bad bytes as U+FFFD (they do not change
    which generation the file is). Raises ValueError or RecursionError."""
    try:
        text = data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
    return json.loads(text)


def generation_of_file(path: os.PathLike[str] | str, *, max_bytes: int = MAX_SNIFF_BYTES) -> str | None:
    """GEN1 / GEN2 of a session file, or None when it is neither or cannot be told safely here.

    From the first bytes when they are the usual `{"agent": {"state"|"memory": …`, else by parsing the whole file
    when it is at most `max_bytes`. Never blocks and never raises for what is on disk: anything but a regular file
    (FIFO, device, socket, directory), a link leaving the workspace (refused and recorded by confine), a file that
    cannot be read, one larger than `max_bytes`, garbage and JSON nested too deeply all give None, and the loader
    then reports what is wrong with it."""
    try:
        fd = _open_regular(path)
        if fd is None:
            return None
        with os.fdopen(fd, "rb") as fh:
            head = fh.read(HEAD_BYTES)
            guess = sniff_generation(head)
            if guess is not None:
                return guess
            start = head.lstrip()[:1]
            if start not in (b"{", b"") or os.fstat(fh.fileno()).st_size > max_bytes:
                return None  # a session is a JSON object; `b""`: all whitespace so far, the parse decides
            data = head + fh.read(max_bytes + 1 - len(head))
    except (OSError, QwenmemError):
        return None
    if len(data) > max_bytes:  # it grew while we read
        return None
    try:
        return classify_document(_parse(data))
    except (ValueError, RecursionError):
        return None
