"""Ctrl-C and SIGTERM: one line and exit 130 / 143, at a safe point, whenever they arrive.

The entry point (`qwenmem` script and `python -m qwenmem`, qwenmem/cli/entry.py) installs these handlers before
it imports anything heavy (Typer, the command modules), so a Ctrl-C in the first milliseconds is handled like any
later one instead of printing a traceback from inside an import. Before that, from the first line of
qwenmem/__main__.py and of entry.py on, a signal is only noted (with the C `_signal` module) and raised once these
handlers are in place (tests/cli/test_signals_startup.py signals at each import). What happens before the first line of qwenmem
runs (the interpreter's own start-up, ~40 ms on a loaded machine) is Python's; a launcher that blocks SIGINT and
SIGTERM across exec closes that window too, since install() unblocks them once the handlers are in place.
"""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING

from qwenmem.core import interrupts

if TYPE_CHECKING:
    from types import FrameType

EXIT_INTERRUPTED = 130  # 128 + SIGINT, qwenmem.cli.errors.ExitCode.INTERRUPTED
EXIT_TERMINATED = 143  # 128 + SIGTERM, ExitCode.TERMINATED


_received: list[int] = []
_reported: list[bool] = []


def _handler(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    if interrupts.deferring():  # inside a step that must finish (a rename and its fsync): stop right after it
        interrupts.hold(signum)
        return
    raise interrupts.Interrupted(signum)


def install(noted: list[int] | None = None) -> None:
    """Handle SIGINT and SIGTERM from here on. Either signal blocked by whoever started us (a launcher that blocks
    them until the handlers exist) is unblocked afterwards, so one that arrived early is delivered now, to us; one
    the entry point's first lines `noted` (it arrived during the imports) is raised now."""
    installed = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            if signal.getsignal(signum) is signal.SIG_IGN and signum == signal.SIGINT:
                continue  # started in the background with SIGINT ignored (nohup, `&` in a script): keep it so
            signal.signal(signum, _handler)
            installed.append(signum)
        except (ValueError, OSError):  # not the main thread (embedded use): leave the host's handlers alone
            pass
    if installed and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, installed)
    if noted:
        _received.append(noted[-1])
        raise interrupts.Interrupted(noted[-1])


def block_for_exit() -> None:
    """Block SIGINT and SIGTERM for the rest of the process's life (its outcome is decided: see entry.main)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def signal_of(exc: BaseException) -> int:
    """SIGTERM or SIGINT for a KeyboardInterrupt (or click's Abort wrapping one)."""
    for e in (exc, exc.__cause__, exc.__context__):
        if isinstance(e, interrupts.Interrupted):
            return e.signum
    return signal.SIGINT


def reset() -> None:
    """Forget earlier runs' signals (one process can run several command lines: tests, embedding)."""
    _received.clear()
    _reported.clear()


def finish(code: int) -> int:
    """The exit code of a run Typer ended with its silent 130 after our handler fired: the one line, and 143 for
    SIGTERM. Any other code is returned as it is."""
    if code == EXIT_INTERRUPTED and _received:
        return report(interrupts.Interrupted(_received[-1]))
    return code


def report(exc: BaseException, detail: str | None = None) -> int:
    """Write the one line (once) and return the exit code for an interrupted run. `detail` replaces the generic
    "stopped at a safe point" with what the command knows (reindex: the previous index is still in use)."""
    code = EXIT_TERMINATED if signal_of(exc) == signal.SIGTERM else EXIT_INTERRUPTED
    if _reported:
        return code
    _reported.append(True)
    line = ("terminated (SIGTERM)" if code == EXIT_TERMINATED else "interrupted") + \
        "; " + (detail or "stopped at a safe point, nothing half-written")
    try:
        sys.stderr.write(f"qwenmem: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return code
