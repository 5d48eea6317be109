"""A content-addressed object store (the storage under `qwenmem snapshot`).

An object is named by the sha256 of its bytes, `objects/<2 hex>/<62 hex>`, written once (temp file -> fsync ->
hard link to its name, which fails rather than overwrite -> directory fsync; a new `<2 hex>/` is fsynced in
`objects/` first: qwenmem.core.fsio.publish_files) and never changed. Storing the same bytes twice costs one
verifying read: an object is reused only when its size and hash still match its name (one an older version or a
power cut left torn is written again). Objects are copies, never hard links to workspace files: ReMe rewrites its notes in
place (`open("wb")`), which would rewrite a hard-linked backup with them.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from qwenmem.core.errors import WorkspaceError
from qwenmem.core.fsio import make_dirs, publish_files
from qwenmem.core.modes import give_owner
from qwenmem.core.tempnames import TEMP_SUFFIX, owner_pid, pid_alive, temp_name_for

CHUNK = 1 << 20


class ObjectStore:
    def __init__(self, root: Path):
        from qwenmem.core.confine import check

        # .qwenmem/ or snapshots/ linked out of the workspace: refused before anything is read or written there
        check(root)
        self.root = Path(root)

    def path_of(self, digest: str) -> Path:
        return self.root / digest[:2] / digest[2:]

    def has(self, digest: str) -> bool:
        return self.path_of(digest).is_file()

    def intact(self, digest: str, size: int | None = None) -> bool:
        """Whether the stored object is there with the bytes its name promises (read and hashed: a deduplicated
        object is trusted by the next snapshot, so a torn one must not be)."""
        path = self.path_of(digest)
        try:
            with open(path, "rb", buffering=0) as fh:
                if size is not None and os.fstat(fh.fileno()).st_size != size:
                    return False
                h = hashlib.sha256()
                while block := fh.read(CHUNK):
                    h.update(block)
        except OSError:
            return False
        return h.hexdigest() == digest

    def batch(self) -> "Batch":
        return Batch(self)

    def read_verified(self, digest: str) -> bytes:
        """An object's bytes, checked against its name: a damaged backup is an error, never restored."""
        path = self.path_of(digest)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise WorkspaceError(f"snapshot object {path} is missing or unreadable ({exc.strerror or exc}); "
                                 "nothing was restored") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise WorkspaceError(f"snapshot object {path} is damaged (its content no longer matches its hash); "
                                 "nothing was restored")
        return data

    def all_digests(self) -> dict[str, int]:
        """Every stored object and its size on disk."""
        found: dict[str, int] = {}
        if not self.root.is_dir():
            return found
        for sub in self.root.iterdir():
            if len(sub.name) != 2 or not sub.is_dir():
                continue
            for p in sub.iterdir():
                with contextlib.suppress(OSError):
                    found[sub.name + p.name] = p.lstat().st_size
        return found

    def delete(self, digest: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path_of(digest))

    def remove_temp_files(self) -> int:
        """Temp files a killed run left behind (only ever called under the workspace lock): those whose process is
        gone, and those of versions before the pid was in the name (`.object.<8 random>.qwenmem-tmp`)."""
        n = 0
        if self.root.is_dir():
            for p in self.root.glob(f".*{TEMP_SUFFIX}"):
                pid = owner_pid(p.name)
                if pid is not None and pid_alive(pid):
                    continue
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
                    n += 1
        return n


class Batch:
    """Objects written together and made durable together.

    fsync per object costs ~4 ms each (10 s for a thousand notes), so the batch writes every object to a temp file,
    fsyncs them all at once (fsio.fsync_all: the journal commits them as a group), and only then gives each its
    name and fsyncs the directories holding the names, before the caller writes the manifest. An object therefore
    never has its name before its bytes are on disk: a crash leaves temp files (removed by the next prune), never
    a named object with torn content that later snapshots would trust. A stored object is reused only after
    `ObjectStore.intact`; a damaged one is replaced."""

    def __init__(self, store: ObjectStore):
        self.store = store
        self.pending: dict[str, str] = {}  # digest -> temp file
        self.damaged: set[str] = set()  # stored under its name with other bytes: replaced at commit
        self._checked: set[str] = set()
        self._root_ready = False

    def __enter__(self) -> "Batch":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def has(self, digest: str) -> bool:
        if digest in self.pending or digest in self._checked:
            return True
        if not self.store.has(digest):
            return False
        if self.store.intact(digest):
            self._checked.add(digest)
            return True
        self.damaged.add(digest)
        return False

    def put_bytes(self, data: bytes) -> tuple[str, int]:
        """Store `data`; returns (sha256, bytes newly written: 0 when it was already there)."""
        digest = hashlib.sha256(data).hexdigest()
        if self.has(digest):
            return digest, 0
        tmp = self._temp()
        with open(tmp, "wb") as fh:
            fh.write(data)
        self.pending[digest] = tmp
        return digest, len(data)

    def put_file(self, fh: BinaryIO) -> tuple[str, int, int]:
        """Copy an open binary file (from its current offset), hashing as it goes.
        Returns (sha256 of what was copied, its size, bytes newly written)."""
        tmp = self._temp()
        h, size = hashlib.sha256(), 0
        with open(tmp, "wb") as out:
            while block := fh.read(CHUNK):
                h.update(block)
                out.write(block)
                size += len(block)
        digest = h.hexdigest()
        if self.has(digest):
            os.unlink(tmp)
            return digest, size, 0
        self.pending[digest] = tmp
        return digest, size, size

    def commit(self) -> None:
        if not self.pending:
            return
        for tmp in self.pending.values():
            os.chmod(tmp, stat.S_IRUSR)  # read-only (a backup is not edited) and private, as all of .qwenmem/
        fresh = [(Path(tmp), self.store.path_of(d)) for d, tmp in self.pending.items() if d not in self.damaged]
        torn = [(Path(tmp), self.store.path_of(d)) for d, tmp in self.pending.items() if d in self.damaged]
        # a name taken meanwhile holds the same bytes, by definition: the link is refused, the temp dropped
        publish_files(fresh, replace=False)
        publish_files(torn, replace=True)
        self.pending.clear()
        self.damaged.clear()

    def abort(self) -> None:
        for tmp in self.pending.values():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        self.pending.clear()

    def _temp(self) -> str:
        try:
            if not self._root_ready:
                make_dirs(self.store.root)
                self._root_ready = True
            name, fd = _new_temp(self.store.root)
        except OSError as exc:
            raise WorkspaceError(f"cannot write into the snapshot store {self.store.root} "
                                 f"({exc.strerror or exc}); nothing was changed") from None
        os.close(fd)
        return name


def _new_temp(root: Path) -> tuple[str, int]:
    """An empty 0600 `.object.PID-RANDOM.qwenmem-tmp` in `root`, owned like `root`: named like every qwenmem
    temporary, so the next run under the workspace lock removes it once its process is gone (tempnames)."""
    owner = os.stat(root)
    for _ in range(100):
        name = str(root / temp_name_for("object"))
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        os.fchmod(fd, 0o600)  # whatever the umask
        give_owner(fd, (owner.st_uid, owner.st_gid), fd)
        return name, fd
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(root))
