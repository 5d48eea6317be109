"""Discovery streams: the first task runs while workspaces are still being found, the read-ahead is bounded, and
a failure of the walk (an unreadable --from file) reaches the driver."""

from __future__ import annotations

import shutil
import threading
import time

import pytest
from helpers import SAMPLE

from qwenmem.core.fleet.read_ahead import ReadAhead


def test_the_walk_stops_at_the_limit_until_the_driver_takes():
    yielded = []

    def walk():
        for i in range(100):
            yielded.append(i)
            yield i

    ahead = ReadAhead(walk(), limit=5)
    time.sleep(0.3)
    assert ahead.found == 5 and len(yielded) <= 6 and not ahead.finished  # 5 queued, the 6th waiting for room
    assert list(ahead) == list(range(100)) and ahead.finished and ahead.found == 100


def test_the_total_is_known_before_the_driver_has_taken_it_all():
    ahead = ReadAhead(iter(range(1000)))
    deadline = time.monotonic() + 10
    while not ahead.finished and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ahead.finished and ahead.found == 1000
    assert ahead.take() == (0, False)


def test_a_failing_walk_raises_in_the_driver_after_what_it_found():
    def walk():
        yield "a"
        raise OSError("unreadable listing")

    ahead = ReadAhead(walk())
    assert next(iter(ahead)) == "a"
    with pytest.raises(OSError, match="unreadable listing"):
        list(ahead)


def test_the_first_task_runs_before_discovery_has_ended(tmp_path):
    """The walk yields one workspace, then waits until that workspace's record has come back: a driver that
    found everything first would wait forever (here: fail after 60 s)."""
    from qwenmem.cli.app import fleet_command
    from qwenmem.core.fleet import Target, run_fleet
    from qwenmem.core.fleet.engines import LocalEngine

    for name in ("first", "second"):
        shutil.copytree(SAMPLE, tmp_path / name)
    first_done = threading.Event()

    def walk():
        yield Target(str(tmp_path / "first"))
        assert first_done.wait(60), "the first task did not run while discovery was still going"
        yield Target(str(tmp_path / "second"))

    got = []

    def on_record(target, record, attempts):
        got.append((target.path, record["status"]))
        first_done.set()

    summary = run_fleet(walk(), fleet_command(["doctor"]), LocalEngine(1, None, "doctor"), on_record)
    assert [p for p, _ in got] == [str(tmp_path / "first"), str(tmp_path / "second")]
    assert summary.total == 2


def test_an_unreadable_listing_is_a_usage_error_of_the_run(tmp_path):
    from helpers import run_cli

    run = run_cli("fleet", "--from", str(tmp_path / "absent.txt"), "-j", "1", "--", "doctor")
    assert run.code == 2 and "--from" in run.stderr and "No such file" in run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""
