"""Offloading compressed 2.x messages to dialog/<date>.jsonl as QwenPaw's offloader does (agents/offloader.py
L46-103 @2.2.2.post1; spec qwenpaw2-workspace.md §2.5): one `json.dumps(msg, ensure_ascii=False)` per line in the
2.0 Msg shape, appended, messages sorted by timestamp, the file named by the date part of `created_at` (else today).

Safety differences, as for 1.x: a non-date token falls back to today's date (no path from data), and a line already
in the file (same message id and the same block ids, so the two halves of a split message are distinct) is not
written twice, so a rerun after a crash duplicates nothing. The reading and planning are 1.x's
(compaction/dialog.py); only the date, order and key of a message are 2.x's own.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any, Sequence

from qwenmem.core.compaction.dialog import (DialogPlan, is_date, line_digest_key, missing_from, plan_appends,
                                            write_dialog)

__all__ = ["DialogPlan", "dialog_date", "line_key", "missing_from_dialog", "plan_dialog", "timestamp",
           "write_dialog"]


def timestamp(msg: Any) -> str:
    """QwenPaw's `Msg.timestamp` shim: created_at with the T replaced by a space."""
    stamp = msg.get("created_at") if isinstance(msg, dict) else None
    return stamp.replace("T", " ") if isinstance(stamp, str) else ""


def dialog_date(msg: Any, today: date | None = None) -> str:
    token = timestamp(msg).split()[0] if timestamp(msg).split() else ""
    return token if is_date(token) else (today or date.today()).isoformat()


def line_key(msg: Any, line: str) -> str:
    if isinstance(msg, dict) and isinstance(msg.get("id"), str) and msg["id"]:
        content = msg.get("content")
        blocks = content if isinstance(content, list) else []
        ids = ",".join(str(b.get("id")) for b in blocks if isinstance(b, dict))
        return f"id:{msg['id']}|{msg.get('role')}|{ids}"
    return line_digest_key(line)


def plan_dialog(dialog_dir: Path, messages: Sequence[Any], today: date | None = None) -> DialogPlan:
    return plan_appends(dialog_dir, messages, line_key, lambda m: dialog_date(m, today), timestamp)


def missing_from_dialog(dialog_dir: Path, messages: Sequence[Any], today: date | None = None) -> list[str]:
    return missing_from(dialog_dir, messages, line_key, lambda m: dialog_date(m, today))
