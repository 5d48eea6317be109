"""Keep-the-original-then-replace: the one way qwenmem changes a file that already exists in a workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from qwenmem.core.fsio import Snapshot, atomic_write_bytes, copy_preserving, ensure_unchanged, timestamp_slug
from qwenmem.core.errors import WorkspaceError
from qwenmem.core.workspace import Workspace


def preserve_original(ws: Workspace, path: Path, area: str = "quarantine", stamp: str | None = None) -> Path:
    """Copy `path` byte-for-byte to <workspace>/.qwenmem/<area>/<stamp>/<workspace-relative path>. Never deleted."""
    rel = ws.relative(path)
    if rel.startswith("/"):
        rel = Path(rel).name
    dest = ws.data_dir / area / (stamp or timestamp_slug()) / rel
    try:
        return copy_preserving(path, dest)
    except OSError as exc:  # e.g. .qwenmem/ on a full or read-only disk: the original stays untouched
        raise WorkspaceError(f"cannot keep a copy of {path} at {dest} ({exc.strerror or exc}); nothing was changed") from None


def replace_preserving(ws: Workspace, path: Path, data: bytes, expected: Snapshot, area: str = "backups",
                       stamp: str | None = None, kept_hook: Callable[[], None] | None = None,
                       mode: int | None = None) -> Path | None:
    """Refuse if `path` changed since `expected` was taken, copy its original bytes aside, then replace it atomically.

    Returns where the original went (None if the file did not exist before). `kept_hook` runs between the copy and
    the replace (crash-injection tests kill the process there); `mode` replaces the file's own mode.
    """
    ensure_unchanged(expected)
    kept = preserve_original(ws, path, area, stamp) if expected.exists else None
    if kept_hook is not None:
        kept_hook()
    atomic_write_bytes(path, data, expected, mode)
    return kept
