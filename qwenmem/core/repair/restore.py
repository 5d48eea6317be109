"""`sessions restore`: put a quarantined original back, keeping the current file in a new quarantine run first."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

from qwenmem.core import confine
from qwenmem.core.errors import AmbiguousError, ChangedUnderneathError, NotFoundError
from qwenmem.core.fsio import exclusive_lock, read_with_snapshot, snapshot
from qwenmem.core.repair.quarantine import AREA, QuarantineRun, list_runs, originals_in_run, sha256
from qwenmem.core.safety import replace_preserving
from qwenmem.core.workspace import Workspace


RestoredStatus = Literal["restored", "would_restore", "unchanged", "changed"]


@dataclass
class RestoredFile:
    path: str
    source: str  # workspace-relative path of the quarantined original
    status: RestoredStatus
    kept_current: str | None = None  # where the file we replaced went


@dataclass
class RestoreResult:
    from_run: str
    files: list[RestoredFile] = field(default_factory=list)
    backup_run: str | None = None


def _originals(ws: Workspace, run_id: str) -> dict[str, Path]:
    return originals_in_run(ws.data_dir / AREA / run_id)


def _match_run(ws: Workspace, target: str) -> str | None:
    ids = [r.run_id for r in list_runs(ws)]
    if target in ids:
        return target
    prefixed = [i for i in ids if i.startswith(target)]
    if len(prefixed) > 1:
        raise AmbiguousError(f"{target!r} matches {len(prefixed)} quarantine runs: {', '.join(prefixed[:5])}")
    return prefixed[0] if prefixed else None


def _file_matches(rel: str, target: str) -> bool:
    key = rel.removeprefix("sessions/").removesuffix(".json")
    t = target.removeprefix("./")
    return t in (rel, key, Path(rel).name, Path(rel).stem) or rel.endswith("/" + t)


def plan_restore(ws: Workspace, target: str, run_id: str | None = None) -> tuple[str, dict[str, Path]]:
    """(run id, {workspace-relative path: quarantined original}) for a run id, or a session in the newest run."""
    if run_id is None:
        matched = _match_run(ws, target) if target else None
        if matched:
            return matched, _originals(ws, matched)
    runs = [r for r in list_runs(ws) if run_id is None or r.run_id == run_id]
    if run_id is not None and not runs:
        raise NotFoundError(f"no quarantine run {run_id!r} (run `qwenmem sessions restore` to list them)")
    for run in reversed(runs):  # newest first
        originals = {rel: p for rel, p in _originals(ws, run.run_id).items() if _file_matches(rel, target)}
        if len(originals) > 1:
            raise AmbiguousError(f"{target!r} matches {len(originals)} files in run {run.run_id}: "
                                 + ", ".join(sorted(originals)[:5]))
        if originals:
            return run.run_id, originals
    raise NotFoundError(f"nothing in quarantine matches {target!r} (run `qwenmem sessions restore` to list runs)")


def restore(ws: Workspace, target: str, run_id: str | None = None, dry_run: bool = False,
            before_write: Callable[[Path], None] | None = None) -> RestoreResult:
    chosen, originals = plan_restore(ws, target, run_id)
    result = RestoreResult(chosen)
    if dry_run:
        for rel, src in sorted(originals.items()):
            current = snapshot(ws.path / rel)
            same = current.exists and current.sha256 == sha256(confine.read_bytes(src))
            result.files.append(RestoredFile(rel, ws.relative(src), "unchanged" if same else "would_restore"))
        return result
    backup = QuarantineRun(ws, "restore")
    with exclusive_lock(ws.lock_path):
        for rel, src in sorted(originals.items()):
            dest = ws.resolve_inside(rel)
            original, _ = read_with_snapshot(src)
            current = snapshot(dest)
            if current.exists and current.sha256 == sha256(original):
                result.files.append(RestoredFile(rel, ws.relative(src), "unchanged"))
                continue
            if before_write is not None:
                before_write(dest)
            try:
                kept = replace_preserving(ws, dest, original, current, area=AREA, stamp=backup.run_id)
            except ChangedUnderneathError:
                result.files.append(RestoredFile(rel, ws.relative(src), "changed"))
                continue
            backup.record({"path": rel, "original": kept.relative_to(backup.directory).as_posix() if kept else None,
                           "original_sha256": current.sha256 if current.exists else None,
                           "restored_from": ws.relative(src), "result_sha256": sha256(original)})
            result.files.append(RestoredFile(rel, ws.relative(src), "restored", ws.relative(kept) if kept else None))
    result.backup_run = backup.run_id if backup.entries else None
    return result
