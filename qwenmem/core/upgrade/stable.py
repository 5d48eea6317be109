"""The 1.x → 2.x message conversion of `sessions repair --convert-1x` (qwenmem.core.repair.gen2.from_gen1, QwenPaw's
`msg_from_dict`), with every value the converter generates made stable.

QwenPaw generates a fresh uuid4 block id and `created_at` for every block on every load of a 1.x file (spec §2.6),
so two loads of one file disagree and nothing written from one load matches the next. Here the generated values
are derived from the message itself: an id is the first 32 hex digits of sha256(session, message id, block path),
a block's `created_at` is its message's. The same 1.x file always converts to the same bytes, so a rerun after a
kill writes the same history.db rows (same dedup keys) and the same session file.
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import quote

from qwenmem.core.repair.gen2.from_gen1 import convert_message

_MEDIA = ("image", "audio", "video")


def stable_hex(*parts: str) -> str:
    """A uuid4-hex-shaped id (32 hex digits) that depends on `parts` only."""
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _had_id(block: Any) -> bool:
    """The converter keeps the id of a block that had one, except media blocks (it builds a new data block)."""
    return isinstance(block, dict) and "id" in block and block.get("type") not in _MEDIA


def normalized_url(url: str) -> str:
    """A URL as AgentScope's URL field stores it on load (pydantic percent-encodes a space or a non-ASCII character
    in the path): written so, a later load changes nothing."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    return scheme + sep + quote(rest, safe="/:@!$&'()*+,;=-._~%?#[]")


def _fix_block(new: Any, old: Any, seed: tuple[str, ...], stamp: str) -> None:
    if not isinstance(new, dict):
        return
    source = new.get("source")
    if new.get("type") == "data" and isinstance(source, dict) and isinstance(source.get("url"), str):
        source["url"] = normalized_url(source["url"])
    if not _had_id(old):
        new["id"] = stable_hex(*seed)
    if not (isinstance(old, dict) and "created_at" in old and old.get("type") not in _MEDIA):
        new["created_at"] = stamp
    old_out = old.get("output") if isinstance(old, dict) else None
    new_out = new.get("output")
    if isinstance(new_out, list) and isinstance(old_out, list):
        for j, (nb, ob) in enumerate(zip(new_out, old_out)):
            _fix_block(nb, ob, seed + (f"o{j}",), stamp)


def message_key(payload: dict[str, Any], position: int) -> str:
    """The 1.x message's id, or (none: the converter would invent one) a stand-in from its position and content."""
    mid = payload.get("id")
    if isinstance(mid, str) and mid:
        return mid
    return "pos" + str(position) + ":" + stable_hex(repr(sorted(payload.items(), key=lambda kv: kv[0])))


def fallback_stamp(payload: dict[str, Any], previous: str) -> str:
    stamp = payload.get("timestamp", payload.get("created_at"))
    return stamp if isinstance(stamp, str) and stamp else previous


def convert_stable(payload: dict[str, Any], scope: str, position: int, previous_stamp: str) -> dict[str, Any]:
    """`msg_from_dict` + `model_dump(mode="json")` of one 1.x message, generated values made stable. `scope`
    names where the message comes from (its session file, or its dialog/ file); `previous_stamp` is used for a
    message without any timestamp (the one before it in the record, so seq order and time order agree)."""
    msg, _ = convert_message(payload)
    key = message_key(payload, position)
    stamp = fallback_stamp(payload, previous_stamp)
    if not (isinstance(payload.get("id"), str) and payload.get("id")):
        msg["id"] = stable_hex(scope, key)
    if not isinstance(payload.get("timestamp", payload.get("created_at")), str):
        msg["created_at"] = stamp
    old_content = payload.get("content")
    old_blocks = [{"type": "text", "text": old_content}] if isinstance(old_content, str) else old_content
    new_blocks = msg.get("content")
    if isinstance(new_blocks, list) and isinstance(old_blocks, list):
        for i, (nb, ob) in enumerate(zip(new_blocks, old_blocks)):
            if isinstance(ob, dict) and isinstance(old_content, str):
                ob = {"type": "text", "text": old_content}  # the converter made this block: nothing was kept
            _fix_block(nb, ob, (scope, key, f"b{i}"), str(msg.get("created_at") or stamp))
    return msg
