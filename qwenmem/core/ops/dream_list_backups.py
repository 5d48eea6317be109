"""`dream --list-backups`: the MEMORY.md backups and the recent dreams; writes nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

RECENT_DREAMS = 10


@dataclass(frozen=True)
class Options:
    """`dream --list-backups` takes no other flag."""


@dataclass
class BackupRow:
    name: str
    path: str
    size: int


@dataclass
class ListBackupsResult:
    """`dream --list-backups --json` result."""

    backups: list[BackupRow]  # oldest first
    recent: list[Any]  # the change log's last entries, as the JSON objects they are


def run(ws: Workspace, options: Options) -> Outcome[ListBackupsResult]:
    from qwenmem.core.dream.backups import list_backups
    from qwenmem.core.dream.changelog import read_entries
    from qwenmem.core.settings import load_settings

    with recording() as log:
        load_settings(ws)  # a broken agent.json fails here as it fails every other dream
        found = list_backups(ws)
        dreams = read_entries(ws.backup_dir)[-RECENT_DREAMS:]
    return Outcome("ok", ListBackupsResult([BackupRow(b.name, str(b.path), b.size) for b in found], dreams),
                   events=log.events)
