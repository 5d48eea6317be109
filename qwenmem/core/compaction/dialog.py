"""Offloading removed messages to dialog/<date>.jsonl exactly as QwenPaw does (spec qwenpaw-workspace.md §2.5).

One message dict per line (no marks), ensure_ascii=False, "\n"-terminated, appended; within one call the messages
are sorted by their timestamp string and the file name is the first whitespace-separated token of each timestamp.
Two safety differences: a timestamp token that is not a YYYY-MM-DD date falls back to today's date (QwenPaw uses
it verbatim, so a hostile timestamp could name any path), and messages whose id is already in the target file are
skipped (same id, role and timestamp), so a rerun after a crash never duplicates lines (QwenPaw weakness §8 item 8).

The de-duplication machinery (`existing_keys`, `plan_appends`, `missing_from`) is shared with the 2.x offload
(gen2/dialog.py), which differs only in how a message is dated, sorted and keyed.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Callable, Sequence

from qwenmem.core import confine
from qwenmem.core.fsio import append_durably, iter_lines_bounded

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

#: (message as parsed, its JSON line) -> the key that says "this message is already in the log"
KeyFn = Callable[[Any, str], str]
#: message -> the YYYY-MM-DD naming its dialog file
DateFn = Callable[[Any], str]


def is_date(token: str) -> bool:
    return bool(_DATE.match(token))


def dialog_date(msg: Any, today: date | None = None) -> str:
    stamp = msg.get("timestamp") if isinstance(msg, dict) else None
    token = str(stamp).split()[0] if isinstance(stamp, str) and stamp.split() else ""
    return token if is_date(token) else (today or date.today()).isoformat()


def line_digest_key(line: str) -> str:
    """The key of a line without a usable id: a digest, so memory stays bounded per line (lines may be 64 MiB)."""
    return "line:" + hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()


def message_key(msg: Any, line: str) -> str:
    # id + role + timestamp: a rerun re-cuts tool outputs into new offload files, so whole lines can differ for the
    # same message, while two different messages that merely share an id still both get written
    if isinstance(msg, dict) and isinstance(msg.get("id"), str) and msg["id"]:
        return f"id:{msg['id']}|{msg.get('role')}|{msg.get('timestamp')}"
    return line_digest_key(line)


def existing_keys(path: Path, key_fn: KeyFn) -> set[str]:
    """The keys of the messages already in one dialog log, read bounded and confined: a line over fsio's limit (a
    1 GB sparse log is one giant line of NULs) is read past, not held; a link leaving the workspace is refused."""
    keys: set[str] = set()
    if not path.is_file():
        return keys
    with confine.open_binary(path) as fh:
        for raw in iter_lines_bounded(fh):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):  # not JSON, or nested deeper than json can read: not a message
                continue
            keys.add(key_fn(obj, line))
    return keys


@dataclass
class DialogPlan:
    lines: dict[Path, list[str]] = field(default_factory=dict)
    already_present: int = 0
    last_path: Path | None = None  # the newest message's file (2.x names it in the summary's reminder)

    @property
    def files(self) -> list[Path]:
        return sorted(self.lines)

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.lines.values())


class _KeysByFile:
    """Each dialog file's existing keys, read once per plan or check."""

    def __init__(self, key_fn: KeyFn) -> None:
        self.key_fn = key_fn
        self._keys: dict[Path, set[str]] = {}

    def __getitem__(self, path: Path) -> set[str]:
        if path not in self._keys:
            self._keys[path] = existing_keys(path, self.key_fn)
        return self._keys[path]


def plan_appends(dialog_dir: Path, messages: Sequence[Any], key_fn: KeyFn, date_fn: DateFn,
                 sort_key: Callable[[Any], str]) -> DialogPlan:
    """The lines to append, per file, leaving out messages whose key the file (or this plan) already holds."""
    plan = DialogPlan()
    seen = _KeysByFile(key_fn)
    for msg in sorted(messages, key=sort_key):
        path = dialog_dir / f"{date_fn(msg)}.jsonl"
        plan.last_path = path
        line = json.dumps(msg, ensure_ascii=False)
        key = key_fn(msg, line)
        if key in seen[path]:
            plan.already_present += 1
            continue
        seen[path].add(key)
        plan.lines.setdefault(path, []).append(line)
    return plan


def missing_from(dialog_dir: Path, messages: Sequence[Any], key_fn: KeyFn, date_fn: DateFn) -> list[str]:
    """Ids of messages that are NOT found in their dialog file (empty when every one is there)."""
    seen = _KeysByFile(key_fn)
    return [str(msg.get("id") if isinstance(msg, dict) else msg) for msg in messages
            if key_fn(msg, json.dumps(msg, ensure_ascii=False)) not in seen[dialog_dir / f"{date_fn(msg)}.jsonl"]]


def write_dialog(plan: DialogPlan) -> None:
    for path in plan.files:
        append_durably(path, "".join(line + "\n" for line in plan.lines[path]).encode("utf-8"))


def _timestamp(msg: Any) -> str:
    return str(msg.get("timestamp") or "") if isinstance(msg, dict) else ""


def plan_dialog(dialog_dir: Path, messages: Sequence[Any], today: date | None = None) -> DialogPlan:
    return plan_appends(dialog_dir, messages, message_key, lambda m: dialog_date(m, today), _timestamp)


def all_in_dialog(dialog_dir: Path, messages: Sequence[Any]) -> list[str]:
    """Ids of 1.x messages that are NOT found in dialog/ (empty when every one is there)."""
    return missing_from(dialog_dir, messages, message_key, dialog_date)
