"""The console entry point (`qwenmem`, `python -m qwenmem`): signal handlers first, then everything else.

Nothing heavy is imported before signals.install(), so a Ctrl-C or SIGTERM during the imports is one line and
130 / 143 like any later one (qwenmem/cli/signals.py).
"""

from __future__ import annotations

import sys

from qwenmem.cli import signals


def main(argv: list[str] | None = None) -> None:
    try:
        signals.install()  # inside the try: a signal held until now is raised as soon as it is unblocked
        from qwenmem.cli.app import main as app_main

        app_main(argv)
    except KeyboardInterrupt as exc:  # arrived before (or outside) the runner's own error mapping
        sys.exit(signals.report(exc))
    finally:
        # The outcome is decided (its output written, its exit code chosen). Python's finalisation puts SIGINT and
        # SIGTERM back to their default action, so one arriving now would kill the process with -15/-2 and hide
        # that code; blocked, it stays pending and goes with the process. (SIGKILL still ends a hung exit.)
        signals.block_for_exit()
