"""Events a run goes on past, kept per call instead of in process-global lists.

Two things do not stop an operation but must reach its exit code: a link it refused to follow out of the
workspace (qwenmem.core.confine) and a file it had no room to write (qwenmem.core.fsio). Each is reported where
it happens to the innermost `recording()` of the calling context (a `contextvars` variable: a thread or an
asyncio task of its own starts with none), and that recording hands them to every recording around it when it
ends. Outside any recording an event is only the exception it raises: nothing is kept, so nothing piles up
across the workspaces one fleet worker runs.

    with recording() as log:
        outcome = operation(ws, options)
    log.events.refused_links  # this call's refusals, and no other's
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Events:
    """What one call went on past: each a line naming the path."""

    refused_links: tuple[str, ...] = ()  # a link out of the workspace, or a loop: not followed
    disk_full: tuple[str, ...] = ()  # no space left for this file: it was left as it was

    def __bool__(self) -> bool:
        return bool(self.refused_links or self.disk_full)


@dataclass
class EventLog:
    """The events of one recording, in order."""

    refused_links: list[str] = field(default_factory=list)
    disk_full: list[str] = field(default_factory=list)

    @property
    def events(self) -> Events:
        return Events(tuple(self.refused_links), tuple(self.disk_full))


_current: ContextVar[EventLog | None] = ContextVar("qwenmem_events", default=None)


@contextlib.contextmanager
def recording() -> Iterator[EventLog]:
    """Collect the events of the code run inside; on exit they also go to the recording around this one."""
    outer = _current.get()
    log = EventLog()
    token = _current.set(log)
    try:
        yield log
    finally:
        _current.reset(token)
        if outer is not None:
            outer.refused_links.extend(log.refused_links)
            outer.disk_full.extend(log.disk_full)


def refused_link(message: str) -> None:
    log = _current.get()
    if log is not None:
        log.refused_links.append(message)


def disk_full(message: str) -> None:
    log = _current.get()
    if log is not None:
        log.disk_full.append(message)
