"""Durable file primitives: every qwenmem write goes through here.

The recipe (peers.md §c4): write a temp file in the target's directory, fsync it, os.replace it over the
target (or link it to a new name), fsync the directory; every directory made on the way is fsynced in its parent
before anything is put in it (`make_dirs`). Before replacing, the caller's snapshot of the target is compared with
what is on disk now, so a concurrent writer (QwenPaw itself) is never overwritten. Stores that write their own
temporaries (the snapshot objects, Whoosh's segments) publish them with `fsync_all` + `publish_file`, the same
steps. tests/contract/test_publish_trace.py checks every command's writes against this with strace.
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
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator

from qwenmem.core import confine, events, interrupts, modes
from qwenmem.core.tempnames import remove_stale_temporaries, temp_name_for
from qwenmem.core.errors import (BusyError, ChangedUnderneathError, DiskFullError, QwenmemError, UnsafeLinkError,
                                 WorkspaceError)


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
    """Read a whole file and remember its identity. Raises WorkspaceError for unreadable paths, UnsafeLinkError
    for a path through a link that leaves the workspace (qwenmem.core.confine)."""
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO named like a session or MEMORY.md must not hang a cron job (no effect on files)
        with confine.open_binary(path) as fh:
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
    except confine.NotRegularFileError:
        raise WorkspaceError(f"{path}: not a regular file (device, FIFO or socket); not read") from None
    except PermissionError:
        raise WorkspaceError(f"{path}: permission denied") from None
    except FileNotFoundError:
        raise WorkspaceError(f"{path}: no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # outside any workspace, or a race: the same one line as a confined loop
            raise UnsafeLinkError(f"{path}: a symlink loop; not followed") from None
        raise WorkspaceError(f"{path}: {exc.strerror or exc}") from None
    return data, Snapshot.of_bytes(path, data, st)


def snapshot(path: Path) -> Snapshot:
    path = Path(path)
    try:
        data, snap = read_with_snapshot(path)
    except UnsafeLinkError:
        raise
    except WorkspaceError:
        if not os.path.lexists(path):
            return Snapshot(path, False, 0, 0, "")
        raise
    return snap


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_path(path: Path | str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_all(paths: Iterable[Path | str]) -> None:
    """fsync many files (or directories) at once. Serial fsyncs cost a journal commit each (~4-6 ms here); issued
    together from a thread pool the filesystem commits them as a group (500 files: 1.7 s -> 0.08 s)."""
    todo = list(dict.fromkeys(str(p) for p in paths))
    if len(todo) <= 2:
        for p in todo:
            _fsync_path(p)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(32, len(todo)), thread_name_prefix="fsync") as pool:
        list(pool.map(_fsync_path, todo))  # list(): an error of any fsync is raised here


def new_dir_made(dir_fd: int, name: str, path: Path) -> None:
    """The hook for every directory qwenmem makes: its owner and mode (qwenmem.core.modes), then an fsync of the
    parent, so a power cut cannot keep what is written inside it while losing the directory itself."""
    modes.adopt_new_dir(dir_fd, name, path)
    os.fsync(dir_fd)


def make_dirs(directory: Path | str) -> Path:
    """`mkdir -p`, confined and durable: each directory made gets its place's owner and mode and is fsynced in its
    parent (new_dir_made). Returns the directory."""
    directory = Path(directory)
    with confine.parent_of(directory / "_", create_dirs=True, on_new_dir=new_dir_made):
        pass
    return directory


def make_new_dir(directory: Path | str) -> Path:
    """mkdir of a directory that must not exist yet (FileExistsError), its parents made as make_dirs does; the new
    directory gets its place's owner and mode and is fsynced in its parent."""
    directory = Path(directory)
    make_dirs(directory.parent)
    with confine.parent_of(directory, follow_last=False) as where:
        os.mkdir(where.name, 0o700, dir_fd=where.dir_fd)
        new_dir_made(where.dir_fd, where.name, directory)
    return directory


