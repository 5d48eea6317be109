"""`qwenmem fleet --resume` in real processes: failed records are run again by default (--no-retry-failed skips
them), and a run stopped by SIGINT goes on where it stopped without running twice a workspace that had ended."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from helpers import REPO, SAMPLE

# A real `qwenmem fleet` process whose operation hangs on a workspace holding a HANG file (a stand-in for a mount
# that stops answering: a FIFO no longer hangs anything, it is refused unopened) and takes PAUSE seconds on the
# others, so a test can interrupt it mid-run.
DRIVER = textwrap.dedent("""
    import os, runpy, sys, time
    from qwenmem.core.fleet.operations import Operation

    real_run_for = Operation.run_for

    def hang_or_pause(self, target, ws, options):
        if (ws.path / "HANG").exists():
            time.sleep(600)
        time.sleep(float(os.environ.get("PAUSE", "0")))
        return real_run_for(self, target, ws, options)

    Operation.run_for = hang_or_pause
    sys.argv = ["qwenmem", *sys.argv[1:]]
    runpy.run_module("qwenmem", run_name="__main__")
""")


def _fleet(*args: str, stdout_to: Path, pause: float = 0.0) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO), PAUSE=str(pause))
    with open(stdout_to, "a", encoding="utf-8") as out:  # appended, as `>> run.jsonl` does
        return subprocess.Popen([sys.executable, "-c", DRIVER, "fleet", *args], stdout=out,
                                stderr=subprocess.PIPE, text=True, env=env, stdin=subprocess.DEVNULL)


def _finish(proc: subprocess.Popen) -> tuple[int, str]:
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def _records(path: Path) -> list[dict]:
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue  # the partial last line of a killed run
    return records


def _workspaces(base: Path, count: int) -> list[Path]:
    paths = [base / f"ws{i:02d}" for i in range(count)]
    for path in paths:
        shutil.copytree(SAMPLE, path)
    return paths


def test_resume_retries_a_timed_out_workspace_once_it_is_fixed(tmp_path):
    fleet = tmp_path / "fleet"
    _workspaces(fleet, 3)
    (fleet / "ws01" / "HANG").write_text("")
    log = tmp_path / "run.jsonl"
    code, _ = _finish(_fleet(str(fleet), "-j", "2", "--timeout", "5", "--", "doctor", stdout_to=log))
    first = {Path(r["workspace"]).name: r["status"] for r in _records(log)}
    assert first == {"ws00": "problems", "ws01": "timeout", "ws02": "problems"} and code == 1

    (fleet / "ws01" / "HANG").unlink()  # the mount answers again
    skipping = tmp_path / "skipping.jsonl"
    code, err = _finish(_fleet(str(fleet), "--resume", str(log), "--no-retry-failed", "--", "doctor",
                               stdout_to=skipping))
    assert _records(skipping) == [] and code == 0
    assert "2 recorded workspace(s) skipped, 1 that failed are skipped too (--no-retry-failed)" in err

    code, err = _finish(_fleet(str(fleet), "--resume", str(log), "--timeout", "5", "--", "doctor", stdout_to=log))
    assert "2 recorded workspace(s) skipped, 1 that failed (crashed, timeout, error, busy) run again" in err
    assert "1 run again: they had failed in the --resume file" in err and "2 skipped" in err
    records = _records(log)
    assert [(Path(r["workspace"]).name, r["status"]) for r in records[3:]] == [("ws01", "problems")]
    # a third resume finds every workspace's last record done: nothing runs
    third = tmp_path / "third.jsonl"
    code, err = _finish(_fleet(str(fleet), "--resume", str(log), "--", "doctor", stdout_to=third))
    assert _records(third) == [] and "3 recorded workspace(s) skipped, 0 that failed" in err


def test_sigint_mid_run_then_resume_runs_each_ended_workspace_once(tmp_path):
    count = 24
    paths = _workspaces(tmp_path / "fleet", count)
    log = tmp_path / "run.jsonl"
    proc = _fleet(str(tmp_path / "fleet"), "-j", "2", "--", "sessions", "repair", "--all", stdout_to=log, pause=0.3)
    deadline = time.monotonic() + 60
    while len(_records(log)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    code, err = _finish(proc)
    first = _records(log)
    assert code == 130 and "interrupted" in err
    assert 4 <= len(first) < count, "the interrupt came too late to test anything"

    code, err = _finish(_fleet(str(tmp_path / "fleet"), "-j", "2", "--resume", str(log), "--",
                               "sessions", "repair", "--all", stdout_to=log))
    assert code == 0, err
    records = _records(log)
    names = [Path(r["workspace"]).name for r in records]
    assert sorted(names) == sorted(p.name for p in paths)  # every workspace once: none lost, none run twice
    assert {r["status"] for r in records} == {"ok"}
    for path in paths:  # each repaired exactly once: its damaged session's original is quarantined once
        originals = [p for p in (path / ".qwenmem").rglob("77_telegram--77.json*") if p.is_file()]
        assert len(originals) == 1, (path.name, originals)


def _children(pid: int) -> list[int]:
    found = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:  # the field after the state is the parent's pid
            found.append(int(stat_file.parent.name))
    return found


def test_a_worker_killed_mid_task_costs_that_workspace_and_resume_reruns_it(tmp_path):
    """SIGKILL one local worker from outside while it runs a task: that workspace is `crashed`, a new worker
    takes the rest, and `--resume` runs the crashed one again, to its end."""
    count = 8
    _workspaces(tmp_path / "fleet", count)
    log = tmp_path / "run.jsonl"
    proc = _fleet(str(tmp_path / "fleet"), "-j", "2", "--", "doctor", stdout_to=log, pause=1.5)
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while len(workers) < 2 and time.monotonic() < deadline:
        workers = _children(proc.pid)
        time.sleep(0.05)
    while not _records(log) and time.monotonic() < deadline:  # the workers are warm and busy with tasks
        time.sleep(0.05)
    victim = _children(proc.pid)[0]
    os.kill(victim, signal.SIGKILL)
    code, err = _finish(proc)
    records = _records(log)
    statuses = [r["status"] for r in records]
    assert len(records) == count and statuses.count("crashed") == 1, err
    crashed = next(r for r in records if r["status"] == "crashed")
    assert crashed["error"]["code"] == "worker_died" and code == 1
    assert set(statuses) == {"problems", "crashed"}  # the sample's damaged session: doctor says problems

    code, err = _finish(_fleet(str(tmp_path / "fleet"), "--resume", str(log), "--", "doctor", stdout_to=log))
    rerun = _records(log)[count:]
    assert [(r["workspace"], r["status"]) for r in rerun] == [(crashed["workspace"], "problems")], err
    assert f"{count - 1} recorded workspace(s) skipped, 1 that failed" in err
