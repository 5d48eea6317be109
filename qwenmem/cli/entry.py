"""The console entry point (`qwenmem`, `python -m qwenmem`): signal handlers first, then everything else.

Nothing heavy is imported before signals.install(), so a Ctrl-C or SIGTERM during the imports is one line and
130 / 143 like any later one (qwenmem/cli/signals.py).
"""

from __future__ import annotations

# First of all, with the C module only (`signal` imports enum): until signals.install() runs, SIGINT and SIGTERM are
# only noted, never raised in the middle of an import (a traceback from inside typing or runpy, exit -2).
import _signal

_early: list[int] = []


def _note_early(signum: int, frame: object) -> None:
    _early.append(signum)


for _signum in (_signal.SIGINT, _signal.SIGTERM):
    if _signal.getsignal(_signum) is not _signal.SIG_IGN:  # an ignored SIGINT (nohup, `&`) stays ignored
        _signal.signal(_signum, _note_early)

import sys  # noqa: E402

from qwenmem.cli import signals  # noqa: E402


def main(argv: list[str] | None = None, noted: list[int] | None = None) -> None:
    """`noted`: signals `python -m qwenmem` (qwenmem/__main__.py) noted before this module was imported."""
    try:
        signals.install([*(noted or []), *_early])  # inside the try: a signal noted or held until now is raised here
        from qwenmem.core.interrupts import deferred

        # A signal during the command modules' imports is held to their end: raised inside a class body (a
        # dataclass's __set_name__), Python 3.11 wraps it in a RuntimeError, a traceback instead of 130/143.
        with deferred():
            from qwenmem.cli.app import main as app_main

        app_main(argv)
    except KeyboardInterrupt as exc:  # arrived before (or outside) the runner's own error mapping
        sys.exit(signals.report(exc))
    finally:
        # The outcome is decided (its output written, its exit code chosen). Python's finalisation puts SIGINT and
        # SIGTERM back to their default action, so one arriving now would kill the process with -15/-2 and hide
        # that code; blocked, it stays pending and goes with the process. (SIGKILL still ends a hung exit.)
        signals.block_for_exit()
