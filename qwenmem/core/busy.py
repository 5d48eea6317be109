"""Is an assistant writing this session file right now?

QwenPaw 1.x saves with `open("w")` then `write` (spec §3.3): between the two, or while a long write is preempted,
the file looks truncated. A repair that replaced it then would send the rest of the save into the unlinked old
inode, losing it. So before writing, a repair makes sure nobody is writing the file: no process holds it open for
writing (Linux: /proc/<pid>/fd), and a damaged file modified in the last QUIET_SECONDS has stayed the same that long.
After writing it checks that no save went into the file it replaced (see `SaveWatch`).
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from qwenmem.core.errors import WorkspaceError
from qwenmem.core.fsio import Snapshot, read_with_snapshot

QUIET_SECONDS = 2.0  # a damaged file this recently modified may be a save in progress
MAX_WAIT_SECONDS = 5.0  # then it is busy: refuse (exit 4) rather than guess
POLL_SECONDS = 0.1
PROC = Path("/proc")


@dataclass(frozen=True)
class Writer:
    pid: int
    command: str
    fd: int

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.command})" if self.command else f"pid {self.pid}"


def _command(pid: str) -> str:
    try:
        return (PROC / pid / "comm").read_text().strip()
    except OSError:
        return ""


def _write_mode(pid: str, fd: str) -> bool:
    try:
        info = (PROC / pid / "fdinfo" / fd).read_text()
    except OSError:
        return True  # it has the file open and we cannot tell how: assume the worst
    for line in info.splitlines():
        if line.startswith("flags:"):
            return int(line.split()[1], 8) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    return True


def open_writers(dev: int, ino: int, names: tuple[str, ...]) -> list[Writer]:
    """Processes holding the file (dev, ino) open for writing. `names` are the link texts it can show under
    /proc/<pid>/fd (its path, and "<path> (deleted)" once replaced), a cheap filter before the stat.
    Empty where /proc is not there or not readable (other users' processes): the quiet-time rule still applies."""
    writers: list[Writer] = []
    try:
        pids = [p for p in os.listdir(PROC) if p.isdigit()]
    except OSError:
        return writers
    for pid in pids:
        fd_dir = PROC / pid / "fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd_dir / fd) not in names:
                    continue
                st = os.stat(fd_dir / fd)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (dev, ino) and _write_mode(pid, fd):
                writers.append(Writer(int(pid), _command(pid), int(fd)))
    return writers


def _link_names(path: Path) -> tuple[str, ...]:
    real = os.path.realpath(path)
    return real, real + " (deleted)"


def writers_of(path: Path) -> list[Writer]:
    try:
        st = os.stat(path)
    except OSError:
        return []
    return open_writers(st.st_dev, st.st_ino, _link_names(path))


@dataclass
class Settled:
    data: bytes
    snapshot: Snapshot
    busy: str = ""  # why the file must not be written now (empty: it may be)


def settle(path: Path, data: bytes, snap: Snapshot, max_bytes: int | None = None) -> Settled:
    """Wait until nobody has `path` open for writing and it has not changed for QUIET_SECONDS, re-reading it.

    Returns the file as it then is (compare its sha256 with `snap` to see whether it changed meanwhile), or a
    `busy` reason after MAX_WAIT_SECONDS."""
    deadline = time.monotonic() + MAX_WAIT_SECONDS
    while True:
        writers = writers_of(path)
        age = time.time() - snap.mtime_ns / 1e9
        if not writers and age >= QUIET_SECONDS:
            return Settled(data, snap)
        if time.monotonic() >= deadline:
            why = (f"{', '.join(map(str, writers[:3]))} has it open for writing" if writers else
                   f"it keeps changing (last modified {age:.1f} s ago)")
            return Settled(data, snap, f"{path.name} is being written ({why}; is QwenPaw saving it?)")
        time.sleep(POLL_SECONDS if writers else min(max(QUIET_SECONDS - age, 0.0) + 0.01, POLL_SECONDS * 5))
        try:
            data, snap = read_with_snapshot(path, max_bytes)
        except WorkspaceError as exc:
            return Settled(data, snap, f"{path.name} could not be re-read while waiting for it to settle ({exc})")


class SaveWatch:
    """Holds the original file open across the replace, so that a save that went into it afterwards (by a process
    that opened it just before the rename) can be found and put back instead of lost."""

    def __init__(self, path: Path, snap: Snapshot):
        self.path = Path(path)
        self.snap = snap
        self.fd: int | None = None
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return
        st = os.fstat(fd)
        if st.st_size != snap.size or st.st_mtime_ns != snap.mtime_ns:  # not the file we read: the write will refuse
            os.close(fd)
            return
        self.fd, self.dev, self.ino = fd, st.st_dev, st.st_ino

    def late_save(self) -> bytes | None:
        """After the replace: the bytes of a save that went into the replaced file, once its writers closed it
        (None if nothing was written there). Waits at most MAX_WAIT_SECONDS for them."""
        if self.fd is None:
            return None
        names = _link_names(self.path)
        deadline = time.monotonic() + MAX_WAIT_SECONDS
        while open_writers(self.dev, self.ino, names) and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
        st = os.fstat(self.fd)
        if st.st_size == self.snap.size and st.st_mtime_ns == self.snap.mtime_ns:
            return None
        chunks, offset = [], 0
        while chunk := os.pread(self.fd, 1 << 20, offset):
            chunks.append(chunk)
            offset += len(chunk)
        data = b"".join(chunks)
        return None if hashlib.sha256(data).hexdigest() == self.snap.sha256 else data

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
