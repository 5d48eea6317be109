"""What an upgrade changed, written before it changes anything, so `qwenmem upgrade --undo` can put it back.

`<workspace>/.qwenmem/upgrade/<stamp>/journal.json`, beside byte copies of every original the run replaces
(`originals/<workspace-relative path>`). Per file: its sha256 before and the sha256 the upgrade writes (the
conversion is deterministic, so both are known before the first write). Per history.db session: the dedup keys
the upgrade adds (keys that were there before are not its own and stay). Per dialog file: its size before the
appends. The journal is complete (`done: true`) only after the last write; a rerun after a kill continues the
newest incomplete journal, so one undo covers the whole upgrade.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from qwenmem.core.fsio import atomic_write_bytes, make_dirs, timestamp_slug
from qwenmem.core.workspace import Workspace

AREA = "upgrade"
NAME = "journal.json"
FORMAT = 1


@dataclass
class FileChange:
    rel: str
    before_sha256: str | None  # None: the upgrade created it
    after_sha256: str
    original: str | None  # the copy of the original, relative to the journal's directory


@dataclass
class Journal:
    directory: str
    strategy: str
    created_store: bool = False
    files: list[FileChange] = field(default_factory=list)
    rows: dict[str, list[str]] = field(default_factory=dict)  # session_id -> dedup keys the upgrade adds
    dialog_sizes: dict[str, int] = field(default_factory=dict)  # dialog file rel -> size before the appends
    snapshot: str | None = None
    retention_days: int | None = None  # decided once: a rerun after a kill writes the same agent.json
    done: bool = False

    @property
    def path(self) -> Path:
        return Path(self.directory) / NAME

    def file(self, rel: str) -> FileChange | None:
        return next((f for f in self.files if f.rel == rel), None)

    def save(self) -> None:
        doc = {"qwenmem_upgrade": FORMAT, **asdict(self)}
        atomic_write_bytes(self.path, (json.dumps(doc, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))


def area(ws: Workspace) -> Path:
    return ws.data_dir / AREA


def _load(path: Path) -> Journal | None:
    try:
        doc: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("qwenmem_upgrade") != FORMAT:
        return None
    files = [FileChange(**f) for f in doc.get("files") or []]
    return Journal(str(path.parent), doc["strategy"], bool(doc.get("created_store")), files,
                   dict(doc.get("rows") or {}), dict(doc.get("dialog_sizes") or {}), doc.get("snapshot"),
                   doc.get("retention_days"), bool(doc.get("done")))


def journals(ws: Workspace) -> list[Journal]:
    """Every readable journal, oldest first."""
    base = area(ws)
    if not base.is_dir():
        return []
    found = (_load(p / NAME) for p in sorted(base.iterdir()) if (p / NAME).is_file())
    return [j for j in found if j is not None]


def unfinished(ws: Workspace) -> Journal | None:
    """The newest journal when a killed run left it incomplete."""
    found = journals(ws)
    return found[-1] if found and not found[-1].done else None


def open_journal(ws: Workspace, strategy: str) -> Journal:
    """The newest incomplete journal (a killed run's), else a new one (not yet written)."""
    found = journals(ws)
    if found and not found[-1].done:
        return found[-1]
    directory = make_dirs(area(ws)) / timestamp_slug()
    suffix = 1
    while directory.exists():
        directory = directory.with_name(f"{directory.name.split('.')[0]}.{suffix}")
        suffix += 1
    make_dirs(directory)
    return Journal(str(directory), strategy)
