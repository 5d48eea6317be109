"""Durable file primitives: every qwenmem write goes through here.

The recipe (peers.md §c4): write a temp file in the target's directory, fsync it, os.replace it over the
target, fsync the directory. Before replacing, the caller's snapshot of the target is compared with what is on
disk now, so a concurrent writer (QwenPaw itself) is never overwritten.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import itertools
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Iterable, Iterator

from qwenmem.core.errors import BusyError, ChangedUnderneathError, WorkspaceError


@dataclass(frozen=True)
class Snapshot:
    """What a file was when we read it: enough to notice that someone rewrote it since."""

    path: Path
    exists: bool
    size: int
    mtime_ns: int
    sha256: str

    @classmethod
    def of_bytes(cls, path: Path, data: bytes | None, st: os.stat_result | None) -> "Snapshot":
        if data is None or st is None:
            return cls(path, False, 0, 0, "")
        return cls(path, True, st.st_size, st.st_mtime_ns, hashlib.sha256(data).hexdigest())


def read_with_snapshot(path: Path, max_bytes: int | None = None) -> tuple[bytes, Snapshot]:
    """Read a whole file and remember its identity. Raises WorkspaceError for unreadable paths."""
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO named like a session or MEMORY.md must not hang a cron job (no effect on files)
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as fh:
            st = os.fstat(fh.fileno())
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError
            if not stat.S_ISREG(st.st_mode):
                raise WorkspaceError(f"{path}: not a regular file (device, FIFO or socket); not read")
            if max_bytes is not None and st.st_size > max_bytes:
                raise WorkspaceError(f"{path}: {st.st_size} bytes is over the {max_bytes}-byte limit")
            data = fh.read()
    except IsADirectoryError:
        raise WorkspaceError(f"{path}: is a directory, not a file") from None
    except PermissionError:
        raise WorkspaceError(f"{path}: permission denied") from None
    except FileNotFoundError:
        raise WorkspaceError(f"{path}: no such file") from None
    except OSError as exc:
        raise WorkspaceError(f"{path}: {exc.strerror or exc}") from None
    return data, Snapshot.of_bytes(path, data, st)


def snapshot(path: Path) -> Snapshot:
    path = Path(path)
    try:
        data, snap = read_with_snapshot(path)
    except WorkspaceError:
        if not path.exists():
            return Snapshot(path, False, 0, 0, "")
        raise
    return snap


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_unchanged(expected: Snapshot) -> None:
    """Raise ChangedUnderneathError if the file is no longer what `expected` describes."""
    current = snapshot(expected.path)
    if current.exists != expected.exists or current.sha256 != expected.sha256:
        raise ChangedUnderneathError(
            f"{expected.path}: changed on disk since it was read (is QwenPaw running?); nothing was written"
        )


def _unwritable(path: Path, exc: OSError) -> WorkspaceError:
    return WorkspaceError(f"{path}: cannot write ({exc.strerror or exc}); it was left as it was")


def atomic_write_bytes(path: Path, data: bytes, expected: Snapshot | None = None, mode: int | None = None) -> None:
    """Durably replace `path` with `data`.

    If `expected` is given, the target must still match it just before the rename; otherwise
    ChangedUnderneathError is raised and the target is left untouched. An OS error (read-only or immutable
    directory, disk full) becomes a one-line WorkspaceError; the target is untouched then too.
    """
    try:
        _atomic_write_bytes(Path(path), data, expected, mode)
    except OSError as exc:
        raise _unwritable(Path(path), exc) from None


def _atomic_write_bytes(path: Path, data: bytes, expected: Snapshot | None, mode: int | None) -> None:
    directory = path.parent
    _mkdirs(directory)
    try:
        st = path.stat()
        owner = (st.st_uid, st.st_gid)
        if mode is None:
            mode = st.st_mode & 0o777
    except FileNotFoundError:
        owner = None
        if mode is None:
            mode = 0o644
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".qwenmem-tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp_name, mode)
        _keep_owner(tmp_name, owner, directory)
        if expected is not None:
            ensure_unchanged(expected)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    fsync_dir(directory)


def _mkdirs(directory: Path) -> None:
    """mkdir -p; as root, each directory it creates gets its parent's owner (see _keep_owner)."""
    missing = []
    d = Path(directory)
    while not d.exists() and d != d.parent:
        missing.append(d)
        d = d.parent
    Path(directory).mkdir(parents=True, exist_ok=True)
    for created in reversed(missing):
        _keep_owner(str(created), None, created.parent)


