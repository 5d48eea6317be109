"""Where history.db is and what state it is in: the summary `info` and `doctor` show."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, Mapping

from qwenmem.core.history.store import CORRUPT, LOCKED, MISSING, HistoryError, HistoryProblem, confine_store, open_history
from qwenmem.core.settings.gen2 import load_gen2_settings
from qwenmem.core.workspace import Workspace

OK: Final = "ok"
HistoryStatus = Literal["ok", HistoryProblem]
_QUARANTINE = re.compile(r"\.corrupt-\d{8}T\d{6}$")


def quarantined_siblings(path: Path) -> list[Path]:
    """`history.db.corrupt-<YYYYmmddTHHMMSS>` stores QwenPaw renamed aside (spec §3.6); their sidecars are skipped."""
    try:
        return sorted(p for p in path.parent.glob(f"{path.name}.corrupt-*") if _QUARANTINE.search(p.name))
    except OSError:
        return []


@dataclass
class HistoryState:
    path: str
    exists: bool
    size: int = 0  # the database file
    wal_size: int | None = None  # None: no -wal sidecar
    rows: int | None = None
    sessions: int | None = None
    user_version: int | None = None
    status: HistoryStatus = MISSING
    detail: str = ""
    via_copy: bool = False
    quarantined: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "exists": self.exists, "size": self.size, "wal_size": self.wal_size,
                "rows": self.rows, "sessions": self.sessions, "user_version": self.user_version,
                "status": self.status, "detail": self.detail, "quarantined": self.quarantined}


def history_state(path: Path, check: bool = True) -> HistoryState:
    """Path, size, rows and health of one history.db. `check` runs PRAGMA quick_check (seconds on a big store).
    Never raises for a bad database: the problem is in `status` / `detail`; a store linked out of the workspace is
    refused (UnsafeLinkError) before it is even looked at."""
    path = Path(path)
    confine_store(path)
    state = HistoryState(str(path), path.exists(), quarantined=[str(p) for p in quarantined_siblings(path)])
    if not state.exists:
        state.detail = "no history database"
        return state
    try:
        state.size = path.stat().st_size
        wal = Path(f"{path}-wal")
        state.wal_size = wal.stat().st_size if wal.exists() else None
    except OSError as exc:
        state.status, state.detail = "unreadable", f"cannot stat: {exc.strerror or exc}"
        return state
    try:
        with open_history(path) as reader:
            state.via_copy = reader.via_copy
            state.user_version = reader.user_version()
            counts = reader.counts_by_session()
            state.rows, state.sessions = sum(counts.values()), len(counts)
            verdict = reader.quick_check() if check else OK
    except HistoryError as exc:
        state.status, state.detail = exc.kind, exc.detail
        return state
    if verdict != OK:
        state.status, state.detail = CORRUPT, f"quick_check: {verdict}"
    else:
        state.status = OK
        if state.user_version is not None and state.user_version > 1:
            state.detail = f"user_version {state.user_version} is newer than QwenPaw 2.2 writes (1)"
    return state


def workspace_history_state(ws: Workspace, check: bool = True, env: Mapping[str, str] | None = None
                            ) -> HistoryState:
    """The history.db summary of a workspace for `doctor`: path (from agent.json scroll_config.db_filename), size,
    rows, sessions and `status` ok / corrupt / locked / unreadable / not_history / missing (see
    history_state). Never raises for a damaged store; an unreadable agent.json raises ConfigError."""
    return history_state(load_gen2_settings(ws, env=env).history_db_file(), check=check)


__all__ = ["CORRUPT", "LOCKED", "HistoryState", "history_state", "quarantined_siblings", "workspace_history_state"]
