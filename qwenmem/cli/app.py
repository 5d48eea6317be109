"""The entry point (`qwenmem`, `python -m qwenmem`). The root app lives in root.py, the runner in runner.py."""

from __future__ import annotations

import contextlib
import sys

from qwenmem.cli.root import app

__all__ = ["app", "main", "run"]


def run(argv: list[str]) -> int:
    """Run one command line and return its exit code (errors mapped by the runner)."""
    import typer.main

    from qwenmem.cli import signals
    from qwenmem.cli.runner import execute
    from qwenmem.core import confine, fsio

    confine.reset_refusals()
    fsio.reset_disk_full_events()
    signals.reset()
    code = execute(typer.main.get_command(app), argv)
    return _with_refusals(signals.finish(code))  # Typer returns a Ctrl-C as a silent 130


def _with_refusals(code: int) -> int:
    """A run that skipped a link leading out of the workspace (qwenmem.core.confine), or a file it had no room to
    write, did the rest (and said what), and says so with its own exit code instead of 0 (or 1, which hides it)."""
    from qwenmem.cli.errors import ExitCode
    from qwenmem.core import confine, fsio

    if code not in (ExitCode.OK, ExitCode.PROBLEMS):
        return code
    if fsio.disk_full_events():
        return int(ExitCode.DISK_FULL)
    return int(ExitCode.UNSAFE_LINK) if confine.refusals() else code


def main(argv: list[str] | None = None) -> None:
    # Session text may hold lone surrogates (QwenPaw reads files with surrogatepass): print them as \udXXXX, which
    # is also a valid JSON escape, instead of dying with UnicodeEncodeError halfway through the output.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["__complete"]:  # the shell completions' dynamic words: answered before Typer parses anything
        from qwenmem.cli.completion_words import main as complete_words

        sys.exit(complete_words(args[1:]))
    from qwenmem.core.redact import masked_output

    with masked_output(argv=args):  # no configured API key in anything printed (qwenmem/core/redact.py)
        code = run(args)
    sys.exit(code)
