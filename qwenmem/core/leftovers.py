"""What a killed qwenmem run can leave behind, for `doctor` and for every run that takes the lock.

- temporaries of dead processes (qwenmem.core.tempnames): removed by the next run holding the workspace lock;
- index generations other than the live one (`.qwenmem/index/gen-*`): a reindex killed while it built one.
  They are only stale while no reindex holds the index lock (a running one is building its generation).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from qwenmem.core.index import store
from qwenmem.core.tempnames import find_stale_temporaries
from qwenmem.core.workspace import Workspace


@dataclass(frozen=True)
class Leftover:
    path: Path
    kind: str  # "temporary" or "index generation"
    size: int
    reason: str  # for a report line: why it is stale


def _tree_size(p: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(p, followlinks=False):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, f)).st_size
    return total


@contextlib.contextmanager
def _index_unlocked(ws: Workspace) -> Iterator[bool]:
    """Yield True while holding the index lock (no reindex is running), False if a reindex holds it. An absent
    lock file is not created: finding leftovers writes nothing."""
    path = store.lock_path(ws)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        yield True
        return
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                yield False
                return
            raise
        yield True
    finally:
        os.close(fd)


def _stale_generations(ws: Workspace) -> list[Leftover]:
    try:
        root = store.index_dir(ws)
        live = store.current_generation(ws)
    except OSError:
        return []
    if not root.is_dir() or root.is_symlink():
        return []
    out = []
    for gen in sorted(root.glob("gen-*")):
        if gen.is_dir() and not gen.is_symlink() and gen != live:
            out.append(Leftover(gen, "index generation", _tree_size(gen),
                                "not the live generation (a reindex stopped while building it)"))
    return out


def find_stale_leftovers(ws: Workspace) -> list[Leftover]:
    """Everything a killed run left behind in workspace `ws` (a qwenmem.core.workspace.Workspace); writes nothing."""
    found = [Leftover(t.path, "temporary", t.size, f"its process {t.pid} is gone")
             for t in find_stale_temporaries(ws.path)]
    with _index_unlocked(ws) as free:
        if free:
            found.extend(_stale_generations(ws))
    return found


def remove_stale_leftovers(ws: Workspace, dry_run: bool = False) -> list[Leftover]:
    """Remove (or with `dry_run` only list) what find_stale_leftovers finds. Takes the workspace lock (BusyError if
    another qwenmem holds it); index generations are left alone while a reindex runs. Returns what was removed."""
    from qwenmem.core.fsio import exclusive_lock

    if dry_run:
        return find_stale_leftovers(ws)
    removed = []
    temps = [Leftover(t.path, "temporary", t.size, f"its process {t.pid} is gone")
             for t in find_stale_temporaries(ws.path)]  # listed first: taking the lock already removes them
    with exclusive_lock(ws.lock_path):
        for item in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(item.path)
            if not os.path.lexists(item.path):
                removed.append(item)
        with _index_unlocked(ws) as free:
            for gen in _stale_generations(ws) if free else []:
                shutil.rmtree(gen.path, ignore_errors=True)
                if not gen.path.exists():
                    removed.append(gen)
    return removed
