"""Reading damaged 1.x session files: salvage and content warnings.

Layer: below loading (sessions.py calls it) and above the 1.x document (session_model/gen1_doc.py), the salvage
of damaged text (salvage_documents.py) and the tolerant parser (session_model/tolerant_json.py). It never imports
sessions.py or the repair package.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from qwenmem.core.salvage_documents import pick_best, salvage_document, split_documents
from qwenmem.core.session_model.gen1_doc import ROLES, SessionDoc, message_problems


@dataclass
class Salvage:
    session: SessionDoc | None
    notes: list[str]
    messages_recovered: int = 0
    damaged_items: int = 0


def salvage_text(text: str) -> Salvage:
    """Best effort: the session a repair would keep (the most complete and newest document, every complete message
    before and after the damage point). Read-only; `qwenmem sessions repair` is what writes it."""
    split = split_documents(text)
    notes: list[str] = []
    if len(split.docs) > 1:
        notes.append(f"{len(split.docs)} JSON documents in one file")
    if split.garbage:
        notes.append(f"extra data outside the JSON document at character {split.garbage[0][0]}")
    candidates = [salvage_document(span) for span in split.docs]
    sessions = [c for c in candidates if c.doc is not None]
    if not sessions:
        reasons = "; ".join(dict.fromkeys(c.reason for c in candidates)) or "no JSON document found"
        return Salvage(None, notes + [f"nothing recoverable: {reasons}"])
    best = pick_best(sessions)
    kept = len(best.messages)  # one per content item
    if not best.complete:
        notes.append(f"damaged: kept {kept} complete message(s)"
                     + (", dropped 1 cut-off message" if best.partial_items else "")
                     + (f", {best.resynced_items} found after the damage" if best.resynced_items else ""))
    return Salvage(best.session, notes, kept, best.partial_items)


_REQUIRED = ("name", "role", "content", "id")
_LONE_SURROGATE = re.compile(
    r"[\ud800-\udfff]"  # decoded with surrogatepass from raw ED A0..BF bytes
    r"|\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"  # escaped high surrogate without a low one
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"  # low without a high
)


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def has_lone_surrogates(text: str) -> bool:
    # The full pattern is slow on megabytes of text; two C-speed pre-checks settle almost every file.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    if _ESCAPED_SURROGATE.search(text) is None:
        return False
    return _LONE_SURROGATE.search(text) is not None


def _layout_warnings(session: SessionDoc) -> list[str]:
    warnings: list[str] = []
    if session.layout == "memory":
        warnings.append("no \"agent\" object around the agent state (QwenPaw loads this as an empty session; "
                        "`qwenmem sessions repair` rebuilds it)")
    toolkit = session.agent.get("toolkit", {"active_groups": []}) if session.layout == "agent" else None
    if session.layout == "agent" and not (type(toolkit) is dict and set(toolkit) <= {"active_groups"}
                                          and type(toolkit.get("active_groups", [])) is list):
        warnings.append("agent.toolkit is not {\"active_groups\": [...]} (QwenPaw's loader rejects it; "
                        "`qwenmem sessions repair` fixes it)")
    return warnings


def _item_message(item: Any, i: int, warnings: list[str]) -> dict[str, Any] | None:
    """The message of content item `i` (`[message, marks]` or a bare message), or None with a warning."""
    if type(item) is list:
        if len(item) != 2:
            warnings.append(f"item {i}: a content item has {len(item)} elements, not [message, marks]")
            return None
        msg = item[0]
    else:
        msg = item
    if type(msg) is not dict:
        warnings.append(f"message {i}: message is a {type(msg).__name__}, not an object")
        return None
    return msg


def _note_tool_blocks(content: Any, i: int, uses: dict[str, int], results: dict[str, int]) -> None:
    """The first message of each tool_use / tool_result id."""
    if type(content) is not list:
        return
    for block in content:
        if type(block) is dict:
            kind = block.get("type")
            if kind == "tool_use":
                uses.setdefault(str(block.get("id")), i)
            elif kind == "tool_result":
                results.setdefault(str(block.get("id")), i)


def _message_warnings(session: SessionDoc, warnings: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    """Per message, in order: shape problems and duplicate ids (into `warnings`); returns the tool ids seen."""
    seen: dict[str, int] = {}
    uses: dict[str, int] = {}
    results: dict[str, int] = {}
    for i, item in enumerate(session.content):
        msg = _item_message(item, i, warnings)
        if msg is None:
            continue
        if not all(k in msg for k in _REQUIRED) or msg["role"] not in ROLES or type(msg["id"]) is not str \
                or not isinstance(msg["content"], (str, list)):
            warnings.extend(f"message {i}: {p}" for p in message_problems(msg))
        mid = msg.get("id")
        if type(mid) is str:
            if mid in seen:
                warnings.append(f"message {i}: duplicate id {mid!r} (first at {seen[mid]})")
            else:
                seen[mid] = i
        _note_tool_blocks(msg.get("content"), i, uses, results)
    return uses, results


def content_warnings(session: SessionDoc, text: str | None = None) -> list[str]:
    """Problems in a structurally valid session that QwenPaw would trip over. One pass, no re-serialising
    (this runs for every file in `sessions list`)."""
    warnings = _layout_warnings(session)
    uses, results = _message_warnings(session, warnings)
    for tid, i in uses.items():
        if tid not in results:
            warnings.append(f"message {i}: tool_use {tid!r} has no tool_result")
    for tid, i in results.items():
        if tid not in uses:
            warnings.append(f"message {i}: tool_result {tid!r} answers no tool_use")
    if has_lone_surrogates(text if text is not None else json.dumps(session.doc, ensure_ascii=False)):
        warnings.append("lone surrogate characters (QwenPaw's next save would truncate this file to 0 bytes)")
    return warnings
