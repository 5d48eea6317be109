"""The task child (core/fleet/task_child.py) on its own: a real `python -m` process on pipes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

from helpers import REPO, SAMPLE


def _comparable(record: dict) -> dict:
    record = dict(record, seconds=None)
    record["result"] = dict(record["result"], elapsed_ms=None)
    return record


def test_a_child_gives_the_record_the_task_gives_in_process(tmp_path):
    from qwenmem.cli.app import fleet_command
    from qwenmem.core.fleet.targets import Target
    from qwenmem.core.fleet.task_child import TaskChild
    from qwenmem.core.fleet.tasks import run_task

    shutil.copytree(SAMPLE, tmp_path / "ws")
    target, command = Target(str(tmp_path / "ws")), fleet_command(["doctor"])
    child = TaskChild()
    try:
        first = child.run(target, command, 120)
        second = child.run(target, command, 120)  # the same process serves task after task
        assert child.alive
    finally:
        child.kill()
    assert first["status"] == "problems"  # the sample's damaged session
    assert _comparable(first) == _comparable(second) == _comparable(run_task(target, command))


PARENT = textwrap.dedent("""
    import sys, time
    from qwenmem.core.fleet.task_child import TaskChild
    child = TaskChild()
    print(child._proc.pid, flush=True)
    time.sleep(600)
""")


def test_a_child_does_not_outlive_its_parent():
    """A Dask worker killed mid-run must leave no child going on with its task while the scheduler reruns it."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert parent.stdout is not None
    child_pid = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 30
    while _running(child_pid):
        assert time.monotonic() < deadline, "the child outlived its parent"
        time.sleep(0.1)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
