"""Owners and modes of what the 2.x commands create under .qwenmem/ (issue 24 §3).

As root (a cron job), on a copy of the generated 2.2.2 workspace owned by an unprivileged user: `history salvage`,
`snapshot` and a 2.x `dream` must leave every new store (quarantine, snapshots, objects, backups, index) owned by that
user, files 0600 (objects read-only 0400) and directories 0700; and the user must be able to run them afterwards.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from qwenpaw2_support import copy_corpus, needs_gen2_corpus
from security_fixtures import run_commands

USER = 65534  # nobody
WRITING = [["history", "salvage"], ["snapshot"], ["dream", "--mode", "deterministic", "--no-embeddings"],
           ["reindex", "--embedder", "none"], ["history", "rebuild-fts", "--force"]]
AFTER = [["history", "salvage"], ["snapshot"], ["dream", "--mode", "deterministic", "--no-embeddings"],
         ["reindex", "--embedder", "none"], ["snapshot", "list"], ["history", "check"]]

pytestmark = [needs_gen2_corpus,
              pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                 reason="needs root: it runs qwenmem as root on another user's workspace")]


def _workspace(parent: Path, name: str) -> Path:
    ws = copy_corpus(parent / name)
    # a store QwenPaw set aside as corrupt: what `history salvage` reads (and quarantines) by default
    shutil.copyfile(ws / "history.db", ws / "history.db.corrupt-20261130T101500")
    for dirpath, dirnames, filenames in os.walk(parent / name):
        os.chown(dirpath, USER, USER)
        os.chmod(dirpath, 0o700)
        for f in filenames:
            os.chown(os.path.join(dirpath, f), USER, USER, follow_symlinks=False)
            os.chmod(os.path.join(dirpath, f), 0o600)
    for name in ("history.db", "history.db.corrupt-20261130T101500"):
        os.chmod(ws / name, 0o644)  # as QwenPaw's SQLite makes them (umask 022): the quarantine copies must not be
    p = ws
    while p != parent:  # the path down to the workspace: traversable (its files stay private)
        os.chmod(p, 0o755)
        p = p.parent
    return ws


def _inventory(ws: Path) -> dict[str, os.stat_result]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(ws):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            out[str(p.relative_to(ws))] = p.lstat()
    return out


@pytest.fixture
def shared_tmp():
    d = Path(tempfile.mkdtemp(prefix="qwenmem-owners2-", dir="/tmp"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_root_run_2x_stores_belong_to_the_workspace_owner_and_are_private(shared_tmp):
    ws = _workspace(shared_tmp, "ws")
    scratch = _workspace(shared_tmp, "scratch")
    before = set(_inventory(ws))
    results = run_commands(ws, scratch, WRITING, None)
    assert all(r["code"] in (0, 1) for r in results), results
    created = {rel: st for rel, st in _inventory(ws).items() if rel not in before}
    for store in ("quarantine", "snapshots", "snapshots/objects", "index"):
        assert f".qwenmem/{store}" in created, sorted(created)
    assert any(rel.startswith(".qwenmem/quarantine/") and rel.endswith(".before-salvage") for rel in created)
    wrong_owner = sorted(rel for rel, st in created.items() if not stat.S_ISLNK(st.st_mode)
                         and (st.st_uid, st.st_gid) != (USER, USER))
    assert wrong_owner == [], "\n".join(wrong_owner)
    too_wide = sorted(f"{rel} {stat.S_IMODE(st.st_mode):o}" for rel, st in created.items()
                      if rel.startswith(".qwenmem/") and not stat.S_ISLNK(st.st_mode)
                      and stat.S_IMODE(st.st_mode) & 0o077)
    assert too_wide == [], "\n".join(too_wide)
    objects = [st for rel, st in created.items() if rel.startswith(".qwenmem/snapshots/objects/")
               and stat.S_ISREG(st.st_mode)]
    assert objects and all(stat.S_IMODE(st.st_mode) == 0o400 for st in objects)

    as_user = run_commands(ws, scratch, AFTER, USER)
    for r in as_user:
        assert "ermission denied" not in r["stderr"] and "internal error" not in r["stderr"], r
        assert r["code"] in (0, 1), r


def test_object_directories_are_never_made_world_accessible(tmp_path):
    """Even without root (and whatever the umask), a new objects/XX/ is 0700, never mkdir(..., 0777)."""
    from qwenmem.core import snapshot
    from qwenmem.core.workspace import discover_workspace

    ws = copy_corpus(tmp_path)
    old = os.umask(0o022)
    try:
        snapshot.create(discover_workspace(ws))
    finally:
        os.umask(old)
    objects = ws / ".qwenmem" / "snapshots" / "objects"
    dirs = [objects, objects.parent, *(p for p in objects.iterdir() if p.is_dir())]
    assert len(dirs) > 2
    assert {f"{stat.S_IMODE(p.stat().st_mode):o}" for p in dirs} == {"700"}


def test_a_root_salvage_rebuilding_the_store_leaves_it_to_its_owner(shared_tmp):
    """A corrupt live history.db rebuilt by a root run: the new store keeps the old one's owner and mode (root-owned,
    QwenPaw running as the user could no longer write its own history)."""
    import sqlite3

    ws = _workspace(shared_tmp, "ws")
    (ws / "history.db.corrupt-20261130T101500").unlink()
    db = ws / "history.db"
    conn = sqlite3.connect(str(db))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])  # truncated: quick_check fails, salvage rebuilds
    os.chown(db, USER, USER)
    os.chmod(db, 0o640)
    [result] = run_commands(ws, ws, [["history", "salvage", "--json"]], None)
    assert result["code"] in (0, 1), result  # 1: rows the damage cut are named (and kept in the quarantine)
    st = db.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (USER, USER, 0o640)
    run = next((ws / ".qwenmem" / "quarantine").iterdir())
    for p in [run, *run.iterdir()]:
        assert (p.stat().st_uid, stat.S_IMODE(p.stat().st_mode) & 0o077) == (USER, 0), p
