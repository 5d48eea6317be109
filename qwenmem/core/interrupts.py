"""Safe points for Ctrl-C and SIGTERM.

The CLI (qwenmem/cli/signals.py) turns SIGINT and SIGTERM into `Interrupted`, raised wherever Python is. Code
whose steps must not be separated (write the temporary, rename it, fsync the directory; replace MEMORY.md, then log
the change) runs inside `deferred()`: a signal arriving there is held and raised when the block ends, so a run
always stops between two whole steps. Without the CLI's handler (library use) this module changes nothing.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

# Process state by nature, not a workspace's: a signal is delivered to the process. The depth is per thread; the
# held signals are raised and cleared when the outermost deferred block ends.
_state = threading.local()
_pending: list[int] = []


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; `signum` says which."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signum)
        self.signum = signum


def deferring() -> bool:
    return getattr(_state, "depth", 0) > 0


def hold(signum: int) -> None:
    """Called by the signal handler while deferring: remember the signal for the end of the block."""
    if signum not in _pending:
        _pending.append(signum)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1
        if _state.depth == 0 and _pending:
            signum = signal.SIGTERM if signal.SIGTERM in _pending else _pending[0]
            _pending.clear()
            raise Interrupted(signum)


def quiet_worker_signals() -> None:
    """For pool worker processes, which inherit the CLI's handlers through fork: the parent coordinates a stop
    (Ctrl-C reaches the whole process group, so the workers ignore SIGINT), and the pool ends its workers with
    SIGTERM, which must end them silently rather than raise `Interrupted` with a traceback inside the pool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
