"""Regressions found by adversarial QA of the merged commands (real files, real entry point, no mocks)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke
from repair_fixtures import TINY, make_workspace


def test_repair_never_reads_or_replaces_a_symlink_that_leaves_the_workspace(tmp_path):
    outside = tmp_path / "outside" / "s.json"
    outside.parent.mkdir()
    outside.write_bytes(b"\xef\xbb\xbf" + TINY.read_bytes())  # a BOM: repair would want to rewrite it
    root = make_workspace(tmp_path / "ws", {})
    (root / "sessions").mkdir(parents=True)
    link = root / "sessions" / "default_x.json"
    link.symlink_to(outside)
    for args in (("--check",), ("--all",), ("--all", "--dry-run")):
        run = invoke("-w", str(root), "sessions", "repair", *args, "--json")
        files = run.json()["result"]["files"]
        assert files[0]["status"] == "error" and "outside the workspace" in " ".join(files[0]["notes"])
        assert link.is_symlink() and outside.read_bytes().startswith(b"\xef\xbb\xbf")
    assert not (root / ".qwenmem" / "quarantine").exists() or not any((root / ".qwenmem" / "quarantine").rglob("*.json"))
