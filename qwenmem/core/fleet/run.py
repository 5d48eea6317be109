"""Mapping workspaces onto an engine: a bounded window of tasks in flight, retries with backoff for busy ones.

The window keeps the driver's memory flat however many workspaces there are: targets are read lazily and each
record is handed to `on_record` as soon as its workspace finishes.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from qwenmem.core.fleet.engines import Engine
from qwenmem.core.fleet.operations import Command
from qwenmem.core.fleet.targets import Target
from qwenmem.core.fleet.tasks import BUSY

OnRecord = Callable[[Target, dict[str, Any], int], None]


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


def run_fleet(targets: Iterable[Target], command: Command, engine: Engine, on_record: OnRecord, *,
              policy: RetryPolicy | None = None, skip: frozenset[str] = frozenset(),
              window: int | None = None) -> FleetSummary:
    policy = policy or RetryPolicy()
    window = window or max(2, 2 * engine.workers)
    summary = FleetSummary()
    start = time.monotonic()
    source = iter(targets)
    exhausted = False
    in_flight: dict[Any, tuple[Target, int]] = {}
    delayed: list[tuple[float, int, Target, int]] = []  # (ready at, tie-breaker, target, attempt)
    order = itertools.count()
    try:
        while True:
            now = time.monotonic()
            while len(in_flight) < window:
                if delayed and delayed[0][0] <= now:
                    _, _, target, attempt = heapq.heappop(delayed)
                elif not exhausted:
                    upcoming = next(source, None)
                    if upcoming is None:
                        exhausted = True
                        continue
                    target = upcoming
                    if target.label in skip:
                        summary.skipped += 1
                        continue
                    attempt = 1
                else:
                    break
                in_flight[engine.submit(target, command)] = (target, attempt)
            if not in_flight and not delayed and exhausted:
                break
            until_retry = max(0.0, delayed[0][0] - now) if delayed else None
            if not in_flight:
                time.sleep(until_retry or 0.0)
                continue
            for future in engine.wait(list(in_flight), until_retry):
                target, attempt = in_flight.pop(future)
                record = engine.outcome(future)
                if record["status"] == BUSY and attempt <= policy.retries:
                    summary.retried[target.label] += 1
                    heapq.heappush(delayed, (time.monotonic() + policy.delay(attempt), next(order), target,
                                             attempt + 1))
                    continue
                summary.statuses[record["status"]] += 1
                on_record(target, record, attempt)
    except BaseException:
        engine.close(cancel=True)
        summary.seconds = time.monotonic() - start
        raise
    engine.close()
    summary.seconds = time.monotonic() - start
    return summary
