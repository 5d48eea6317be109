"""Durable writes: atomic replace, refusal when the target changed, backups that never overwrite, the lock."""

import os
import subprocess
import sys

import pytest

from helpers import REPO

from qwenmem.core.errors import BusyError, ChangedUnderneathError
from qwenmem.core.fsio import atomic_write_bytes, copy_preserving, exclusive_lock, read_with_snapshot
from qwenmem.core.safety import replace_preserving
from qwenmem.core.workspace import discover_workspace


def test_atomic_write_replaces_and_keeps_mode(tmp_path):
    target = tmp_path / "f.json"
    target.write_bytes(b"old")
    os.chmod(target, 0o600)
    _, snap = read_with_snapshot(target)
    atomic_write_bytes(target, b"new", snap)
    assert target.read_bytes() == b"new" and (target.stat().st_mode & 0o777) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]  # no temp file left behind


def test_refuses_when_file_changed_since_read(tmp_path):
    target = tmp_path / "f.json"
    target.write_bytes(b"old")
    _, snap = read_with_snapshot(target)
    target.write_bytes(b"someone else wrote this")
    with pytest.raises(ChangedUnderneathError):
        atomic_write_bytes(target, b"ours", snap)
    assert target.read_bytes() == b"someone else wrote this"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_replace_preserving_copies_original_first(sample_ws):
    ws = discover_workspace(sample_ws, env={})
    path = ws.memory_md
    original, snap = read_with_snapshot(path)
    kept = replace_preserving(ws, path, b"# new\n", snap, area="backups", stamp="T1")
    assert kept == ws.data_dir / "backups" / "T1" / "MEMORY.md"
    assert kept.read_bytes() == original and path.read_bytes() == b"# new\n"
    _, snap2 = read_with_snapshot(path)
    kept2 = replace_preserving(ws, path, b"# newer\n", snap2, area="backups", stamp="T1")
    assert kept2 != kept and kept.read_bytes() == original and kept2.read_bytes() == b"# new\n"


def test_copy_preserving_never_overwrites(tmp_path):
    src = tmp_path / "a"
    src.write_text("1")
    first = copy_preserving(src, tmp_path / "out" / "a")
    src.write_text("2")
    second = copy_preserving(src, tmp_path / "out" / "a")
    assert first.read_text() == "1" and second.read_text() == "2" and first != second


def test_lock_excludes_a_second_process(tmp_path):
    lock = tmp_path / "lock"
    with exclusive_lock(lock):
        code = subprocess.run([sys.executable, "-c", (
            "import sys; from qwenmem.core.fsio import exclusive_lock\n"
            "from qwenmem.core.errors import BusyError\n"
            f"try:\n    ctx = exclusive_lock({str(lock)!r}); ctx.__enter__()\nexcept BusyError as e:\n    print(e); sys.exit(4)\n"
        )], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}).returncode
        assert code == 4
    with exclusive_lock(lock):  # released: we can take it again
        pass


def test_lock_is_not_reentrant_within_process(tmp_path):
    lock = tmp_path / "lock"
    with exclusive_lock(lock):
        with pytest.raises(BusyError):
            with exclusive_lock(lock):
                pass
