"""`qwenmem fleet -- doctor` on copies of the generated 2.x workspace (history.db): it leaves no file behind that
was not there (no -wal, -shm, -journal, nothing of qwenmem's), changes no byte, and reports what `doctor` alone
reports for that root's agent."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from helpers import run_cli
from qwenpaw2_support import copy_corpus, needs_gen2_corpus

pytestmark = needs_gen2_corpus


def _listing(base: Path) -> dict[str, str]:
    """Every file and directory under base with its content's digest (a directory: "dir")."""
    return {str(p.relative_to(base)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(base.rglob("*"))}


def _deployment(tmp_path: Path) -> tuple[Path, Path]:
    """Two roots: the corpus as it was left (history.db with its -wal and -shm) and the same closed (no sidecar)."""
    as_left = copy_corpus(tmp_path / "as-left").parents[1]
    closed = copy_corpus(tmp_path / "closed").parents[1]
    for sidecar in closed.rglob("history.db-*"):
        sidecar.unlink()
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    shutil.move(as_left, fleet / "as-left")
    shutil.move(closed, fleet / "closed")
    return fleet / "as-left", fleet / "closed"


def _without_timing(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "elapsed_ms"}


@pytest.mark.parametrize("engine_args", [["-j", "2"], ["-j", "1", "--timeout", "30"]], ids=["pool", "timeout"])
def test_fleet_doctor_leaves_no_sidecar_and_reports_what_doctor_alone_does(tmp_path, engine_args):
    as_left, closed = _deployment(tmp_path)
    before = {root.name: _listing(root) for root in (as_left, closed)}
    assert any(name.endswith("history.db-wal") for name in before["as-left"])
    assert not any("history.db-" in name for name in before["closed"])

    run = run_cli("fleet", str(as_left.parent), *engine_args, "--", "doctor")
    records = {Path(r["workspace"]).name: r for r in map(json.loads, run.stdout.splitlines())}
    assert set(records) == {"as-left", "closed"} and {r["agent"] for r in records.values()} == {"default"}
    after_fleet = {root.name: _listing(root) for root in (as_left, closed)}
    assert after_fleet == before  # no new file, none gone, not a byte changed

    for root in (as_left, closed):
        single = run_cli("-w", str(root), "doctor", "--json").json()
        record = records[root.name]
        assert record["status"] == single["status"] and record["exit_code"] == run_cli(
            "-w", str(root), "doctor", "--quiet").code
        assert _without_timing(record["result"]) == _without_timing(single["result"])
        assert record["warnings"] == single["warnings"]
    assert {root.name: _listing(root) for root in (as_left, closed)} == before
