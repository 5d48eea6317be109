"""Owners and modes of what qwenmem creates in a workspace.

A root cron job must leave a user's workspace usable by that user, and a copy of a private file must stay private:
- everything new gets the owner (uid, gid) of the directory it is created in (only root can give that away);
- a replaced file keeps its own mode and owner; a copy keeps its source's mode (never wider);
- a new file in a private area (qwenmem's own data, sessions, dialog logs, offloaded tool results: conversation
  text; backup/: copies of MEMORY.md and the dream change log) is 0600 and a new directory there 0700; elsewhere a new file follows its directory's mode (never
  world-writable) and a new directory its parent's.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from qwenmem.core import confine

PRIVATE_AREAS = frozenset({".qwenmem", "sessions", "dialog", "tool_results", "backup"})
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def is_private(path: os.PathLike[str] | str) -> bool:
    root = confine.root_for(path)
    if root is None:
        return False
    rel = Path(os.path.abspath(path)).relative_to(root).parts
    return bool(rel) and rel[0] in PRIVATE_AREAS


def new_file_mode(path: os.PathLike[str] | str, dir_st: os.stat_result) -> int:
    if is_private(path):
        return 0o600
    return dir_st.st_mode & 0o664


def _running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def give_owner(fd: int, owner: tuple[int, int] | None, dir_fd: int) -> None:
    """As root, give the open file `owner`, else the owner of the directory `dir_fd` (no-op for other users: they
    own what they create, and could not give it away)."""
    if not _running_as_root():
        return
    if owner is None:
        dst = os.fstat(dir_fd)
        owner = (dst.st_uid, dst.st_gid)
    st = os.fstat(fd)
    if (st.st_uid, st.st_gid) != owner:
        os.fchown(fd, *owner)


def adopt_new_dir(dir_fd: int, name: str, path: Path) -> None:
    """Called for each directory qwenmem creates: private areas 0700, else the parent's mode; the parent's owner."""
    parent = os.fstat(dir_fd)
    fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    try:
        os.fchmod(fd, 0o700 if is_private(path) else stat.S_IMODE(parent.st_mode) & 0o775)
        give_owner(fd, (parent.st_uid, parent.st_gid), dir_fd)
    finally:
        os.close(fd)


def adopt_file(path: os.PathLike[str] | str, like: os.stat_result | None = None) -> None:
    """Give one file another library created (SQLite's backup copy, a rebuilt store) qwenmem's rules: the owner and
    mode of `like` (the file it stands in for), else its directory's owner and the mode its place calls for (0600
    in a private area). A link is not followed."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        dir_st = os.stat(path.parent)
        os.fchmod(fd, stat.S_IMODE(like.st_mode) if like is not None else new_file_mode(path, dir_st))
        owner = (like.st_uid, like.st_gid) if like is not None else (dir_st.st_uid, dir_st.st_gid)
        if _running_as_root() and (os.fstat(fd).st_uid, os.fstat(fd).st_gid) != owner:
            os.fchown(fd, *owner)
    finally:
        os.close(fd)


def adopt_tree(top: os.PathLike[str] | str) -> None:
    """Give files another library wrote under `top` (Whoosh's index segments) qwenmem's owner and mode rules:
    the owner of `top`'s parent, files 0600 and directories 0700 in a private area. Links are not followed."""
    top = Path(top)
    try:
        parent = os.stat(top.parent)
    except OSError:
        return
    private = is_private(top)
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        for name, is_dir in [(d, True) for d in dirnames] + [(f, False) for f in filenames]:
            full = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                st = os.lstat(full)
                if stat.S_ISLNK(st.st_mode):
                    continue
                if private:
                    os.chmod(full, 0o700 if is_dir else 0o600)
                if _running_as_root() and (st.st_uid, st.st_gid) != (parent.st_uid, parent.st_gid):
                    os.chown(full, parent.st_uid, parent.st_gid, follow_symlinks=False)
    with contextlib.suppress(OSError):
        if private:
            os.chmod(top, 0o700)
        if _running_as_root():
            os.chown(top, parent.st_uid, parent.st_gid, follow_symlinks=False)


def free_bytes(directory: os.PathLike[str] | str) -> int | None:
    """Bytes free for an unprivileged writer on the filesystem of `directory` (or its nearest existing parent)."""
    d = Path(directory)
    while not d.exists() and d != d.parent:
        d = d.parent
    try:
        sv = os.statvfs(d)
    except OSError:
        return None
    return sv.f_bavail * sv.f_frsize
