"""Mapping workspaces onto an engine: a bounded window of tasks in flight, retries with backoff for busy ones.

The window keeps the driver's memory flat however many workspaces there are: targets are found in the background
while the first tasks run (read_ahead.py), at most the engine's window of tasks is submitted at a time (two per
local worker, eight per Dask worker thread: `Engine.window`), and each record is handed to `on_record` as soon as
its workspace finishes. What the engine has to tell the operator meanwhile (a Dask worker refused) goes to
`on_notice`.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from qwenmem.core.fleet.engines import Engine
from qwenmem.core.fleet.operations import Command
from qwenmem.core.fleet.read_ahead import ReadAhead
from qwenmem.core.fleet.targets import Target
from qwenmem.core.fleet.tasks import BUSY

OnRecord = Callable[[Target, dict[str, Any], int], None]
#: the statuses of a task that did not run to its end (the rest, ok and problems, are the command's own answer)
FAILED = frozenset({"crashed", "timeout", "error", "busy"})


@dataclass
class Progress:
    """Where a run is, for a display: handed to `on_progress` after each record and every `tick` seconds. The
    total is known once discovery has ended (workspaces are found while the first ones already run)."""

    found: int = 0  # workspaces found so far that are to run (the --resume skipped ones are not counted)
    skipped: int = 0
    done: int = 0  # records handed to on_record
    failed: int = 0  # of them, statuses in FAILED
    problems: int = 0
    in_flight: int = 0
    discovering: bool = True
    started: float = field(default_factory=time.monotonic)

    @property
    def total(self) -> int | None:
        return None if self.discovering else self.found

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def rate(self) -> float:
        """Workspaces finished per second so far."""
        return self.done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds left at the rate so far; None until the total and a rate are known."""
        if self.total is None or not self.rate:
            return None
        return max(0, self.total - self.done) / self.rate

    def count(self, status: str) -> None:
        self.done += 1
        self.failed += status in FAILED
        self.problems += status == "problems"


OnProgress = Callable[[Progress], None]
OnNotice = Callable[[str], None]


@dataclass
class RetryPolicy:
    retries: int = 3  # extra attempts for a busy workspace (another process holds its lock, or a file changed)
    backoff: float = 1.0  # seconds before the first retry; doubled each time
    max_backoff: float = 60.0

    def delay(self, attempt: int) -> float:
        return min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))


@dataclass
class FleetSummary:
    statuses: Counter[str] = field(default_factory=Counter)
    skipped: int = 0  # already recorded in the --resume file
    retried: Counter[str] = field(default_factory=Counter)  # workspace label -> retries it needed
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.statuses.values())


class _Run:
    """One run's moving parts: the read-ahead, the tasks in flight, the busy ones waiting for their retry."""

    def __init__(self, targets: Iterable[Target], engine: Engine, command: Command, policy: RetryPolicy,
                 skip: frozenset[str], window: int | None) -> None:
        self.engine, self.command, self.policy, self._window = engine, command, policy, window
        self.summary = FleetSummary()
        self.progress = Progress()
        self.ahead = ReadAhead(self._wanted(targets, skip))
        self.drained = False  # the read-ahead has ended and given everything
        self.in_flight: dict[Any, tuple[Target, int]] = {}
        self.delayed: list[tuple[float, int, Target, int]] = []  # (ready at, tie-breaker, target, attempt)
        self.order = itertools.count()

    def _wanted(self, targets: Iterable[Target], skip: frozenset[str]) -> Iterator[Target]:
        for target in targets:  # runs in the discovery thread; only it writes `skipped`
            if target.label in skip:
                self.summary.skipped += 1
            else:
                yield target

    @property
    def window(self) -> int:
        """The caller's, else the engine's (a Dask engine's grows and shrinks with the workers that can run)."""
        return self._window or max(2, self.engine.window)

    def fill(self) -> None:
        """Submit retries that are due, then new workspaces, up to the window; never waits for discovery."""
        now = time.monotonic()
        while len(self.in_flight) < self.window:
            if self.delayed and self.delayed[0][0] <= now:
                _, _, target, attempt = heapq.heappop(self.delayed)
            elif not self.drained:
                found, self.drained = self.ahead.take()
                if found is None:
                    break
                target, attempt = found, 1
            else:
                break
            self.in_flight[self.engine.submit(target, self.command)] = (target, attempt)

    @property
    def over(self) -> bool:
        return self.drained and not self.in_flight and not self.delayed

    def report(self, on_progress: OnProgress) -> None:
        self.progress.found, self.progress.discovering = self.ahead.found, not self.ahead.finished
        self.progress.skipped, self.progress.in_flight = self.summary.skipped, len(self.in_flight)
        on_progress(self.progress)

    def collect(self, on_record: OnRecord, tick: float) -> None:
        """Wait up to `tick` seconds (less when a retry falls due, or discovery has nothing submitted yet)."""
        wait = tick
        if self.delayed:
            wait = min(wait, max(0.0, self.delayed[0][0] - time.monotonic()))
        if not self.in_flight:
            time.sleep(min(wait, 0.02))
            return
        for future in self.engine.wait(list(self.in_flight), wait if self.drained else min(wait, 0.05)):
            target, attempt = self.in_flight.pop(future)
            record = self.engine.outcome(future)
            if record["status"] == BUSY and attempt <= self.policy.retries:
                self.summary.retried[target.label] += 1
                heapq.heappush(self.delayed, (time.monotonic() + self.policy.delay(attempt), next(self.order),
                                              target, attempt + 1))
                continue
            self.summary.statuses[record["status"]] += 1
            self.progress.count(record["status"])
            on_record(target, record, attempt)


def run_fleet(targets: Iterable[Target], command: Command, engine: Engine, on_record: OnRecord, *,
              policy: RetryPolicy | None = None, skip: frozenset[str] = frozenset(),
              window: int | None = None, on_progress: OnProgress | None = None, tick: float = 1.0,
              on_notice: OnNotice | None = None) -> FleetSummary:
    """Submit while discovering: at most `window` tasks (default: the engine's window) are in flight, so the first
    task starts as soon as its workspace is found and the driver holds no more than a window of futures."""
    run = _Run(targets, engine, command, policy or RetryPolicy(), skip, window)
    report = on_progress or (lambda _: None)
    tell = on_notice or (lambda _: None)
    start = time.monotonic()
    try:
        while True:
            run.fill()
            if run.over:
                break
            run.report(report)
            run.collect(on_record, tick)
            for notice in engine.take_notices():
                tell(notice)
    except BaseException:
        run.ahead.close()
        engine.close(cancel=True)
        run.summary.seconds = time.monotonic() - start
        raise
    engine.close()
    run.report(report)
    run.summary.seconds = time.monotonic() - start
    return run.summary
