"""Session bytes <-> JSON document. The bottom layer: imports nothing from qwenmem.

Both generations write one line with `json.dumps(obj, ensure_ascii=False)` and default separators
(1.x: app/runner/session.py; 2.x: app/chats/session.py L296-301 with indent=None, spec qwenpaw2-workspace.md §2.2),
so one encoder serves both and a loaded-then-saved file comes back byte for byte.
"""

from __future__ import annotations

import json
from typing import Any


def loads_document(data: bytes) -> Any:
    """Strict parse of a whole file (UTF-8, surrogates allowed as QwenPaw reads them). Raises ValueError."""
    return json.loads(data.decode("utf-8", "surrogatepass"))


def dumps_document(doc: Any) -> str:
    return json.dumps(doc, ensure_ascii=False)


def encode_document(doc: Any) -> bytes:
    """UTF-8 bytes to write. Lone surrogates raise UnicodeEncodeError: QwenPaw 2.x's own writer fails on them and
    1.x truncated the file, so the caller must have replaced them first."""
    return dumps_document(doc).encode("utf-8")
