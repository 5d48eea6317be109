"""The window of tasks in flight is the engine's (`Engine.window`), and the Dask backstop's rules on its own."""

from __future__ import annotations

import concurrent.futures as cf

from qwenmem.core.fleet.dask_engine import WINDOW_MAX, WINDOW_PER_THREAD, Patience, given_up
from qwenmem.core.fleet.run import run_fleet
from qwenmem.core.fleet.targets import Target
from qwenmem.core.fleet.tasks import OK


class CountingEngine:
    """Answers every task at once, and counts the most tasks it ever had in flight."""

    name = "counting"

    def __init__(self, window: int) -> None:
        self.workers, self.window = 1, window
        self.in_flight: set[cf.Future] = set()
        self.most = 0
        self.notices = ["fleet: a notice from the engine"]

    def take_notices(self) -> list[str]:
        notices, self.notices = self.notices, []
        return notices

    def submit(self, target, command):
        future: cf.Future = cf.Future()
        future.set_result({"status": OK, "result": None, "warnings": [], "error": None, "seconds": 0.0,
                           "events": {}, "exit_as": None})
        self.in_flight.add(future)
        self.most = max(self.most, len(self.in_flight))
        return future

    def wait(self, futures, timeout):
        return list(futures)

    def outcome(self, future):
        self.in_flight.discard(future)
        return future.result()

    def close(self, cancel=False):
        pass


def test_the_window_is_the_engines_and_notices_reach_the_caller():
    engine = CountingEngine(window=7)
    records, notices = [], []
    summary = run_fleet(iter([Target(f"/ws{i}") for i in range(100)]), None, engine,  # type: ignore[arg-type]
                        lambda target, record, attempts: records.append(target), on_notice=notices.append)
    assert summary.statuses[OK] == len(records) == 100
    assert engine.most == 7
    assert notices == ["fleet: a notice from the engine"]


def test_local_and_dask_windows():
    from qwenmem.core.fleet.engines import LocalEngine

    local = LocalEngine(3, None)
    try:
        assert local.window == 6  # one running and one waiting per worker process
    finally:
        local.close()
    assert WINDOW_PER_THREAD == 8 and WINDOW_MAX >= 1024  # Dask: a round trip through the scheduler per answer


def test_what_the_backstop_gives_up():
    limit = Patience(start_s=120, grace_s=30).limit(60)
    assert limit == 210
    running = {"dask_state": "processing", "worker": "tcp://w:1", "executing": 5.0, "silent": 1.0, "held_by": {}}
    assert given_up(False, limit) is None  # not asked about
    assert "no longer knows" in given_up(None, limit)
    assert "no longer knows" in given_up(None, None)  # with or without --timeout
    assert given_up(running, limit) is None
    assert "running for 300 s" in given_up(dict(running, executing=300.0), limit)
    assert "has not answered the scheduler for 400 s" in given_up(dict(running, silent=400.0), limit)
    assert given_up(dict(running, executing=3000.0, silent=3000.0), None) is None  # no --timeout: a long workspace
    queued = dict(running, executing=None)
    assert given_up(queued, limit) is None  # waiting on a live worker behind others
    held = {"dask_state": "memory", "worker": None, "executing": None, "silent": None, "held_by": {"tcp://w:1": 500.0}}
    assert "its result is on tcp://w:1" in given_up(held, limit)
    assert given_up(dict(held, held_by={"tcp://w:1": 500.0, "tcp://w:2": 1.0}), limit) is None
    assert given_up(dict(running, dask_state="no-worker", executing=None, silent=None), limit) is None
