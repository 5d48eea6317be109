"""The one runner: turns a command's CommandResult into output (Rich for people, the JSON envelope for scripts)
and an exit code, and runs a whole command line with every error mapped in one place (qwenmem/cli/errors.py).

`--json` is known from the parser, never from scanning argv: `qwenmem search -- --json` searches for "--json".
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer
import typer.core

from qwenmem.cli import output
from qwenmem.cli.context import state
from qwenmem.cli.errors import ExitCode, classify
from qwenmem.cli.result import CommandResult, ErrorItem, Status
from qwenmem.core.errors import QwenmemError

# typer 0.29 (pinned in pyproject.toml) vendors click as typer._click
from typer._click.exceptions import BadParameter, ClickException, MissingParameter
from typer._click.globals import get_current_context

F = TypeVar("F", bound=Callable[..., Any])

#: the parameter names through which a command asks for the JSON envelope
JSON_PARAMS = ("json_out",)


def _learn_json(command: Any, ctx: Any, args: list[str]) -> None:
    """Ask the command's own option parser (unknown options ignored) whether --json is among its options, before
    the real parse, so that a parser error (unknown option, bad value, missing argument) gets the envelope too."""
    if not any(p.name in JSON_PARAMS or p.name == "output_format" for p in command.params):
        return
    parser = command.make_parser(ctx)
    parser.ignore_unknown_options = True
    try:
        opts, _, _ = parser.parse_args(list(args))
    except ClickException:
        return
    if any(opts.get(name) for name in JSON_PARAMS) or opts.get("output_format") == "json":
        state(ctx).json = True


def format_help_text(command: Any, formatter: Any) -> None:
    """The help text with its prose re-wrapped to the terminal but every line from "Examples:" on verbatim: a
    command line or a path broken across two lines cannot be pasted."""
    import inspect

    text = inspect.cleandoc(command.help or "").partition("\f")[0]
    if not text:
        return
    prose, marker, examples = text.partition("Examples:")
    formatter.write_paragraph()
    with formatter.indentation():
        if prose.strip():
            formatter.write_text(prose.strip())
        if marker:
            formatter.write_paragraph()
            formatter.write(" " * formatter.current_indent + marker + "\n")
            for line in examples.strip("\n").splitlines():
                if line.strip():
                    formatter.write(" " * formatter.current_indent + line.rstrip() + "\n")


class QwenmemCommand(typer.core.TyperCommand):
    """A command whose --json is known from its parser (see _learn_json) and whose examples are never re-wrapped."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _learn_json(self, ctx, args)
        return super().parse_args(ctx, args)

    def format_help_text(self, ctx: Any, formatter: Any) -> None:
        format_help_text(self, formatter)


#: the root's --help lists its commands in these sections, in this order, as `gh` does
COMMAND_GROUPS: dict[str, tuple[str, ...]] = {
    "Core commands": ("sessions", "compact", "search", "reindex", "dream", "info"),
    "Maintenance commands": ("doctor", "snapshot", "history", "upgrade", "fleet"),
    "Setup commands": ("demo", "schedule", "completions"),
}


def format_grouped_commands(group: Any, ctx: Any, formatter: Any) -> None:
    visible = {name: cmd for name in group.list_commands(ctx)
               if (cmd := group.get_command(ctx, name)) is not None and not cmd.hidden}
    if not visible:
        return
    limit = formatter.width - 6 - max(len(name) for name in visible)
    listed = {n for names in COMMAND_GROUPS.values() for n in names}
    sections = [*COMMAND_GROUPS.items(), ("Other commands", tuple(n for n in visible if n not in listed))]
    for title, names in sections:
        rows = [(n, visible[n].get_short_help_str(limit)) for n in names if n in visible]
        if rows:
            with formatter.section(title):
                formatter.write_dl(rows)


class QwenmemGroup(typer.core.TyperGroup):
    """A group whose callback is itself a command with --json (`qwenmem snapshot --json`); the root's --help
    groups its commands (core, maintenance, setup)."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        if ctx.parent is None:
            format_grouped_commands(self, ctx, formatter)
        else:
            super().format_commands(ctx, formatter)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _learn_json(self, ctx, args)
        return super().parse_args(ctx, args)

    def format_help_text(self, ctx: Any, formatter: Any) -> None:
        format_help_text(self, formatter)


def command(app: typer.Typer, name: str, **kwargs: Any) -> Callable[[F], F]:
    """Register `fn` as command `name` of `app`; its CommandResult is rendered and exited with by the runner."""

    def decorate(fn: F) -> F:
        app.command(name, cls=QwenmemCommand, **kwargs)(runs(fn))
        return fn

    return decorate


def runs(fn: F) -> F:
    """Wrap a command function: record which command runs, turn core failures into error results, emit."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        ctx = get_current_context()
        st = state(ctx)
        st.command = ctx.command_path.partition(" ")[2] or None
        if kwargs.get("output_format") is not None:
            output.configure(table_format=kwargs["output_format"])
        try:
            result = fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, ClickException, BrokenPipeError):
            raise
        except QwenmemError as exc:
            if st.debug:
                raise
            result = CommandResult.failure(exc)
        except OSError as exc:  # a full disk, an unreadable directory: one line and a documented code, not a bug
            if st.debug:
                raise
            from qwenmem.core.fsio import as_domain_error

            result = CommandResult.failure(as_domain_error(exc))
        except Exception as exc:  # noqa: BLE001 - one line (and one envelope), not a traceback; EOFError too,
            _reraise_signal(exc)  # which click would turn into Abort ("interrupted"): qwenmem never prompts
            if st.debug:
                raise
            result = CommandResult.internal(exc)
        if result is not None:
            emit(result)

    return wrapper  # type: ignore[return-value]  # it emits and returns None; Typer reads fn's signature (wraps)


