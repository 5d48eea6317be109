"""Helpers for the repair tests: QwenPaw's strict loader (re-implemented here, independent of qwenmem), a
workspace builder from real files, and a whole-tree snapshot to prove that read-only modes write nothing."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from conftest import CORPUS_REAL

ROLES = ("user", "assistant", "system")


def _corpus(pattern: str) -> Path:
    """A real file, or a path that does not exist when ../shared is absent (importing this module must not fail)."""
    return next(CORPUS_REAL.glob(pattern), CORPUS_REAL / pattern)


TRUNCATED_BACKUP = _corpus("ziwei-control__*/sessions/main_main.json.backup_*")
TELEGRAM = _corpus("ssaputralo__*/sessions/8301437789_telegram--8301437789.json")
WIKI = _corpus("jownda__*/sessions/default_1775286565823.json")
TINY = _corpus("White-147__*/workspaces/default/sessions/default_1775623352315.json")


def qwenpaw_strict_load(data: bytes) -> list:
    """Load like QwenPaw's agent.load_state_dict and raise where it would; also fail if its next save would.

    Returns the content items."""
    text = data.decode("utf-8", "surrogatepass")
    states = json.loads(text)
    agent = states["agent"]
    for key in ("memory", "toolkit", "name", "_sys_prompt"):
        agent[key]  # noqa: B018 - a KeyError is exactly QwenPaw's failure
    toolkit = agent["toolkit"]
    if not isinstance(toolkit, dict) or set(toolkit) - {"active_groups"}:
        raise ValueError("toolkit state has unexpected keys")
    items = agent["memory"]["content"]
    for item in items:
        if isinstance(item, list):
            if len(item) != 2:
                raise ValueError("content item is not [msg, marks]")
            msg, marks = item
            assert isinstance(marks, list)
        elif isinstance(item, dict):
            msg = item
        else:
            raise ValueError("content item of unknown shape")
        assert isinstance(msg["id"], str)
        assert "name" in msg
        assert msg["role"] in ROLES
        assert isinstance(msg["content"], (str, list))
    json.dumps(states, ensure_ascii=False).encode("utf-8")  # the next save must not fail
    return items


def make_workspace(root: Path, files: dict[str, bytes]) -> Path:
    """A workspace with sessions/<rel> = bytes for each entry, last modified an hour ago (a damaged file modified in
    the last seconds may be a save in progress, which a repair waits out: tests of that write their own files)."""
    an_hour_ago = time.time() - 3600
    for rel, data in files.items():
        path = root / "sessions" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (an_hour_ago, an_hour_ago))
    return root


def copy_real(root: Path, *sources: Path) -> dict[str, Path]:
    out = {}
    for src in sources:
        dest = root / "sessions" / "console" / src.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
        out[src.name] = dest
    return out


def tree_state(root: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime of every file, and the set of directories, under root."""
    state: dict = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        state[rel] = (p.read_bytes(), p.stat().st_mtime_ns) if p.is_file() else ("dir", 0)
    return state
