"""The entry point (`qwenmem`, `python -m qwenmem`). The root app lives in root.py, the runner in runner.py."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from qwenmem.cli.root import app

__all__ = ["app", "fleet_command", "main", "run"]


def run(argv: list[str]) -> int:
    """Run one command line and return its exit code (errors mapped by the runner)."""
    import typer.main

    from qwenmem.cli import signals
    from qwenmem.cli.errors import ExitCode, exit_code
    from qwenmem.cli.runner import execute
    from qwenmem.core import confine
    from qwenmem.core.events import recording

    signals.reset()
    # this command line's own events (a link refused, a disk full) and workspaces, not the process's: a second run()
    # in the same process starts from none (qwenmem.core.events, qwenmem.core.confine)
    with recording() as log, confine.scope():
        code = signals.finish(execute(typer.main.get_command(app), argv))  # Typer returns a Ctrl-C as a silent 130
    if code in (ExitCode.OK, ExitCode.PROBLEMS):
        return int(exit_code("ok" if code == ExitCode.OK else "problems", log.events))
    return code


def fleet_command(words: list[str]) -> Any:
    """`qwenmem fleet`'s command after `--` (qwenmem.core.fleet.Command), parsed outside a command line (library
    callers, tests) by the same Typer command a command line would use (qwenmem/cli/fleet_commands.py)."""
    import typer.main
    from typer._click.core import Context

    from qwenmem.cli.fleet_commands import parse_command

    root = typer.main.get_command(app)
    root_ctx = Context(root, info_name="qwenmem")
    fleet = root.get_command(root_ctx, "fleet")  # type: ignore[attr-defined]  # the root is a click group
    return parse_command(Context(fleet, parent=root_ctx, info_name="fleet"), words)


def main(argv: list[str] | None = None) -> None:
    # Session text may hold lone surrogates (QwenPaw reads files with surrogatepass): print them as \udXXXX, which
    # is also a valid JSON escape, instead of dying with UnicodeEncodeError halfway through the output.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]  # TextIO has none; see suppress
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["__complete"]:  # the shell completions' dynamic words: answered before Typer parses anything
        from qwenmem.cli.completion_words import main as complete_words

        sys.exit(complete_words(args[1:]))
    from qwenmem.core.redact import masked_output

    with masked_output(argv=args):  # no configured API key in anything printed (qwenmem/core/redact.py)
        code = run(args)
    sys.exit(code)