def _reraise_signal(exc: Exception) -> None:
    """A Ctrl-C or SIGTERM raised inside a class body as a lazy import ran (a dataclass's __set_name__): Python 3.11
    wraps it in a RuntimeError. It is still the signal, and ends the run as one (130/143), not as an error."""
    from qwenmem.core.interrupts import Interrupted

    if isinstance(exc, RuntimeError) and isinstance(exc.__cause__, Interrupted):
        raise exc.__cause__ from None


def emit(result: CommandResult) -> None:
    """Print the result (JSON envelope or the people's view plus warnings and errors) and exit with its code."""
    st = state(get_current_context())
    command = result.command or st.command or "qwenmem"
    if st.json:
        output.print_json(command, result.data, result.status.value, result.warnings,
                          [{"code": e.code, "message": e.message} for e in result.errors])
    elif result.status is not Status.ERROR:
        _render_for_people(result)
    if result.status is Status.ERROR or not st.json:  # a failure is one line on stderr, with --json too
        for item in result.errors:
            suffix = " (run with --debug for the traceback)" if item.code == "internal_error" else ""
            output.error_line(item.message + suffix)
    if result.code:
        raise typer.Exit(int(result.code))


def _render_for_people(result: CommandResult) -> None:
    say = output.note if result.warnings_as_notes else output.warn
    warnings = [] if result.quiet else result.warnings
    if result.warnings_first:
        for text in warnings:
            say(text)
    if result.render is not None:
        if st_pager():
            with output.held_diagnostics(), output.out().pager(pager=_Pager(), styles=True):
                result.render()  # its notes on stderr come after the paged table, not above it
        else:
            result.render()
    if not result.warnings_first:
        for text in warnings:
            say(text)


def st_pager() -> bool:
    """Page on a terminal only, unless --no-pager."""
    return state(get_current_context()).pager and sys.stdout.isatty() and output.out().is_terminal


class _Pager:
    """$PAGER (else `less -FRX`) for output taller than the screen; shorter output is printed as it is."""

    def show(self, content: str) -> None:
        import shlex
        import subprocess

        if content.count("\n") < output.out().height:
            sys.stdout.write(content)
            sys.stdout.flush()
            return
        command = shlex.split(os.environ.get("PAGER") or "less -FRX")
        try:
            subprocess.run(command, input=content.encode("utf-8", "backslashreplace"), check=False)
        except OSError:  # no such pager: print it
            sys.stdout.write(content)


def _error_envelope(json_wanted: bool, command: str | None, code: str, message: str) -> None:
    if json_wanted:
        output.print_json(command or "qwenmem", None, Status.ERROR.value,
                          errors=[{"code": code, "message": message}])


def _usage_message(exc: ClickException) -> str:
    # typer 0.29 words a failed conversion "Invalid value for '--mode': Value error, 'x' is not one of ..."
    return exc.format_message().replace(": Value error, ", ": ", 1)


def execute(root: Any, argv: list[str]) -> int:
    """Run one command line on the click command `root` and return its exit code; every error becomes one line on
    stderr (or a traceback with --debug / $QWENMEM_DEBUG), and with --json one error envelope on stdout."""
    debug = "--debug" in argv or bool(os.environ.get("QWENMEM_DEBUG"))
    # --debug is honoured wherever it appears, not only before the command name
    argv = ["--debug", *[a for a in argv if a != "--debug"]] if debug and "--debug" in argv else argv
    try:
        code = root.main(args=argv, prog_name="qwenmem", standalone_mode=False)
    except typer.Exit as exc:
        code = exc.exit_code
    except ClickException as exc:
        message = _usage_message(exc)
        if isinstance(exc, BadParameter) and not isinstance(exc, MissingParameter):
            output.error_line(message)  # a bad value: one line naming the option and what it takes
        else:
            exc.show()
        code = ExitCode.USAGE
        ctx = getattr(exc, "ctx", None)
        json_wanted = ctx is not None and state(ctx).json
        _error_envelope(json_wanted, ctx.command_path.partition(" ")[2] if ctx is not None else None, "usage",
                        message)
    except (typer.Abort, KeyboardInterrupt) as exc:
        from qwenmem.cli import signals

        code = signals.report(exc)  # one line; 130, or 143 for SIGTERM
    except QwenmemError as exc:  # raised outside a command body (the root callback)
        if debug:
            raise
        exit_code, name = classify(exc)
        output.error_line(str(exc))
        code = exit_code
    except BrokenPipeError:
        # `qwenmem sessions list | head`: the reader went away; that is not an error of ours
        sys.stderr.close()
        code = ExitCode.OK
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        if debug:
            raise
        failed = CommandResult.internal(exc)
        item: ErrorItem = failed.errors[0]
        output.error_line(f"{item.message} (run with --debug for the traceback)")
        code = failed.code
    return int(code or 0)
