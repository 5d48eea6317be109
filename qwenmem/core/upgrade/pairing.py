"""QwenPaw's load-time tool pairing (`agents/utils/tool_message_utils.py _sanitize_tool_messages`,
`_remove_unpaired_tool_messages @2.2.2.post1`), applied to the live context the upgrade writes, so that QwenPaw's
load finds nothing to change: a tool call that no result answers (a 1.x turn interrupted mid-call) leaves the live
context with the messages that answer it in part. Its rows stay in history.db: nothing leaves the record.
Only the pairing pass is ported (the block-level passes before it find nothing in a converted 1.x context);
tests/core/upgrade/test_upgrade_qwenpaw.py checks that QwenPaw's own load then dumps the file unchanged.
"""

from __future__ import annotations

from typing import Any


def _ids(msg: dict[str, Any]) -> tuple[set[str], set[str]]:
    uses, results = set(), set()
    for b in msg.get("content") or []:
        if isinstance(b, dict) and b.get("id"):
            if b.get("type") == "tool_call":
                uses.add(str(b["id"]))
            elif b.get("type") == "tool_result":
                results.add(str(b["id"]))
    return uses, results


def _needs_fix(msgs: list[dict[str, Any]]) -> bool:
    pending: dict[str, int] = {}
    for msg in msgs:
        uses, results = _ids(msg)
        for uid in uses:
            pending[uid] = pending.get(uid, 0) + 1
        for rid in results:
            if pending.get(rid, 0) <= 0:
                return True
            pending[rid] -= 1
            if pending[rid] == 0:
                del pending[rid]
        if pending and not results and not uses:
            return True
    return bool(pending)


def paired(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`msgs` as QwenPaw's sanitizer leaves them (the same list when nothing needs fixing)."""
    if not _needs_fix(msgs):
        return msgs
    remove: set[int] = set()
    i = 0
    while i < len(msgs):
        uses, own = _ids(msgs[i])
        if not uses:
            i += 1
            continue
        required = uses - own
        j, found = i + 1, []
        while j < len(msgs) and required:
            uj, r = _ids(msgs[j])
            if not r or uj:
                break
            required -= r
            found.append(j)
            j += 1
        if required:
            remove.add(i)
            remove.update(found)
            i += 1
        else:
            i = j
    surviving = set().union(*(_ids(m)[0] for n, m in enumerate(msgs) if n not in remove)) if msgs else set()
    for n, msg in enumerate(msgs):
        uses, results = _ids(msg)
        if n not in remove and results and not results <= (surviving | uses):
            remove.add(n)
    return [m for n, m in enumerate(msgs) if n not in remove]
