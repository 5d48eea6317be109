"""The Typer root. Command groups live in sibling modules; this file only wires them and maps errors."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from qwenmem import __version__
from qwenmem.cli import commands
from qwenmem.cli.context import state
from qwenmem.cli.options import AgentOpt, WorkspaceOpt

app = typer.Typer(
    name="qwenmem",
    help="Inspect, repair, compact, search and consolidate the memory of a QwenPaw (CoPaw) workspace.\n\n"
    "Examples:\n\n  qwenmem demo\n\n  qwenmem -w ~/.qwenpaw sessions list\n\n  qwenmem sessions repair --check --all\n\n"
    "  qwenmem search \"connection timeout\" --json",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"qwenmem {__version__}\n")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show full tracebacks for errors.")] = False,
    version: Annotated[Optional[bool], typer.Option("--version", callback=_version, is_eager=True,
                                                    help="Print the version and exit.")] = None,
) -> None:
    st = state(ctx)
    st.workspace, st.agent, st.debug = workspace, agent, debug


commands.register(app)


def _json_requested(argv: list[str]) -> bool:
    return "--json" in argv


def _json_error(argv: list[str], command: str | None, name: str, message: str) -> None:
    """With --json, every failure (a bad option caught by the parser, a domain error, an internal error) still
    prints the error envelope on stdout, so a script always has one document to parse."""
    if _json_requested(argv):
        from qwenmem.cli import output

        output.print_json(command or "qwenmem", None, "error", errors=[{"code": name, "message": message}])


def run(argv: list[str]) -> int:
    """Run one command line and return its exit code; every error becomes one line on stderr (or a traceback
    with --debug / $QWENMEM_DEBUG)."""
    from qwenmem.cli import output
    from qwenmem.cli.errors import ExitCode, classify
    from qwenmem.core.errors import QwenmemError

    try:  # typer >= 0.29 vendors click; older typer uses the click package
        from typer._click.exceptions import ClickException
    except ImportError:  # pragma: no cover
        from click.exceptions import ClickException

    from qwenmem.cli.context import current_command

    current_command["path"] = None
    from qwenmem.cli import signals
    from qwenmem.core import confine

    confine.reset_refusals()
    signals.reset()
    debug = "--debug" in argv or bool(os.environ.get("QWENMEM_DEBUG"))
    # --debug is honoured wherever it appears, not only before the command name
    argv = ["--debug", *[a for a in argv if a != "--debug"]] if debug and "--debug" in argv else argv
    try:
        code = app(args=argv, prog_name="qwenmem", standalone_mode=False)
    except typer.Exit as exc:
        code = exc.exit_code
    except ClickException as exc:
        exc.show()
        code = ExitCode.USAGE
        ctx = getattr(exc, "ctx", None)
        _json_error(argv, ctx.command_path.partition(" ")[2] if ctx is not None else None, "usage", exc.format_message())
    except (typer.Abort, KeyboardInterrupt) as exc:
        if isinstance(exc.__cause__, EOFError):  # click turns every EOFError into Abort; qwenmem never prompts
            if debug:
                raise exc.__cause__ from None
            code = _internal_error(argv, exc.__cause__, current_command["path"])
        else:
            from qwenmem.cli import signals

            code = signals.report(exc)
    except QwenmemError as exc:
        if debug:
            raise
        code, name = classify(exc)
        output.error_line(str(exc))
        _json_error(argv, current_command["path"], name, str(exc))
    except BrokenPipeError:
        # `qwenmem sessions list | head`: the reader went away; that is not an error of ours
        sys.stderr.close()
        code = ExitCode.OK
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        if debug:
            raise
        code = _internal_error(argv, exc, current_command["path"])
    return _with_refusals(signals.finish(int(code or 0)))  # Typer returns a Ctrl-C as a silent 130


def _with_refusals(code: int) -> int:
    """A run that skipped a link leading out of the workspace (qwenmem.core.confine) did the rest, and says so
    with its own exit code instead of 0 (or 1, which it would hide)."""
    from qwenmem.core import confine
    from qwenmem.cli.errors import ExitCode

    return int(ExitCode.UNSAFE_LINK) if code in (ExitCode.OK, ExitCode.PROBLEMS) and confine.refusals() else code


def _internal_error(argv: list[str], exc: BaseException, command: str | None) -> int:
    from qwenmem.cli import output
    from qwenmem.cli.errors import ExitCode

    message = f"internal error: {type(exc).__name__}: {exc}"
    output.error_line(f"{message} (run with --debug for the traceback)")
    _json_error(argv, command, "internal_error", message)
    return ExitCode.PROBLEMS


def main(argv: list[str] | None = None) -> None:
    # Session text may hold lone surrogates (QwenPaw reads files with surrogatepass): print them as \udXXXX, which
    # is also a valid JSON escape, instead of dying with UnicodeEncodeError halfway through the output.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")
    sys.exit(run(list(sys.argv[1:] if argv is None else argv)))
