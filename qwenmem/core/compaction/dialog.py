"""Offloading removed messages to dialog/<date>.jsonl exactly as QwenPaw does (spec qwenpaw-workspace.md §2.5).

One message dict per line (no marks), ensure_ascii=False, "\n"-terminated, appended; within one call the messages
are sorted by their timestamp string and the file name is the first whitespace-separated token of each timestamp.
Two safety differences: a timestamp token that is not a YYYY-MM-DD date falls back to today's date (QwenPaw uses
it verbatim, so a hostile timestamp could name any path), and messages whose id is already in the target file are
skipped (same id, role and timestamp), so a rerun after a crash never duplicates lines (QwenPaw weakness §8 item 8).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Sequence

from qwenmem.core import confine
from qwenmem.core.fsio import append_durably, iter_lines_bounded

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def dialog_date(msg: Any, today: date | None = None) -> str:
    stamp = msg.get("timestamp") if isinstance(msg, dict) else None
    token = str(stamp).split()[0] if isinstance(stamp, str) and stamp.split() else ""
    return token if _DATE.match(token) else (today or date.today()).isoformat()


def _existing_keys(path: Path) -> set[str]:
    keys: set[str] = set()
    if not path.is_file():
        return keys
    with confine.open_binary(path) as fh:
        for raw in iter_lines_bounded(fh):  # bounded: a 1 GB sparse log is one giant line of NULs
            line = raw.decode("utf-8", "replace").rstrip("\n")
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            keys.add(_key(obj, line))
    return keys


def _key(msg: Any, line: str) -> str:
    # id + role + timestamp: a rerun re-cuts tool outputs into new offload files, so whole lines can differ for the
    # same message, while two different messages that merely share an id still both get written
    if isinstance(msg, dict) and isinstance(msg.get("id"), str) and msg["id"]:
        return f"id:{msg['id']}|{msg.get('role')}|{msg.get('timestamp')}"
    return "line:" + hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()  # bounded memory per line


@dataclass
class DialogPlan:
    lines: dict[Path, list[str]] = field(default_factory=dict)
    already_present: int = 0

    @property
    def files(self) -> list[Path]:
        return sorted(self.lines)

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.lines.values())


def plan_dialog(dialog_dir: Path, messages: Sequence[Any], today: date | None = None) -> DialogPlan:
    plan = DialogPlan()
    ordered = sorted(messages, key=lambda m: str(m.get("timestamp") or "") if isinstance(m, dict) else "")
    seen: dict[Path, set[str]] = {}
    for msg in ordered:
        path = dialog_dir / f"{dialog_date(msg, today)}.jsonl"
        if path not in seen:
            seen[path] = _existing_keys(path)
        line = json.dumps(msg, ensure_ascii=False)
        key = _key(msg, line)
        if key in seen[path]:
            plan.already_present += 1
            continue
        seen[path].add(key)
        plan.lines.setdefault(path, []).append(line)
    return plan


def write_dialog(plan: DialogPlan) -> None:
    for path in plan.files:
        append_durably(path, "".join(line + "\n" for line in plan.lines[path]).encode("utf-8"))


def all_in_dialog(dialog_dir: Path, messages: Sequence[Any]) -> list[str]:
    """Ids of messages that are NOT found in dialog/ (empty when every one is there)."""
    missing = []
    cache: dict[Path, set[str]] = {}
    for msg in messages:
        path = dialog_dir / f"{dialog_date(msg)}.jsonl"
        if path not in cache:
            cache[path] = _existing_keys(path)
        if _key(msg, json.dumps(msg, ensure_ascii=False)) not in cache[path]:
            missing.append(str(msg.get("id") if isinstance(msg, dict) else msg))
    return missing
