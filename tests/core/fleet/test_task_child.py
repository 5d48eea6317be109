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


STOPS_HALFWAY = textwrap.dedent("""
    import os, struct, sys, time
    os.write(1, b"R")
    sys.stdin.buffer.read(8)  # the task's header (its body is left in the pipe)
    os.write(1, struct.pack("!Q", 100) + b"x" * 10)  # a record's header, then a tenth of it
    time.sleep(600)
""")


def test_a_record_cut_short_by_a_child_that_stops_writing_is_crashed_within_a_bound(monkeypatch):
    """Every wait on the child has a limit: one that says a record is coming and then writes no more (wedged, or
    stopped) costs BODY_TIMEOUT_S, never the worker's thread for ever."""
    from qwenmem.cli.app import fleet_command
    from qwenmem.core.fleet import task_child
    from qwenmem.core.fleet.targets import Target

    monkeypatch.setattr(task_child, "BODY_TIMEOUT_S", 2.0)
    child = task_child.TaskChild()
    child.kill()
    child._proc = subprocess.Popen([sys.executable, "-c", STOPS_HALFWAY], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE)
    start = time.monotonic()
    record = child.run(Target("/nowhere"), fleet_command(["doctor"]), 300)
    assert time.monotonic() - start < 30
    assert record["status"] == "crashed" and record["error"]["type"] == "worker_died"
    assert not child.alive


def test_a_child_warms_the_commands_modules_before_it_says_ready(tmp_path):
    """With --timeout on Dask the command's imports (Operation.warm, COMMON_WARM) are the child's, done before
    READY: outside the first task's timeout."""
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent("""
        import sys
        from qwenmem.core.fleet import task_child
        child = task_child.TaskChild(sys.argv[1])
        assert child.wait_ready(120)
        import subprocess
        out = subprocess.run([sys.executable, "-c", "import sys; print(open('/proc/%s/maps' % sys.argv[1]).read())",
                              str(child._proc.pid)], capture_output=True, text=True).stdout
        print("numpy" in out)
        child.kill()
    """))
    run = subprocess.run([sys.executable, str(probe), "reindex"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True"  # reindex's warm list has numpy: loaded (its .so mapped) before READY