def publish_file(tmp: Path | str, final: Path | str, *, replace: bool = True) -> bool:
    """Give an fsynced temporary its name in the same directory: os.replace (`replace`) or a hard link that refuses
    to overwrite (the temporary is dropped either way), then fsync the directory. False when `replace` is off and
    the name was taken (the same bytes, for a content-addressed name)."""
    tmp, final = Path(tmp), Path(final)
    if tmp.parent != final.parent:
        raise ValueError(f"{tmp} and {final} are not in one directory")
    with interrupts.deferred():
        dfd = os.open(final.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            return _publish(dfd, tmp.name, final.name, replace)
        finally:
            os.close(dfd)


def publish_files(pairs: Iterable[tuple[Path, Path]], *, replace: bool = False) -> list[bool]:
    """Publish many temporaries at once (a snapshot's objects), with the steps of publish_file: fsync every
    temporary (together), make each target directory (make_dirs: fsynced in its parent), rename or link each
    (a refused link drops its temporary), then fsync every target directory (together). When this returns, every
    name is durable, so a manifest naming them may follow. Returns, per pair, whether its name was newly made."""
    pairs = [(Path(t), Path(f)) for t, f in pairs]
    if not pairs:
        return []
    fsync_all(tmp for tmp, _ in pairs)
    parents = list(dict.fromkeys(final.parent for _, final in pairs))
    made: list[bool] = []
    with interrupts.deferred():
        for d in parents:
            make_dirs(d)
        for tmp, final in pairs:
            if replace:
                os.replace(tmp, final)
                made.append(True)
                continue
            try:
                os.link(tmp, final, follow_symlinks=False)
                made.append(True)
            except FileExistsError:
                made.append(False)
            os.unlink(tmp)
        fsync_all(parents)
    return made


def _publish(dfd: int, tmp_name: str, name: str, replace: bool) -> bool:
    """The publish step every write ends with: rename or link the (fsynced) temporary, then fsync its directory."""
    if replace:
        os.replace(tmp_name, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    else:
        try:
            os.link(tmp_name, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
        except FileExistsError:
            os.unlink(tmp_name, dir_fd=dfd)
            return False
        os.unlink(tmp_name, dir_fd=dfd)
    os.fsync(dfd)
    return True


def ensure_unchanged(expected: Snapshot) -> None:
    """Raise ChangedUnderneathError if the file is no longer what `expected` describes."""
    current = snapshot(expected.path)
    if current.exists != expected.exists or current.sha256 != expected.sha256:
        raise ChangedUnderneathError(
            f"{expected.path}: changed on disk since it was read (is QwenPaw running?); nothing was written"
        )


def _unwritable(path: Path, exc: OSError) -> WorkspaceError:
    if exc.errno in _NO_SPACE:
        return _disk_full(Path(path), "it was left as it was")
    return WorkspaceError(f"{path}: cannot write ({exc.strerror or exc}); it was left as it was")


def _disk_full(path: Path, outcome: str) -> DiskFullError:
    free = modes.free_bytes(path.parent)
    room = f"{free} bytes free" if free is not None else "free space unknown"
    message = f"{path}: no space left on the device ({room}); {outcome}"
    events.disk_full(message)  # an event of this call (qwenmem.core.events): one that went on past it exits DISK_FULL
    return DiskFullError(message)


def as_domain_error(exc: OSError, path: Path | str | None = None, outcome: str = "stopped there") -> QwenmemError:
    """An OS error that escaped a command (a full disk, a directory it may not read) as one line with a
    documented exit code, instead of an internal error: DiskFullError (with the free space), UnsafeLinkError
    for a symlink loop, WorkspaceError for permission denied and the rest."""
    where = Path(path or exc.filename or "a file")
    if exc.errno in _NO_SPACE:
        return _disk_full(where, outcome)
    if exc.errno == errno.ELOOP:
        return UnsafeLinkError(f"{where}: a symlink loop; not followed")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return WorkspaceError(f"{where}: permission denied; {outcome}")
    return WorkspaceError(f"{where}: {exc.strerror or exc}; {outcome}")


_NO_SPACE = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def atomic_write_bytes(path: Path, data: bytes, expected: Snapshot | None = None, mode: int | None = None) -> None:
    """Durably replace `path` with `data`.

    If `expected` is given, the target must still match it just before the rename; otherwise
    ChangedUnderneathError is raised and the target is left untouched. An OS error (read-only or immutable
    directory, disk full) becomes a one-line WorkspaceError; the target is untouched then too. A replaced file
    keeps its mode and owner; a new one gets `mode`, else the mode its place calls for (qwenmem.core.modes), and
    its directory's owner.
    """
    try:
        with interrupts.deferred():  # Ctrl-C / SIGTERM wait for the rename: no temporary is left behind
            _atomic_write_bytes(Path(path), data, expected, mode)
    except OSError as exc:
        raise _unwritable(Path(path), exc) from None


def _atomic_write_bytes(path: Path, data: bytes, expected: Snapshot | None, mode: int | None) -> None:
    with confine.parent_of(path, create_dirs=True, on_new_dir=new_dir_made) as where:
        dfd, name = where.dir_fd, where.name
        st = where.stat()
        if st is not None and stat.S_ISREG(st.st_mode):
            owner: tuple[int, int] | None = (st.st_uid, st.st_gid)
            mode = st.st_mode & 0o777 if mode is None else mode
        else:
            owner = None
            mode = modes.new_file_mode(path, os.fstat(dfd)) if mode is None else mode
        tmp_name, fd = _create_temp(dfd, name)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
                os.fchmod(fh.fileno(), mode)
                modes.give_owner(fh.fileno(), owner, dfd)
            if expected is not None:
                ensure_unchanged(expected)
            _publish(dfd, tmp_name, name, replace=True)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name, dir_fd=dfd)
            raise


def _create_temp(dfd: int, name: str) -> tuple[str, int]:
    """A new, empty 0600 temporary beside `name` (never wider than what it will become: the mode is set last)."""
    for _ in range(100):
        tmp_name = temp_name_for(name)
        try:
            fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=dfd)
        except FileExistsError:
            continue
        os.fchmod(fd, 0o600)  # whatever the umask
        return tmp_name, fd
    raise FileExistsError(errno.EEXIST, "no free temporary name", name)


def append_durably(path: Path, data: bytes, mode: int | None = None) -> None:
    """Append and fsync (for JSONL logs such as dialog/*.jsonl, which QwenPaw also only appends to). Appends always
    start on a fresh line. A new file gets `mode`, else the mode its place calls for, and its directory's owner."""
    try:
        with interrupts.deferred():
            _append_durably(Path(path), data, mode)
    except OSError as exc:
        raise _unwritable(Path(path), exc) from None


def _append_durably(path: Path, data: bytes, mode: int | None) -> None:
    with confine.parent_of(path, create_dirs=True, on_new_dir=new_dir_made) as where:
        dfd = where.dir_fd
        created = where.stat() is None
        new_mode = modes.new_file_mode(path, os.fstat(dfd)) if mode is None else mode
        fd = os.open(where.name, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                     dir_fd=dfd)
        with os.fdopen(fd, "rb+") as fh:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise WorkspaceError(f"{path}: not a regular file; nothing appended")
            if created:
                os.fchmod(fd, new_mode)
                modes.give_owner(fd, None, dfd)
            elif st.st_size > 0 and os.pread(fd, 1, st.st_size - 1) != b"\n":
                data = b"\n" + data  # the last line was cut (a crashed append): never glue our first line onto it
            fh.write(data)
            fh.flush()
            os.fsync(fd)
        if created:
            os.fsync(dfd)


def _numbered(dest: Path) -> Iterator[Path]:
    """dest, then dest.1, dest.2, … (before the suffix)."""
    yield dest
    for n in itertools.count(1):
        yield dest.with_name(f"{dest.stem}.{n}{dest.suffix}")


def _publish_new(dfd: int, tmp_name: str, directory: Path, candidates: Iterable[Path]) -> Path:
    """Give the fsynced temp file the first free name. os.link refuses to replace, so a name someone else took
    meanwhile is skipped rather than overwritten; then the temp name is dropped and the directory fsynced."""
    try:
        for candidate in candidates:
            try:
                os.link(tmp_name, candidate.name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
            except FileExistsError:
                continue
            os.unlink(tmp_name, dir_fd=dfd)
            os.fsync(dfd)
            return directory / candidate.name
        raise WorkspaceError(f"no free file name in {directory}")
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name, dir_fd=dfd)


def copy_preserving(src: Path, dest: Path) -> Path:
    """Copy bytes, mode (never wider than the source's, nor than 0600 in a private area such as .qwenmem/) and
    times to `dest` (or `dest.N` if taken) durably; never overwrites an existing file. The copy gets its
    directory's owner."""
    dest = Path(dest)
    try:
        with confine.open_binary(src) as source:
            sst = os.fstat(source.fileno())
            if not stat.S_ISREG(sst.st_mode):
                raise WorkspaceError(f"{src}: not a regular file; not copied")
            mode = sst.st_mode & (0o600 if modes.is_private(dest) else 0o777)  # a quarantine copy stays private
            return _write_new(dest.parent, _numbered(dest), lambda fh: shutil.copyfileobj(source, fh, 1 << 20),
                              mode, sst)
    except OSError as exc:
        raise _unwritable(dest, exc) if exc.errno in _NO_SPACE else exc


def write_new_bytes(data: bytes, candidates: Iterable[Path], mode: int | None = None) -> Path:
    """Durably write `data` under the first of `candidates` that does not exist yet (all in one directory)."""
    candidates = iter(candidates)
    first = next(candidates)
    try:
        return _write_new(first.parent, itertools.chain([first], candidates), lambda fh: fh.write(data), mode, None)
    except OSError as exc:
        raise _unwritable(first, exc) if exc.errno in _NO_SPACE else exc


def _write_new(directory: Path, candidates: Iterable[Path], fill: Callable[[BinaryIO], object], mode: int | None,
               times_from: os.stat_result | None) -> Path:
    with interrupts.deferred(), \
            confine.parent_of(directory / "_", create_dirs=True, on_new_dir=new_dir_made) as where:
        dfd = where.dir_fd
        real_dir = where.real.parent
        candidates = iter(candidates)
        first = next(candidates)
        tmp_name, fd = _create_temp(dfd, first.name)
        try:
            with os.fdopen(fd, "wb") as fh:
                fill(fh)
                fh.flush()
                if times_from is not None:
                    os.utime(fh.fileno(), ns=(times_from.st_atime_ns, times_from.st_mtime_ns))
                os.fsync(fh.fileno())
                os.fchmod(fh.fileno(), modes.new_file_mode(real_dir / "_", os.fstat(dfd)) if mode is None else mode)
                modes.give_owner(fh.fileno(), None, dfd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name, dir_fd=dfd)
            raise
        published = _publish_new(dfd, tmp_name, real_dir, itertools.chain([first], candidates))
        return Path(directory) / published.name


def timestamp_slug(now: datetime | None = None) -> str:
    """A sortable, filesystem-safe timestamp with microseconds, so two runs in one second never collide."""
    now = now or datetime.now().astimezone()
    return now.strftime("%Y%m%dT%H%M%S") + f"{now.microsecond:06d}"


@contextlib.contextmanager
def exclusive_lock(lock_path: Path, what: str = "workspace") -> Iterator[None]:
    """Hold a non-blocking exclusive flock for the duration of the block; BusyError if someone else has it.

    The lock file is created 0600 with its directory's owner (a root cron run must not lock its user out); one
    left by an older root run that this user cannot write is still locked, read-only (flock needs no write)."""
    lock_path = Path(lock_path)
    try:
        fd = _open_lock(lock_path)
    except UnsafeLinkError:
        raise
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
                suffix = f" (held by pid {holder})" if holder.isdigit() else ""
                raise BusyError(f"another qwenmem process holds the {what} lock {lock_path}{suffix}") from None
            raise
        with contextlib.suppress(OSError):  # read-only (see above): the pid is only a hint
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        if lock_path.name == "lock" and lock_path.parent.name == ".qwenmem":  # the workspace lock
            _drop_crash_leftovers(lock_path.parent.parent)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _open_lock(lock_path: Path) -> int:
    with confine.parent_of(lock_path, create_dirs=True, on_new_dir=new_dir_made) as where:
        flags = os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            return os.open(where.name, os.O_RDWR | flags, dir_fd=where.dir_fd)
        except FileNotFoundError:
            pass
        except PermissionError:
            return os.open(where.name, os.O_RDONLY | flags, dir_fd=where.dir_fd)
        fd = os.open(where.name, os.O_RDWR | os.O_CREAT | flags, 0o600, dir_fd=where.dir_fd)
        os.fchmod(fd, 0o600)
        modes.give_owner(fd, None, where.dir_fd)
        return fd


def _drop_crash_leftovers(workspace: Path) -> None:
    """Under the workspace lock, temporaries of dead qwenmem processes (a SIGKILL, a power cut) are removed: they are
    full copies of session or MEMORY.md text that nothing would ever read."""
    with contextlib.suppress(OSError):
        remove_stale_temporaries(workspace)


MAX_LINE_BYTES = 64 * 1024 * 1024  # a JSONL line (one message) is kilobytes; a 1 GB "line" is damage, not data


def iter_lines_bounded(fh: BinaryIO, max_line: int = MAX_LINE_BYTES, skipped: list[int] | None = None) -> Iterator[bytes]:
    """The lines of a binary file in bounded memory: a line longer than `max_line` (a sparse or corrupt file that is
    one giant line of NULs) is read past in pieces and not yielded; its length goes to `skipped`."""
    while True:
        line = fh.readline(max_line + 1)
        if not line:
            return
        if len(line) <= max_line:
            yield line
            continue
        length = len(line)
        while not line.endswith(b"\n"):
            line = fh.readline(1 << 20)
            if not line:
                break
            length += len(line)
        if skipped is not None:
            skipped.append(length)
