"""Names of qwenmem's temporary files, and finding the ones a killed run left behind.

A temporary is `.NAME.PID-RANDOM.qwenmem-tmp` beside the file it will replace: hidden, and naming the process that
writes it. One whose process is gone is a crash's leftover (SIGKILL, power loss) and is removed by the next run
that holds the workspace lock; one whose process is alive (or whose pid now belongs to someone else) is kept.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

TEMP_SUFFIX = ".qwenmem-tmp"
_TEMP_RE = re.compile(r"^\..+\.(?P<pid>\d+)-[0-9a-f]{8}" + re.escape(TEMP_SUFFIX) + r"$")
# where qwenmem writes: the workspace itself (MEMORY.md), and these areas, recursively
_AREAS = ("memory", "backup", "sessions", "dialog", "tool_results", ".qwenmem")
_SKIP_DIRS = re.compile(r"^gen-\d+$")  # index generations: removed whole (qwenmem.core.leftovers), not walked


def temp_name_for(name: str, pid: int | None = None) -> str:
    return f".{name[:80]}.{os.getpid() if pid is None else pid}-{secrets.token_hex(4)}{TEMP_SUFFIX}"


def owner_pid(name: str) -> int | None:
    m = _TEMP_RE.match(name)
    return int(m.group("pid")) if m else None


def pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    except (OverflowError, ValueError):
        return False
    return True


@dataclass(frozen=True)
class StaleTemp:
    path: Path
    pid: int
    size: int


def _walk(top: Path) -> Iterator[os.DirEntry[str]]:
    try:
        entries = list(os.scandir(top))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if not _SKIP_DIRS.match(entry.name):
                    yield from _walk(Path(entry.path))
            else:
                yield entry
        except OSError:
            continue


def find_stale_temporaries(workspace: os.PathLike[str] | str) -> list[StaleTemp]:
    """Every qwenmem temporary in the workspace whose writer is dead. Links are never followed."""
    root = Path(workspace)
    found = []
    candidates: list[os.DirEntry[str]] = []
    try:
        candidates.extend(e for e in os.scandir(root) if not e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    for area in _AREAS:
        p = root / area
        if p.is_dir() and not p.is_symlink():
            candidates.extend(_walk(p))
    for entry in candidates:
        pid = owner_pid(entry.name)
        if pid is None or pid_alive(pid):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            found.append(StaleTemp(Path(entry.path), pid, st.st_size))
    return sorted(found, key=lambda t: str(t.path))


def remove_stale_temporaries(workspace: os.PathLike[str] | str) -> list[StaleTemp]:
    """Remove what find_stale_temporaries finds (call it holding the workspace lock); returns what went."""
    removed = []
    for temp in find_stale_temporaries(workspace):
        try:
            os.unlink(temp.path)
        except OSError:
            continue
        removed.append(temp)
    return removed