def _keep_owner(tmp_name: str | int, owner: tuple[int, int] | None, directory: Path) -> None:
    """Run as root (sudo qwenmem …) on a user's workspace, a replaced file keeps its owner, and a new one gets its
    directory's, so QwenPaw (running as that user) can still write it afterwards."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    if owner is None:
        dst = directory.stat()
        owner = (dst.st_uid, dst.st_gid)
    if owner != (0, 0):
        os.chown(tmp_name, *owner)


def atomic_write_text(path: Path, text: str, expected: Snapshot | None = None) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), expected)


def append_durably(path: Path, data: bytes) -> None:
    """Append and fsync (for JSONL logs such as dialog/*.jsonl, which QwenPaw also only appends to). Appends always
    start on a fresh line."""
    try:
        _append_durably(Path(path), data)
    except OSError as exc:
        raise _unwritable(Path(path), exc) from None


def _append_durably(path: Path, data: bytes) -> None:
    _mkdirs(path.parent)
    created = not path.exists()
    with open(path, "ab+") as fh:
        if created:
            _keep_owner(fh.fileno(), None, path.parent)
        elif fh.seek(0, os.SEEK_END) > 0:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) != b"\n":  # the last line was cut (a crashed append): never glue our first line onto it
                data = b"\n" + data
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    if created:
        fsync_dir(path.parent)


def _numbered(dest: Path) -> Iterator[Path]:
    """dest, then dest.1, dest.2, … (before the suffix)."""
    yield dest
    for n in itertools.count(1):
        yield dest.with_name(f"{dest.stem}.{n}{dest.suffix}")


def _publish_new(tmp_name: str, candidates: Iterable[Path]) -> Path:
    """Give the fsynced temp file the first free name. os.link refuses to replace, so a name someone else took
    meanwhile is skipped rather than overwritten; then the temp name is dropped and the directory fsynced."""
    try:
        for candidate in candidates:
            try:
                os.link(tmp_name, candidate)
            except FileExistsError:
                continue
            fsync_dir(candidate.parent)
            return candidate
        raise WorkspaceError(f"no free file name for {Path(tmp_name).parent}")
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)


def _temp_beside(directory: Path, name: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".qwenmem-tmp", dir=directory)
    os.close(fd)
    return tmp_name


def copy_preserving(src: Path, dest: Path) -> Path:
    """Copy bytes and metadata to `dest` (or `dest.N` if taken) durably; never overwrites an existing file."""
    dest = Path(dest)
    tmp_name = _temp_beside(dest.parent, dest.name)
    try:
        shutil.copy2(src, tmp_name)
        with open(tmp_name, "rb+") as fh:
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    return _publish_new(tmp_name, _numbered(dest))


def write_new_bytes(data: bytes, candidates: Iterable[Path]) -> Path:
    """Durably write `data` under the first of `candidates` that does not exist yet (all in one directory)."""
    candidates = iter(candidates)
    first = next(candidates)
    tmp_name = _temp_beside(first.parent, first.name)
    try:
        with open(tmp_name, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    return _publish_new(tmp_name, itertools.chain([first], candidates))


def timestamp_slug(now: datetime | None = None) -> str:
    """A sortable, filesystem-safe timestamp with microseconds, so two runs in one second never collide."""
    now = now or datetime.now().astimezone()
    return now.strftime("%Y%m%dT%H%M%S") + f"{now.microsecond:06d}"


@contextlib.contextmanager
def exclusive_lock(lock_path: Path, what: str = "workspace"):
    """Hold a non-blocking exclusive flock for the duration of the block; BusyError if someone else has it."""
    lock_path = Path(lock_path)
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # a read-only or immutable workspace: nothing can be written, say so in one line
        raise WorkspaceError(f"cannot create the {what} lock {lock_path} ({exc.strerror or exc}); "
                             "nothing was written") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                holder = ""
                with contextlib.suppress(OSError):
                    holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
                suffix = f" (held by pid {holder})" if holder else ""
                raise BusyError(f"another qwenmem process holds the {what} lock {lock_path}{suffix}") from None
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
