"""Discovery in the background: workspaces are found by a thread while the first ones already run, so a run knows
its total (for the ETA) as soon as the walk ends, not when the last task is submitted.

The read-ahead holds targets only (a path and an agent id, some 300 bytes each) and at most `limit` of them: past
that the walk waits for the driver, so the driver's memory stays bounded whatever the deployment's size.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

#: targets found ahead of the driver at most: 20,000 of them are some 6 MB (bench/RESULTS.md, fleet-discovery: the
#: driver's peak grew 3 MiB from 1,000 to 10,000 workspaces), and a deployment that size knows its total early
READ_AHEAD = 20_000


class ReadAhead(Generic[T]):
    def __init__(self, source: Iterable[T], limit: int = READ_AHEAD) -> None:
        self.found = 0  # items the walk has yielded so far
        self.finished = False  # the walk has ended: `found` is the total
        self._source = source
        self._limit = limit
        self._queue: deque[T] = deque()
        self._failure: BaseException | None = None
        self._stop = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._walk, name="qwenmem-fleet discovery", daemon=True)
        self._thread.start()

    def _walk(self) -> None:
        try:
            for item in self._source:
                with self._changed:
                    while len(self._queue) >= self._limit and not self._stop:
                        self._changed.wait()
                    if self._stop:
                        return
                    self._queue.append(item)
                    self.found += 1
                    self._changed.notify_all()
        except BaseException as exc:  # noqa: BLE001 - e.g. an unreadable --from file: raised in the driver
            self._failure = exc
        finally:
            with self._changed:
                self.finished = True
                self._changed.notify_all()

    def take(self) -> tuple[T | None, bool]:
        """The next item if one is found already (never waits), and whether the walk is over and drained."""
        with self._changed:
            if self._queue:
                item = self._queue.popleft()
                self._changed.notify_all()
                return item, False
            if self.finished and self._failure is not None:
                failure, self._failure = self._failure, None
                raise failure
            return None, self.finished

    def __iter__(self) -> Iterator[T]:
        while True:
            with self._changed:
                while not self._queue and not self.finished:
                    self._changed.wait()
                if self._queue:
                    item = self._queue.popleft()
                    self._changed.notify_all()
                elif self._failure is not None:
                    raise self._failure
                else:
                    return
            yield item

    def close(self) -> None:
        """Stop the walk (a run interrupted or failed): it ends at its next workspace."""
        with self._changed:
            self._stop = True
            self._changed.notify_all()
