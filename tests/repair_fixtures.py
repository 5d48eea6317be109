"""Helpers for the repair tests: QwenPaw's strict loader (re-implemented here, independent of qwenmem), a
workspace builder, the project's fixture sessions (tests/fixtures/, written by scripts/make_fixtures.py), and a
whole-tree snapshot to prove that read-only modes write nothing."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from helpers import FIXTURE_SESSIONS, FIXTURES

ROLES = ("user", "assistant", "system")
# cut off mid-write after 183 complete items (user 61 / assistant 91 / system 31), all marked "compressed"
TRUNCATED_BACKUP = FIXTURE_SESSIONS / "main_main.json.backup_20260316_203609"
# 22 messages, 8 tool calls and 7 results (one call in the middle never answered), one plain-string reply
TELEGRAM = FIXTURE_SESSIONS / "7700112233_telegram--7700112233.json"
# 47 messages, ~66 KB, thinking, 21 answered tool calls, a Chinese summary: the healthy "big" session
WIKI = FIXTURE_SESSIONS / "default_1775000000047.json"
# four messages, both replies with an empty block list
TINY = FIXTURE_SESSIONS / "healthy_small.json"
# healthy sessions of the older shapes: bare Msg items, "compressed" marks, plan mode with an unknown key
OLDER_SHAPES = [FIXTURE_SESSIONS / n for n in ("legacy_bare_items.json", "legacy_compressed_marks.json",
                                               "plan_mode.json")]
DIALOG = FIXTURES / "dialog" / "2026-04-09.jsonl"  # 19 offloaded messages, one per line


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
