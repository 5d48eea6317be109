"""Repairs inside a parsed session: broken messages out, exact duplicates out, tool pairs closed (opt-in)."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from qwenmem.core import sessions as S

_ID_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"  # shortuuid's alphabet
LOST_RESULT_TEXT = ("[qwenmem repair] The result of this tool call was lost: the session file was damaged or the "
                    "turn was interrupted before the result was saved. The call may or may not have run.")


@dataclass
class Removal:
    """Something taken out of the conversation; kept verbatim in the quarantine record."""

    index: int
    reason: str
    item: Any


def new_message_id() -> str:
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(22))


def _item_message(item: Any) -> Any:
    return item[0] if isinstance(item, list) and item else item


def remove_broken(doc: S.SessionDoc) -> tuple[list[Removal], int]:
    """Move out items QwenPaw's loader would throw on. Returns (removals, marks lists reset to [])."""
    kept: list[Any] = []
    removed: list[Removal] = []
    marks_reset = 0
    for i, item in enumerate(doc.content):
        if isinstance(item, list):
            if len(item) != 2:
                removed.append(Removal(i, f"content item has {len(item)} element(s), not [message, marks]", item))
                continue
            problems = S.message_problems(item[0])
            if problems:
                removed.append(Removal(i, "; ".join(problems), item))
                continue
            if not isinstance(item[1], list):
                item = [item[0], []]
                marks_reset += 1
            kept.append(item)
        elif isinstance(item, dict) and not S.message_problems(item):
            kept.append(item)
        else:
            problems = S.message_problems(item)
            removed.append(Removal(i, "; ".join(problems), item))
    doc.memory["content"] = kept
    return removed, marks_reset


def duplicate_ids(doc: S.SessionDoc) -> tuple[list[int], list[int]]:
    """(indexes of exact repeats of an earlier message, indexes that reuse an id for different content)."""
    seen: dict[str, Any] = {}
    exact: list[int] = []
    distinct: list[int] = []
    for i, item in enumerate(doc.content):
        msg = _item_message(item)
        mid = msg.get("id") if isinstance(msg, dict) else None
        if not isinstance(mid, str):
            continue
        if mid in seen:
            (exact if seen[mid] == item else distinct).append(i)
        else:
            seen[mid] = item
    return exact, distinct


def remove_exact_duplicates(doc: S.SessionDoc) -> list[Removal]:
    exact, _ = duplicate_ids(doc)
    drop = set(exact)
    removed = [Removal(i, "exact repeat of an earlier message with the same id", doc.content[i]) for i in exact]
    doc.memory["content"] = [item for i, item in enumerate(doc.content) if i not in drop]
    return removed


@dataclass
class ToolPairs:
    dangling_uses: list[tuple[int, str]]  # (message index, tool_use id) with no tool_result anywhere
    orphan_results: list[tuple[int, str]]  # (message index, tool_result id) answering no tool_use

    @property
    def count(self) -> int:
        return len(self.dangling_uses) + len(self.orphan_results)


def tool_pairs(doc: S.SessionDoc) -> ToolPairs:
    msgs = [_item_message(item) for item in doc.content]
    uses = {tid for m in msgs for tid in S.tool_use_ids(m)}
    results = {tid for m in msgs for tid in S.tool_result_ids(m)}
    dangling = [(i, tid) for i, m in enumerate(msgs) for tid in dict.fromkeys(S.tool_use_ids(m)) if tid not in results]
    orphans = [(i, tid) for i, m in enumerate(msgs) for tid in S.tool_result_ids(m) if tid not in uses]
    return ToolPairs(dangling, orphans)


def _lost_result_message(use_msg: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """A tool-result message shaped like the ones QwenPaw writes (role and name "system", Msg.to_dict key order)."""
    results = [{"type": "tool_result", "id": b.get("id"), "name": b.get("name"),
                "output": [{"type": "text", "text": LOST_RESULT_TEXT}]} for b in blocks]
    return {"id": new_message_id(), "name": "system", "role": "system", "content": results,
            "metadata": {"qwenmem_repair": "tool result lost"}, "timestamp": use_msg.get("timestamp", "")}


def fix_tool_pairs(doc: S.SessionDoc) -> tuple[list[Removal], int, int]:
    """Drop results that answer no call; close each dangling call with an explicit "result lost" result.

    Returns (removals, result blocks dropped from messages that keep other content, messages added).
    """
    pairs = tool_pairs(doc)
    orphan_ids = {tid for _, tid in pairs.orphan_results}
    dangling_ids = {tid for _, tid in pairs.dangling_uses}
    removed: list[Removal] = []
    blocks_dropped = 0
    filtered: list[Any] = []
    for i, item in enumerate(doc.content):
        msg = _item_message(item)
        if orphan_ids and any(tid in orphan_ids for tid in S.tool_result_ids(msg)):
            is_orphan = [isinstance(b, dict) and b.get("type") == "tool_result" and str(b.get("id")) in orphan_ids
                         for b in msg["content"]]
            keep = [b for b, orphan in zip(msg["content"], is_orphan) if not orphan]
            gone = [b for b, orphan in zip(msg["content"], is_orphan) if orphan]
            if not keep:
                removed.append(Removal(i, "tool_result answers no tool_use", item))
                continue
            removed.append(Removal(i, "tool_result block(s) answering no tool_use, removed from this message", gone))
            blocks_dropped += len(gone)
            msg["content"] = keep
        filtered.append(item)
    out: list[Any] = []
    added = 0
    i = 0
    while i < len(filtered):
        item = filtered[i]
        msg = _item_message(item)
        out.append(item)
        i += 1
        missing = [b for b in S.blocks(msg) if b.get("type") == "tool_use" and str(b.get("id")) in dangling_ids]
        if not missing:
            continue
        # the answer goes after any result messages that already follow the call (parallel calls)
        while i < len(filtered) and _item_message(filtered[i]).get("role") == "system" and \
                S.tool_result_ids(_item_message(filtered[i])):
            out.append(filtered[i])
            i += 1
        marks = list(item[1]) if isinstance(item, list) else None
        lost = _lost_result_message(msg, missing)
        out.append([lost, marks] if marks is not None else lost)
        added += 1
        dangling_ids -= {str(b.get("id")) for b in missing}
    doc.memory["content"] = out
    return removed, blocks_dropped, added


def describe(item: Any) -> str:
    msg = _item_message(item)
    return json.dumps(msg, ensure_ascii=False)[:120] if msg is not None else "null"
