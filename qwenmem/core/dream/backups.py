"""backup/memory_backup_YYYYMMDD_HHMMSS.md: QwenPaw's own naming, so its users find them where they expect.

Unlike QwenPaw (which logs a failed copy and carries on), a backup here is verified by reading it back, and a
failure stops the dream before MEMORY.md is touched. An existing backup is never overwritten: a second backup in
the same second gets a _1, _2 … suffix, and the name is claimed with a hard link, which fails if it exists.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from qwenmem.core.errors import NotFoundError, UnsafePathError, WorkspaceError
from qwenmem.core.fsio import fsync_dir, write_new_bytes
from qwenmem.core.workspace import Workspace

BACKUP_RE = re.compile(r"^memory_backup_(\d{8}_\d{6})(?:_(\d+))?\.md$")


@dataclass(frozen=True)
class BackupInfo:
    name: str
    path: Path
    size: int
    stamp: str
    sequence: int
    mtime_ns: int

    @property
    def sort_key(self) -> tuple[int, str, int]:
        # Modification time first: name stamps are in whatever zone the writer used (QwenPaw: server local time,
        # qwenmem: the user's zone), so after a zone change the names alone would misorder old and new.
        return (self.mtime_ns, self.stamp, self.sequence)


def create_backup(ws: Workspace, data: bytes, now: datetime) -> Path:
    """Durably write `data` as a new backup file and check it reads back identically."""
    directory = ws.backup_dir
    base = f"memory_backup_{now:%Y%m%d_%H%M%S}"
    try:
        target = write_new_bytes(data, (directory / (f"{base}.md" if n == 0 else f"{base}_{n}.md")
                                        for n in range(10000)))
        if hashlib.sha256(target.read_bytes()).digest() != hashlib.sha256(data).digest():
            raise WorkspaceError(f"{target}: backup does not read back identically")
    except OSError as exc:
        raise WorkspaceError(f"cannot back up MEMORY.md into {directory}: {exc.strerror or exc}; "
                             "nothing was changed") from None
    return target


def list_backups(ws: Workspace) -> list[BackupInfo]:
    """Oldest first."""
    found: list[BackupInfo] = []
    if not ws.backup_dir.is_dir():
        return found
    for p in ws.backup_dir.iterdir():
        m = BACKUP_RE.match(p.name)
        if m and p.is_file() and not p.is_symlink():
            st = p.stat()
            found.append(BackupInfo(p.name, p, st.st_size, m.group(1), int(m.group(2) or 0), st.st_mtime_ns))
    return sorted(found, key=lambda b: b.sort_key)


def resolve_backup(ws: Workspace, name: str | None) -> Path:
    """A backup by file name or path (which must lie inside backup/), or the newest when no name is given."""
    backups = list_backups(ws)
    if not name:
        if not backups:
            raise NotFoundError(f"no MEMORY.md backups in {ws.backup_dir}")
        return backups[-1].path
    raw = Path(name)
    candidates = [raw] if raw.is_absolute() else [ws.backup_dir / raw, ws.path / raw]
    for candidate in candidates:
        real = candidate.resolve()
        if real.is_file():
            if ws.backup_dir.resolve() not in real.parents:
                raise UnsafePathError(f"{name}: not inside {ws.backup_dir}; only backups can be restored")
            return real
    names = ", ".join(b.name for b in backups[-3:])
    raise NotFoundError(f"backup {name!r} not found in {ws.backup_dir}" + (f" (newest: {names})" if names else ""))


def prune_backups(ws: Workspace, keep: int, dry_run: bool = False, pending: int = 0,
                  protect: Path | None = None) -> list[Path]:
    """Delete MEMORY.md backups beyond the newest `keep` (at least 1: the newest is never pruned).

    Only files named like memory_backup_*.md are candidates; nothing else in backup/ is ever deleted. `pending`
    counts backups a dry run would have created first (they would be the newest).
    """
    keep = max(1, int(keep))
    backups = [b for b in list_backups(ws) if protect is None or b.path.resolve() != Path(protect).resolve()]
    if protect is not None:
        keep -= 1  # the protected (just written) backup is the newest and counts towards `keep`
    room = keep - pending if pending else keep
    doomed = [b.path for b in backups][:max(len(backups) - room, 0)] if room < len(backups) else []
    doomed = doomed if room >= 0 else [b.path for b in backups]
    if not dry_run:
        for p in doomed:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        if doomed:
            fsync_dir(ws.backup_dir)
    return doomed
