"""`dream --restore`: put a MEMORY.md backup back (the current file is backed up first)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.dream.run import RestoreResult


@dataclass(frozen=True)
class Options:
    """The flags of `qwenmem dream --restore`, with the CLI's defaults."""

    backup: str | None = None  # the backup's name; None: the newest
    dry_run: bool = False
    keep: int | None = None  # afterwards, delete backups beyond the newest N


def run(ws: Workspace, options: Options) -> Outcome[RestoreResult]:
    from qwenmem.core.dream.run import restore
    from qwenmem.core.settings import load_settings

    with recording() as log:
        result = restore(ws, load_settings(ws), options.backup, options.dry_run, options.keep)
    return Outcome("ok", result, events=log.events)
