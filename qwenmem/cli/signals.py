"""Ctrl-C and SIGTERM: one line and exit 130 / 143, at a safe point, whenever they arrive.

The entry point (`qwenmem` script and `python -m qwenmem`) is `main` here: it installs the handlers before it
imports anything heavy (Typer, the command modules), so a Ctrl-C in the first milliseconds is handled like any
later one instead of printing a traceback from inside an import.
"""

from __future__ import annotations

import signal
import sys

from qwenmem.core import interrupts

EXIT_INTERRUPTED = 130  # 128 + SIGINT, qwenmem.cli.errors.ExitCode.INTERRUPTED
EXIT_TERMINATED = 143  # 128 + SIGTERM, ExitCode.TERMINATED


def _handler(signum, frame) -> None:
    if interrupts.deferring():  # inside a step that must finish (a rename and its fsync): stop right after it
        interrupts.hold(signum)
        return
    raise interrupts.Interrupted(signum)


def install() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            if signal.getsignal(signum) in (signal.SIG_IGN,) and signum == signal.SIGINT:
                continue  # started in the background with SIGINT ignored (nohup, `&` in a script): keep it so
            signal.signal(signum, _handler)
        except (ValueError, OSError):  # not the main thread (embedded use): leave the host's handlers alone
            pass


def signal_of(exc: BaseException) -> int:
    """SIGTERM or SIGINT for a KeyboardInterrupt (or click's Abort wrapping one)."""
    for e in (exc, exc.__cause__, exc.__context__):
        if isinstance(e, interrupts.Interrupted):
            return e.signum
    return signal.SIGINT


def report(exc: BaseException) -> int:
    """Write the one line and return the exit code for an interrupted run."""
    if signal_of(exc) == signal.SIGTERM:
        line, code = "terminated (SIGTERM); stopped at a safe point, nothing half-written", EXIT_TERMINATED
    else:
        line, code = "interrupted; stopped at a safe point, nothing half-written", EXIT_INTERRUPTED
    try:
        sys.stderr.write(f"qwenmem: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return code


def main(argv: list[str] | None = None) -> None:
    install()
    try:
        from qwenmem.cli.app import main as app_main

        app_main(argv)
    except KeyboardInterrupt as exc:  # arrived before (or outside) the app's own error mapping
        sys.exit(report(exc))
