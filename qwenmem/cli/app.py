"""The entry point (`qwenmem`, `python -m qwenmem`). The root app lives in root.py, the runner in runner.py."""

from __future__ import annotations

import contextlib
import sys

from qwenmem.cli.root import app

__all__ = ["app", "main", "run"]


def run(argv: list[str]) -> int:
    """Run one command line and return its exit code (errors mapped by the runner)."""
    import typer.main

    from qwenmem.cli.runner import execute

    return execute(typer.main.get_command(app), argv)


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
    sys.exit(run(args))
