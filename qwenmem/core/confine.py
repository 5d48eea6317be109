"""Confined paths: the one place that decides whether a path inside a workspace may be opened.

A workspace can hold links planted by a clone, a sync or another user (`MEMORY.md -> ~/.bashrc`, `.qwenmem ->
/etc`, `sessions/loop.json -> loop.json`). Every open qwenmem does under a known workspace resolves the path one
component at a time from the workspace root with directory file descriptors (`O_NOFOLLOW | O_DIRECTORY`,
`dir_fd=`), follows a symlink only when its target stays inside the workspace, and refuses it otherwise. Because
the final open is relative to a descriptor of the checked directory, a link swapped in after the check cannot
redirect it.

Workspaces register themselves (qwenmem.core.workspace.Workspace); a path under no registered workspace is opened
normally. The registry is the calling context's (a `contextvars` variable), and `scope()` gives one operation its
own: a fleet worker that runs workspace after workspace confines each task's opens to that task's workspaces, never
to one an earlier task opened (a workspace nested in another would otherwise take over its paths), and the list
`root_for` scans does not grow with every workspace the process has seen.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from qwenmem.core import events
from qwenmem.core.errors import UnsafeLinkError

MAX_LINKS = 40  # as Linux's MAXSYMLINKS: more than this is a loop
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

# on_new_dir(dir_fd, name, path): called for each directory parent_of creates
NewDirHook = Callable[[int, str, Path], None]

# the workspaces of the calling context: immutable sets, replaced (never mutated) so a scope's reset restores its
# caller's set exactly, and a thread or task of its own starts with none
_roots: ContextVar[frozenset[Path]] = ContextVar("qwenmem_confined_roots", default=frozenset())


def register_root(path: os.PathLike[str] | str) -> None:
    """Confine every later open under `path` (an already resolved workspace directory) to it, in this context
    until the innermost `scope()` around it ends (with none, for the rest of the context: a library caller's
    thread keeps what it opened)."""
    root = Path(path)
    roots = _roots.get()
    if root not in roots:
        _roots.set(roots | {root})


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """One operation's workspaces: those registered inside are forgotten when it ends (those registered before
    stay confined inside it). An entry point (a command line, a fleet task) runs in one."""
    token = _roots.set(_roots.get())
    try:
        yield
    finally:
        _roots.reset(token)


def registered_roots() -> frozenset[Path]:
    """The workspaces opens are confined to here and now."""
    return _roots.get()


def root_for(path: os.PathLike[str] | str) -> Path | None:
    """The deepest registered workspace that lexically contains `path`, or None."""
    p = Path(os.path.abspath(path))
    best = None
    for root in _roots.get():
        if (p == root or root in p.parents) and (best is None or len(root.parts) > len(best.parts)):
            best = root
    return best


def _refuse(message: str) -> UnsafeLinkError:
    """A refusal is an event of the call that met it (qwenmem.core.events; the CLI exits UNSAFE_LINK on any)."""
    events.refused_link(message)
    return UnsafeLinkError(message)


@dataclass
class Resolved:
    """An open descriptor of the directory a confined path lives in, and the final name inside it."""

    dir_fd: int
    name: str
    real: Path  # the path the name really is (after following inside links), for messages

    def stat(self) -> os.stat_result | None:
        try:
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None


def _outside(link: Path, target: str) -> UnsafeLinkError:
    where = target if os.path.isabs(target) else os.path.normpath(link.parent / target)
    return _refuse(f"{link}: a link to {where}, outside the workspace; not followed")


def _loop(link: Path) -> UnsafeLinkError:
    return _refuse(f"{link}: a symlink loop (more than {MAX_LINKS} links); not followed")


def _inside_parts(root: Path, absolute: str) -> list[str] | None:
    """`absolute` (normalised) as parts below `root`, or None if it is not under it."""
    p = Path(os.path.normpath(absolute))
    if p == root:
        return []
    if root in p.parents:
        return list(p.relative_to(root).parts)
    real = Path(os.path.realpath(root))  # a root given through a link of its own (/tmp -> /private/tmp)
    if real != root and (p == real or real in p.parents):
        return list(p.relative_to(real).parts)
    return None


@contextlib.contextmanager
def parent_of(path: os.PathLike[str] | str, *, follow_last: bool = True, create_dirs: bool = False,
              on_new_dir: NewDirHook | None = None) -> Iterator[Resolved]:
    """Yield the resolved parent directory of `path` as an open descriptor, plus the final name.

    With `follow_last`, a final component that is a symlink inside the workspace is followed (so writing a
    `MEMORY.md -> notes/memory.md` writes the notes file); the yielded name is never a symlink then, unless the
    path is outside every workspace. `create_dirs` makes missing directories (`on_new_dir(dir_fd, name, path)` is
    called for each new one, to set its owner and mode). Raises UnsafeLinkError for a link that leaves the workspace or
    loops; FileNotFoundError / NotADirectoryError as the OS would.
    """
    path = Path(os.path.abspath(path))
    root = root_for(path)
    if root is None or path == root:
        parent = path.parent
        if create_dirs:
            _make_dirs_unconfined(parent, on_new_dir)
        fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            yield Resolved(fd, path.name, path)
        finally:
            os.close(fd)
        return
    fds: list[int] = []
    try:
        fds.append(os.open(root, os.O_RDONLY | os.O_DIRECTORY))
        yield _walk(root, list(path.relative_to(root).parts), fds, follow_last, create_dirs, on_new_dir)
    finally:
        for fd in fds:
            os.close(fd)


def _make_dirs_unconfined(directory: Path, on_new_dir: NewDirHook | None) -> None:
    """mkdir -p outside every workspace, calling `on_new_dir` for each directory made (as the confined walk does)."""
    missing: list[Path] = []
    d = directory
    while not d.exists() and d != d.parent:
        missing.append(d)
        d = d.parent
    for d in reversed(missing):
        fd = os.open(d.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with contextlib.suppress(FileExistsError):
                os.mkdir(d.name, 0o777, dir_fd=fd)
                if on_new_dir is not None:
                    on_new_dir(fd, d.name, d)
        finally:
            os.close(fd)


def _make_missing_dir(comp: str, here: Path, dir_fd: int, create_dirs: bool, on_new_dir: NewDirHook | None) -> None:
    """A directory component that does not exist: FileNotFoundError, or with `create_dirs` make it (0700; someone
    else making it first is fine: the walk looks at it again either way)."""
    if not create_dirs:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(here)) from None
    with contextlib.suppress(FileExistsError):
        os.mkdir(comp, 0o700, dir_fd=dir_fd)
        if on_new_dir is not None:
            on_new_dir(dir_fd, comp, here)


def _link_target_parts(root: Path, real: list[str], comp: str, here: Path, dir_fd: int) -> list[str]:
    """The (normalised) target of the link `comp` as parts below `root`; UnsafeLinkError if it leads out."""
    target = os.readlink(comp, dir_fd=dir_fd)
    joined = target if os.path.isabs(target) else os.path.join(str(root.joinpath(*real)), target)
    parts = _inside_parts(root, joined)
    if parts is None:
        raise _outside(here, target)
    return parts


def _open_dir(comp: str, dir_fd: int) -> int | None:
    """A descriptor of the directory `comp`, or None when it became a link since the stat (ELOOP: look again)."""
    try:
        return os.open(comp, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None
        raise


def _walk(root: Path, pending: list[str], fds: list[int], follow_last: bool, create_dirs: bool,
          on_new_dir: NewDirHook | None) -> Resolved:
    real: list[str] = []
    links = 0
    pending = list(reversed(pending))  # a stack: pending[-1] is the next component
    while True:
        comp = pending.pop()
        last = not pending
        here = root.joinpath(*real, comp)
        try:
            st = os.stat(comp, dir_fd=fds[-1], follow_symlinks=False)
        except FileNotFoundError:
            if last:
                return Resolved(fds[-1], comp, here)
            _make_missing_dir(comp, here, fds[-1], create_dirs, on_new_dir)
            pending.append(comp)  # look at it again: someone may have raced a link in
            continue
        if stat.S_ISLNK(st.st_mode) and (follow_last or not last):
            links += 1
            if links > MAX_LINKS:
                raise _loop(here)
            parts = _link_target_parts(root, real, comp, here, fds[-1])
            # restart from the root along the link's (normalised) target, then the rest of the path
            for fd in fds[1:]:
                os.close(fd)
            del fds[1:]
            real = []
            pending.extend(reversed(parts))
            if not pending:  # a link to the workspace root itself
                raise _refuse(f"{here}: a link to the workspace root; not followed")
            continue
        if last:
            return Resolved(fds[-1], comp, here)
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(here))
        opened = _open_dir(comp, fds[-1])
        if opened is None:  # it became a link since the stat: look again
            pending.append(comp)
            links += 1
            if links > MAX_LINKS:
                raise _loop(here)
            continue
        fds.append(opened)
        real.append(comp)


def check(path: os.PathLike[str] | str) -> Path:
    """Refuse (UnsafeLinkError) a path whose any component is a link leaving the workspace, or a loop; return
    the path it really is. A missing tail is fine. For directories handed to code that opens files itself."""
    try:
        with parent_of(path) as r:
            return r.real
    except (FileNotFoundError, NotADirectoryError):
        return Path(path)


def open_fd(path: os.PathLike[str] | str, flags: int, mode: int = 0o600) -> int:
    """os.open, confined: the final component is opened with O_NOFOLLOW relative to its checked directory."""
    with parent_of(path) as r:
        if root_for(path) is None:
            return os.open(r.name, flags, mode, dir_fd=r.dir_fd)
        return os.open(r.name, flags | getattr(os, "O_NOFOLLOW", 0), mode, dir_fd=r.dir_fd)


class NotRegularFileError(OSError):
    """A FIFO, device or socket where a file was expected: never opened (opening one can block or act)."""


_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def open_regular(path: os.PathLike[str] | str) -> int:
    """A read descriptor of `path`, which must be a regular file: the one primitive every read goes through.

    The type is checked before the open (opening a FIFO or a device can block or act: a tape rewinds) and again on
    the descriptor (it may have been swapped since). Under a workspace the path is resolved by parent_of, so a link
    leaving the workspace raises UnsafeLinkError and the final open does not follow links; outside every workspace
    links are followed, as open() would. IsADirectoryError for a directory, NotRegularFileError for anything else
    that is not a regular file, FileNotFoundError and the rest as the OS would."""
    with parent_of(path) as where:
        confined = root_for(path) is not None
        before = os.stat(where.name, dir_fd=where.dir_fd, follow_symlinks=not confined)
        if stat.S_ISDIR(before.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(before.st_mode):
            raise NotRegularFileError(errno.EINVAL, "not a regular file (device, FIFO or socket); not read",
                                      str(path))
        flags = _READ_FLAGS | (getattr(os, "O_NOFOLLOW", 0) if confined else 0)
        fd = os.open(where.name, flags, dir_fd=where.dir_fd)
    after = os.fstat(fd)
    if not stat.S_ISREG(after.st_mode) or (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
        os.close(fd)
        raise NotRegularFileError(errno.EINVAL, "replaced while it was opened; not read", str(path))
    return fd


def open_binary(path: os.PathLike[str] | str) -> BinaryIO:
    """A confined `open(path, "rb")` of a regular file (open_regular): never opens, so never blocks on, a FIFO."""
    return os.fdopen(open_regular(path), "rb")


def read_bytes(path: os.PathLike[str] | str) -> bytes:
    """A confined `Path.read_bytes()` of a regular file (UnsafeLinkError for a link that leaves the workspace,
    NotRegularFileError for a FIFO or device)."""
    with open_binary(path) as fh:
        return fh.read()


def read_text(path: os.PathLike[str] | str, encoding: str = "utf-8", errors: str = "strict") -> str:
    """read_bytes, decoded."""
    return read_bytes(path).decode(encoding, errors)
