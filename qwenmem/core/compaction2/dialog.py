"""Offloading compressed 2.x messages to dialog/<date>.jsonl as QwenPaw's offloader does (agents/offloader.py
L46-103 @2.2.2.post1; spec qwenpaw2-workspace.md §2.5): one `json.dumps(msg, ensure_ascii=False)` per line in the
2.0 Msg shape, appended, messages sorted by timestamp, the file named by the date part of `created_at` (else today).

Safety differences, as for 1.x: a non-date token falls back to today's date (no path from data), and a line already
in the file (same message id and the same block ids, so the two halves of a split message are distinct) is not
written twice, so a rerun after a crash duplicates nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Sequence

from qwenmem.core.fsio import append_durably

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def timestamp(msg: Any) -> str:
    """QwenPaw's `Msg.timestamp` shim: created_at with the T replaced by a space."""
    stamp = msg.get("created_at") if isinstance(msg, dict) else None
    return stamp.replace("T", " ") if isinstance(stamp, str) else ""


def dialog_date(msg: Any, today: date | None = None) -> str:
    token = timestamp(msg).split()[0] if timestamp(msg).split() else ""
    return token if _DATE.match(token) else (today or date.today()).isoformat()


def line_key(msg: Any, line: str) -> str:
    if isinstance(msg, dict) and isinstance(msg.get("id"), str) and msg["id"]:
        content = msg.get("content")
        blocks = content if isinstance(content, list) else []
        ids = ",".join(str(b.get("id")) for b in blocks if isinstance(b, dict))
        return f"id:{msg['id']}|{msg.get('role')}|{ids}"
    return f"line:{line}"


def _existing_keys(path: Path) -> set[str]:
    keys: set[str] = set()
    if not path.is_file():
        return keys
    from qwenmem.core import confine
    from qwenmem.core.fsio import iter_lines_bounded

    with confine.open_binary(path) as fh:
        for raw in iter_lines_bounded(fh):  # bounded: a 1 GB sparse log is one giant line of NULs
            line = raw.decode("utf-8", "replace").rstrip("\n")
            try:
                keys.add(line_key(json.loads(line), line))
            except json.JSONDecodeError:
                continue
    return keys


@dataclass
class DialogPlan:
    lines: dict[Path, list[str]] = field(default_factory=dict)
    already_present: int = 0
    last_path: Path | None = None  # the file named in the summary's reminder (the newest message's file)

    @property
    def files(self) -> list[Path]:
        return sorted(self.lines)

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.lines.values())


def plan_dialog(dialog_dir: Path, messages: Sequence[Any], today: date | None = None) -> DialogPlan:
    plan = DialogPlan()
    seen: dict[Path, set[str]] = {}
    for msg in sorted(messages, key=timestamp):
        path = dialog_dir / f"{dialog_date(msg, today)}.jsonl"
        plan.last_path = path
        if path not in seen:
            seen[path] = _existing_keys(path)
        line = json.dumps(msg, ensure_ascii=False)
        key = line_key(msg, line)
        if key in seen[path]:
            plan.already_present += 1
            continue
        seen[path].add(key)
        plan.lines.setdefault(path, []).append(line)
    return plan


def write_dialog(plan: DialogPlan) -> None:
    for path in plan.files:
        append_durably(path, "".join(line + "\n" for line in plan.lines[path]).encode("utf-8"))


def missing_from_dialog(dialog_dir: Path, messages: Sequence[Any], today: date | None = None) -> list[str]:
    cache: dict[Path, set[str]] = {}
    missing = []
    for msg in messages:
        path = dialog_dir / f"{dialog_date(msg, today)}.jsonl"
        if path not in cache:
            cache[path] = _existing_keys(path)
        if line_key(msg, json.dumps(msg, ensure_ascii=False)) not in cache[path]:
            missing.append(str(msg.get("id") if isinstance(msg, dict) else msg))
    return missing
