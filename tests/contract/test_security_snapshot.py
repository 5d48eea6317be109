"""`qwenmem snapshot` never writes through a .qwenmem/ or snapshots/ link that leaves the workspace, and never
backs up (reads) a memory/ or MEMORY.md link that leaves it."""

from __future__ import annotations

import hashlib

from helpers import run_cli


def _tree_digest(root) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_snapshot_store_linked_outside_is_refused(sample_ws, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not yours")
    before = _tree_digest(outside)
    (sample_ws / ".qwenmem").symlink_to(outside, target_is_directory=True)
    run = run_cli("-w", str(sample_ws), "snapshot")
    assert run.code in (3, 6), (run.code, run.stderr)
    assert "outside" in run.stderr and "Traceback" not in run.stderr
    assert _tree_digest(outside) == before


def test_linked_memory_is_not_backed_up(sample_ws, tmp_path):
    outside = tmp_path / "secret-notes"
    outside.mkdir()
    (outside / "2026-11-30.md").write_text("- the outside secret 4242\n")
    (sample_ws / "memory").rename(sample_ws / "memory-real")
    (sample_ws / "memory").symlink_to(outside, target_is_directory=True)
    run = run_cli("-w", str(sample_ws), "snapshot", "--json")
    assert run.code in (0, 1, 6), run.stderr
    store = sample_ws / ".qwenmem" / "snapshots"
    for p in store.rglob("*"):
        if p.is_file():
            assert b"outside secret 4242" not in p.read_bytes(), p
    assert "4242" not in run.stdout + run.stderr
