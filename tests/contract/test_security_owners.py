"""Owners and modes of what qwenmem creates (issue 19 §2).

As root, on a workspace owned by an unprivileged user whose files are 0600: run every writing command; then
everything new must belong to that user, be no wider than its source (0600 here), with 0700 private directories;
and then every command must work when run as that user.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from helpers import SAMPLE
from security_fixtures import run_commands

USER = 65534  # nobody
COMPACT = ["compact", "--all", "--max-input-length", "1200", "--summarizer", "extractive"]
WRITING = [["sessions", "repair", "--all"], COMPACT, ["reindex", "--embedder", "none"],
           ["dream", "--mode", "deterministic", "--date", "2026-11-30"], ["dream", "--restore"],
           ["sessions", "restore"]]
EVERY = [["info"], ["sessions", "list"], ["sessions", "show", "default_legacy_trip"], ["sessions", "repair", "--check"],
         *WRITING, ["search", "tea", "--mode", "text"], ["compact", "--all", "--check"]]

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="needs root: it runs qwenmem as root on another user's workspace")

def _workspace_of(parent: Path, name: str) -> Path:
    ws = parent / name
    shutil.copytree(SAMPLE, ws)
    (ws / "memory" / "2026-11-30.md").write_text("# 2026-11-30\n\n- The user prefers tea over coffee\n")
    return ws


def _give_to_user(ws: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(ws):
        os.chown(dirpath, USER, USER)
        os.chmod(dirpath, 0o700)
        for f in filenames:
            os.chown(os.path.join(dirpath, f), USER, USER)
            os.chmod(os.path.join(dirpath, f), 0o600)
    os.chmod(ws, 0o755)  # the workspace itself: traversable (its files stay private)


def _run(ws: Path, scratch: Path, commands, as_user: bool) -> list[dict]:
    return run_commands(ws, scratch, commands, USER if as_user else None)


def _inventory(ws: Path) -> dict[str, os.stat_result]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(ws):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            out[str(p.relative_to(ws))] = p.lstat()
    return out


@pytest.fixture
def shared_tmp():
    d = Path(tempfile.mkdtemp(prefix="qwenmem-owners-", dir="/tmp"))
    os.chmod(d, 0o755)  # the user must reach the workspace
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_root_runs_leave_a_workspace_its_user_can_still_use(shared_tmp):
    ws = _workspace_of(shared_tmp, "ws")
    scratch = _workspace_of(shared_tmp, "scratch")
    _give_to_user(ws)
    _give_to_user(scratch)
    before = set(_inventory(ws))
    results = _run(ws, scratch, WRITING, as_user=False)
    assert [r["code"] for r in results] == [0] * len(WRITING), results
    created = {rel: st for rel, st in _inventory(ws).items() if rel not in before}
    assert any(rel.startswith(".qwenmem/quarantine/") for rel in created)
    assert any(rel.startswith("dialog/") for rel in created) and any(rel.startswith("backup/") for rel in created)
    assert ".qwenmem/lock" in created and ".qwenmem/index.lock" in created
    wrong_owner = sorted(rel for rel, st in created.items() if not stat.S_ISLNK(st.st_mode)
                         and (st.st_uid, st.st_gid) != (USER, USER))
    assert wrong_owner == []
    too_wide_files = sorted(f"{rel} {stat.S_IMODE(st.st_mode):o}" for rel, st in created.items()
                            if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) & 0o077)
    assert too_wide_files == []
    too_wide_dirs = sorted(f"{rel} {stat.S_IMODE(st.st_mode):o}" for rel, st in created.items()
                           if stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) & 0o077)
    assert too_wide_dirs == []
    changed = _inventory(ws)
    for rel in before:  # replaced files (sessions, MEMORY.md) keep their owner and mode
        if rel in changed and stat.S_ISREG(changed[rel].st_mode):
            assert (changed[rel].st_uid, stat.S_IMODE(changed[rel].st_mode)) == (USER, 0o600), rel

    as_user = _run(ws, scratch, EVERY, as_user=True)
    for r in as_user:
        assert "ermission denied" not in r["stderr"] and "internal error" not in r["stderr"], r
        assert r["code"] in (0, 1), r
