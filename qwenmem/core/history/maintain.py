"""Workspace-level history maintenance: salvage into the live store, and rebuilding its full-text table.

Everything here takes the workspace lock, keeps the original bytes in a quarantine run first, and writes the live
store only through SQLite transactions (or, for a store that is itself corrupt and that no process holds open, by
building a new one beside it and renaming it into place).
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from qwenmem.core.busy import writers_of
from qwenmem.core.errors import BusyError, NotFoundError, QwenmemError, WorkspaceError
from qwenmem.core.fsio import exclusive_lock, fsync_all, fsync_dir
from qwenmem.core.history import salvage as sv
from qwenmem.core.history.rows import COLUMNS
from qwenmem.core.history.state import history_state
from qwenmem.core.history.store import TABLE, confine_store
from qwenmem.core.settings.gen2 import load_gen2_settings
from qwenmem.core.workspace import Workspace

SalvageAction = Literal["merged", "rebuilt", "created", "nothing to salvage"]
MERGED: Final = "merged"
REBUILT: Final = "rebuilt"
CREATED: Final = "created"
NOTHING: Final = "nothing to salvage"


def live_history_path(ws: Workspace) -> Path:
    """The agent's history.db; one reached through a link that leaves the workspace is refused (UnsafeLinkError),
    as is an absolute `db_filename` outside it: qwenmem never writes outside the workspace."""
    path = load_gen2_settings(ws).history_db
    path = path if path is not None else ws.path / "history.db"
    confine_store(path)  # first: a link out is exit 6 with the link named, as everywhere else
    ws.resolve_inside(path)
    return path


@dataclass
class SourceReport:
    path: str
    method: str  # "page reader"
    rows_read: int
    from_lost_and_found: int  # rows from pages the table's b-tree no longer reaches
    notices: list[str] = field(default_factory=list)
    partial_rows: int = 0  # rows read only in part (cut by the damage): not written, kept in the quarantine
    scan_only: int = 0  # whole rows only SQLite's b-tree scan read (the cross-check; none expected)
    rows_from_wal: int = 0  # rows read from committed frames of the source's -wal
    cut_seqs: list[int] = field(default_factory=list)  # the partial rows, by seq
    missing_seqs: list[int] = field(default_factory=list)  # rows its indexes or FTS name, found on no page
    lost_pages: int = 0  # leaf pages of the table that are gone (an unknown number of rows with them)


@dataclass
class SalvageResult:
    live: str
    action: SalvageAction
    dry_run: bool
    sources: list[SourceReport] = field(default_factory=list)
    inserted: int = 0
    kept_seq: int = 0
    renumbered: int = 0
    already_present: int = 0
    quarantine: str | None = None  # workspace-relative run directory holding the originals
    complete: bool = True  # every row known to exist was recovered whole (else exit 1)
    notices: list[str] = field(default_factory=list)


def _sources(ws: Workspace, live: Path, from_file: Path | None) -> tuple[list[Path], bool]:
    """(files to read rows from, whether the live store itself is corrupt and must be rebuilt)."""
    if from_file is not None:
        source = ws.resolve_inside(from_file)
        if not source.is_file():
            raise NotFoundError(f"{from_file}: no such file")
        return [source], False
    state = history_state(live, check=True)
    live_corrupt = state.status == "corrupt"
    sources = [Path(q) for q in state.quarantined]
    return ([live] if live_corrupt else []) + sources, live_corrupt


def salvage(ws: Workspace, from_file: Path | None = None, dry_run: bool = False) -> SalvageResult:
    live = live_history_path(ws)
    sources, live_corrupt = _sources(ws, live, from_file)
    result = SalvageResult(str(live), NOTHING, dry_run)
    if not sources:
        result.notices.append("the live store is healthy and no .corrupt-<ts> copy sits beside it; name one with "
                              "--from to salvage it")
        return result
    rows: dict[int, sv.Row] = {}
    recovered: list[sv.Recovered] = []
    for source in sources:
        got = sv.recover_rows(source)
        recovered.append(got)
        result.sources.append(SourceReport(str(source), got.method, len(got.rows), got.from_lost_and_found,
                                           got.notices, len(got.partial), got.scan_only, got.from_wal,
                                           got.partial, got.missing, got.lost_pages))
        result.complete = result.complete and got.complete
        for row in got.rows:
            rows.setdefault(row[0], row)  # the same seq in two copies: the first source (the live one) wins
    ordered = list(rows.values())
    if live_corrupt or not live.exists():
        result.action = REBUILT if live_corrupt else CREATED
        result.inserted = result.kept_seq = len(ordered)
        if not dry_run:
            with exclusive_lock(ws.lock_path):
                floor = recovered[0].rows_on_pages if live_corrupt else 0
                result.quarantine = _rebuild(ws, live, sources, ordered, live_corrupt, floor, recovered)
        return result
    result.action = MERGED
    if dry_run:
        counts = sv.merge_rows(live, ordered, dry_run=True)
    else:
        with exclusive_lock(ws.lock_path):
            run = _quarantine(ws, sources, live, recovered)
            result.quarantine = ws.relative(run)
            counts = sv.merge_rows(live, ordered)
    result.inserted, result.kept_seq = counts.inserted, counts.kept_seq
    result.renumbered, result.already_present = counts.renumbered, counts.already_present
    if counts.renumbered:
        result.notices.append(f"{counts.renumbered} row(s) got a new seq (theirs was taken in the live store): "
                              "eviction blocks that point at the old numbers stay dangling")
    return result


def _run_dir(ws: Workspace) -> Path:
    from qwenmem.core.fsio import make_new_dir, timestamp_slug

    return make_new_dir(ws.data_dir / "quarantine" / f"{timestamp_slug()}-history")


def _backup_copy(live: Path, dest: Path) -> None:
    """sv.backup_copy, and the copy made private and given the workspace's owner (SQLite creates it 0644, as root
    when run from a root cron job: the whole conversation history, readable by every local user)."""
    from qwenmem.core.modes import adopt_file

    sv.backup_copy(live, dest)
    adopt_file(dest)


def _keep(ws: Workspace, run: Path, path: Path) -> None:
    from qwenmem.core.fsio import copy_preserving

    for candidate in (path, Path(f"{path}-wal")):
        if candidate.is_file():
            try:
                copy_preserving(candidate, run / candidate.name)
            except OSError as exc:
                raise WorkspaceError(f"cannot keep a copy of {candidate} in {run} ({exc.strerror or exc}); "
                                     "nothing was changed") from None


def _keep_cut(run: Path, recovered: list[sv.Recovered]) -> None:
    """What could be read of the rows the damage cut, one JSON line each (the bytes are in the copies beside it)."""
    from qwenmem.core.fsio import write_new_bytes

    lines = [json.dumps({"source": got.source, "seq": cut.seq, "reason": cut.reason,
                         "row": {name: (v.hex() if isinstance(v, bytes) else v) for name, v in zip(COLUMNS, cut.row)}},
                        ensure_ascii=False) for got in recovered for cut in got.cut]
    if lines:
        write_new_bytes(("\n".join(lines) + "\n").encode(), [run / "cut-rows.jsonl"], mode=0o600)


def _quarantine(ws: Workspace, sources: list[Path], live: Path, recovered: list[sv.Recovered]) -> Path:
    run = _run_dir(ws)
    for source in sources:
        _keep(ws, run, source)
    _keep_cut(run, recovered)
    try:
        _backup_copy(live, run / f"{live.name}.before-salvage")
    except sqlite3.OperationalError as exc:
        raise BusyError(f"{live}: cannot take a consistent copy before writing ({exc}); nothing was written") from None
    fsync_dir(run)  # the copy's name (SQLite made the file in place and fsynced only its bytes)
    return run


def _rebuild(ws: Workspace, live: Path, sources: list[Path], rows: list[sv.Row], live_corrupt: bool, floor: int,
             recovered: list[sv.Recovered]) -> str:
    """Build a new store from `rows` beside the live one and rename it into place, unless it would hold fewer
    rows than `floor` (the whole rows the damaged live file still has on its pages): then nothing is replaced."""
    from qwenmem.core.modes import adopt_file

    if live_corrupt:
        holders = writers_of(live)
        if holders:
            raise BusyError(f"{live} is open in {', '.join(map(str, holders))}: stop QwenPaw before rebuilding a "
                            "corrupt store (it renames it aside itself at its next start; salvage that copy then)")
    run = _run_dir(ws)
    for source in sources:
        _keep(ws, run, source)
    _keep_cut(run, recovered)
    tmp = live.with_name(f".{live.name}.qwenmem-salvage-{os.getpid()}")
    for stale in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        stale.unlink(missing_ok=True)  # our own leftover from a killed run (pid-named), never QwenPaw's file
    held = sv.build_store(tmp, rows)
    if held < floor:
        for ours in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            ours.unlink(missing_ok=True)
        raise QwenmemError(f"{live}: the rebuilt store would hold {held:,} rows, fewer than the {floor:,} whole rows "
                           f"still on the damaged file's pages; nothing was replaced (copies in {ws.relative(run)})")
    # the new store is the agent's: the old one's owner and mode (a root cron run must not lock QwenPaw out of it)
    adopt_file(tmp, like=live.stat() if live.is_file() else None)
    for sidecar in (Path(f"{live}-wal"), Path(f"{live}-shm")):
        if sidecar.exists():  # the corrupt store's journal must not be applied to the new one; its bytes are kept
            moved = run / f"{sidecar.name}.moved"
            os.replace(sidecar, moved)
            os.chmod(moved, stat.S_IMODE(moved.lstat().st_mode) & 0o600)  # private, as all of .qwenmem/
    fsync_all([run, live.parent])  # the moved journal's bytes kept in the quarantine before the store is replaced
    os.replace(tmp, live)
    for leftover in (Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        leftover.unlink(missing_ok=True)
    fsync_dir(live.parent)
    return ws.relative(run)


@dataclass
class FtsRebuild:
    live: str
    dry_run: bool
    needed: bool
    documents_before: int = 0
    documents_after: int = 0
    quarantine: str | None = None


def rebuild_fts(ws: Workspace, dry_run: bool = False, force: bool = False) -> FtsRebuild:
    """Re-create the full-text table's documents from the rows (all but the recall tools'), in one transaction."""
    from qwenmem.core.history.check import check_history

    live = live_history_path(ws)
    if not live.is_file():
        raise NotFoundError(f"{live}: no history database")
    check = check_history(live, deep=True)
    needed = check.fts == "disagrees"
    if check.fts == "absent":
        raise WorkspaceError(f"{live} has no full-text table (SQLite without FTS5); there is nothing to rebuild")
    conn = sv._connect_rw(live) if not dry_run else None
    result = FtsRebuild(str(live), dry_run, needed)
    if conn is None or not (needed or force):
        return result
    try:
        with exclusive_lock(ws.lock_path):
            run = _run_dir(ws)
            _backup_copy(live, run / f"{live.name}.before-rebuild-fts")
            result.quarantine = ws.relative(run)
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise BusyError(f"{live}: locked by another process ({exc}); nothing was written") from None
            try:
                (result.documents_before,) = conn.execute(f"SELECT count(*) FROM {sv.FTS}_docsize").fetchone()
                conn.execute(f"INSERT INTO {sv.FTS}({sv.FTS}) VALUES('delete-all')")
                marks = ", ".join("?" for _ in sv.RECALL_TOOLS)
                conn.execute(f"INSERT INTO {sv.FTS}(rowid, content) SELECT seq, content FROM {TABLE} "
                             f"WHERE name IS NULL OR name NOT IN ({marks})", sv.RECALL_TOOLS)
                (result.documents_after,) = conn.execute(f"SELECT count(*) FROM {sv.FTS}_docsize").fetchone()
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
    finally:
        conn.close()
    return result
