"""Crash injection: SIGKILL a real dream process at named steps and at random moments.

At a named step, a child process runs the core operation with a checkpoint (DreamOptions.checkpoint) that kills
it there; at random moments, the real `qwenmem dream` is killed from outside. Whatever the moment, MEMORY.md must
be exactly the old or exactly the new version, and whenever it is the new one, a backup of the old one must exist.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from helpers import REPO, run_cli
from qwenmem.core.dream.run import STEPS, DreamOptions, dream
from qwenmem.core.settings import load_settings
from qwenmem.core.workspace import discover_workspace

# the child: `qwenmem dream --mode deterministic --date 2026-11-27` as the core call, killed at the step in argv[2]
KILLED_AT_STEP = """
import os, signal, sys
from qwenmem.core.dream.run import DreamOptions, dream
from qwenmem.core.settings import load_settings
from qwenmem.core.workspace import discover_workspace

def kill_at(step):
    if step == sys.argv[2]:
        os.kill(os.getpid(), signal.SIGKILL)

ws = discover_workspace(sys.argv[1])
dream(ws, load_settings(ws), DreamOptions(date="2026-11-27", checkpoint=kill_at))
"""


def _big_memory(ws):
    """A MEMORY.md of a few MB with many duplicates, so that the write itself takes a measurable time."""
    lines = ["# Long-Term Memory", "", "## Facts"]
    for i in range(12000):
        lines.append(f"- fact number {i % 8000} about the staging cluster and its connection pool")
    (ws / "MEMORY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _expected_new(tmp_path, ws) -> tuple[bytes, float]:
    """What an uninterrupted run writes, and how long it takes."""
    ref = tmp_path / "reference"
    shutil.copytree(ws, ref)
    started = time.monotonic()
    run = run_cli("dream", "-w", str(ref), "--mode", "deterministic", "--date", "2026-11-27")
    assert run.code == 0, run.stderr
    return (ref / "MEMORY.md").read_bytes(), time.monotonic() - started


def _env(**extra) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(extra)
    return env


def _check_invariants(ws, old: bytes, new: bytes) -> str:
    current = (ws / "MEMORY.md").read_bytes()
    assert current in (old, new), "MEMORY.md is neither the old nor the new version"
    saved = [p.read_bytes() for p in (ws / "backup").glob("memory_backup_*.md")] if (ws / "backup").is_dir() else []
    if current == new:
        assert old in saved, "MEMORY.md was replaced but no backup holds the old version"
    for p in saved:
        assert p == old, "a backup holds something other than the old MEMORY.md"
    return "new" if current == new else "old"


@pytest.mark.parametrize("step", STEPS)
def test_kill_at_each_step_leaves_old_or_new_and_the_backup(sample_ws, tmp_path, step):
    old = (sample_ws / "MEMORY.md").read_bytes()
    new, _ = _expected_new(tmp_path, sample_ws)
    proc = subprocess.run([sys.executable, "-c", KILLED_AT_STEP, str(sample_ws), step], env=_env(),
                          capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    state = _check_invariants(sample_ws, old, new)
    assert state == ("old" if step in ("locked", "backed-up") else "new")
    if step != "locked":
        assert list((sample_ws / "backup").glob("memory_backup_*.md"))
    # the lock died with the process: the next run completes the job
    again = run_cli("dream", "-w", str(sample_ws), "--mode", "deterministic", "--date", "2026-11-27")
    assert again.code == 0, again.stderr
    assert (sample_ws / "MEMORY.md").read_bytes() == new


def test_the_checkpoint_sees_every_step_in_order(sample_ws):
    ws = discover_workspace(sample_ws)
    seen: list[str] = []
    result = dream(ws, load_settings(ws), DreamOptions(date="2026-11-27", refresh_index=False,
                                                        checkpoint=seen.append))
    assert result.status == "changed"
    assert tuple(seen) == STEPS == ("locked", "backed-up", "written", "logged")


def test_the_binary_ignores_the_old_crash_variable(sample_ws, tmp_path):
    """The shipped `qwenmem` no longer kills itself when QWENMEM_TEST_CRASH_AT names a step."""
    new, _ = _expected_new(tmp_path, sample_ws)
    run = run_cli("dream", "-w", str(sample_ws), "--mode", "deterministic", "--date", "2026-11-27",
                  env={"QWENMEM_TEST_CRASH_AT": "written"})
    assert run.code == 0, run.stderr
    assert (sample_ws / "MEMORY.md").read_bytes() == new


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_kill_at_random_moments_while_writing_a_large_file(sample_ws, tmp_path):
    _big_memory(sample_ws)
    old = (sample_ws / "MEMORY.md").read_bytes()
    new, duration = _expected_new(tmp_path, sample_ws)
    assert new != old
    rng = random.Random(int(os.environ.get("QWENMEM_CRASH_SEED", "20261130")))
    outcomes = []
    for _ in range(6):
        ws = tmp_path / f"ws{len(outcomes)}"
        shutil.copytree(sample_ws, ws)
        proc = subprocess.Popen([sys.executable, "-m", "qwenmem", "dream", "-w", str(ws), "--mode", "deterministic",
                                 "--date", "2026-11-27"], env=_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.1) * duration)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        outcomes.append(_check_invariants(ws, old, new))
        leftovers = [p.name for p in ws.iterdir() if p.name not in
                     ("MEMORY.md", "agent.json", "chats.json", "memory", "sessions", "backup", ".qwenmem")]
        assert all(name.endswith(".qwenmem-tmp") for name in leftovers), leftovers
    assert set(outcomes) <= {"old", "new"}
