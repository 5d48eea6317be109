"""What a dream changed and why: one JSON object per run, appended to backup/dream_changelog.jsonl (QwenPaw#3663)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from qwenmem.core import confine, redact
from qwenmem.core.fsio import append_durably

CHANGELOG_NAME = "dream_changelog.jsonl"
CHANGELOG_VERSION = 1

# Actions, in the words of QwenPaw's dream protocol plus what qwenmem adds.
REMOVED: Final = "removed"  # an exact/normalized/near duplicate, or an entry the LLM dropped
MERGED: Final = "merged"  # folded into a longer entry that says the same and more
REPLACED: Final = "replaced"  # a newer fact from the daily log supersedes the entry it contradicts
ADDED: Final = "added"  # promoted from the daily log
FLAGGED: Final = "flagged"  # looks like a contradiction inside MEMORY.md; left for a human
RESTORED: Final = "restored"


# "changed": an LLM rewrite's change under an action word it was not given
ChangeAction = Literal["removed", "merged", "replaced", "added", "flagged", "restored", "changed"]


@dataclass
class Change:
    action: ChangeAction
    reason: str
    old: str | None = None  # the affected lines, as they were
    new: str | None = None  # what took their place (None for a removal)
    line: int | None = None  # 1-based line in the old MEMORY.md (None for additions)
    section: str | None = None
    similarity: float | None = None


DreamMode = Literal["deterministic", "llm"]
ChangelogKind = Literal["dream", "restore"]
ChangelogMode = Literal[DreamMode, "restore"]


@dataclass
class ChangelogEntry:
    time: str
    run_id: str
    kind: ChangelogKind
    mode: ChangelogMode
    memory: str
    backup: str | None
    sha256_before: str
    sha256_after: str
    bytes_before: int
    bytes_after: int
    date: str | None = None
    daily_log: str | None = None
    llm_model: str | None = None
    changes: list[Change] = field(default_factory=list)
    version: int = CHANGELOG_VERSION


def append_entry(backup_dir: Path, entry: ChangelogEntry) -> Path:
    path = Path(backup_dir) / CHANGELOG_NAME
    line = redact.redact(json.dumps(asdict(entry), ensure_ascii=False, sort_keys=False)) + "\n"  # no key in the log
    # backslashreplace turns a lone surrogate (from an LLM's change reason) into a valid JSON \\udXXXX escape
    append_durably(path, line.encode("utf-8", "backslashreplace"))
    return path


def read_entries(backup_dir: Path) -> list[dict[str, Any]]:
    """Entries in order, as the JSON objects they are (the log may be older or newer than this code, or edited);
    a torn last line (a crash mid-append) or a line that is not a JSON object is skipped, not fatal."""
    path = Path(backup_dir) / CHANGELOG_NAME
    if not path.is_file():
        return []
    entries: list[dict[str, Any]] = []
    for raw in confine.read_bytes(path).decode("utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict):  # a readers' .get() on a bare number or list was a traceback
            entries.append(entry)
    return entries
