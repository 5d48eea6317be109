"""The Typer root and its callback (global options). The command map is qwenmem/cli/commands/__init__.py, the entry point
qwenmem/cli/app.py, the runner qwenmem/cli/runner.py."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from qwenmem import __version__
from qwenmem.cli import commands, output
from qwenmem.cli.context import state
from qwenmem.cli.options import AgentOpt, WorkspaceOpt
from qwenmem.cli.output import ColorMode
from qwenmem.cli.runner import QwenmemGroup

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
    cls=QwenmemGroup,
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
    color: Annotated[ColorMode, typer.Option("--color", help="Colour: auto (a terminal, unless NO_COLOR is set or "
                                             "CLICOLOR=0; CLICOLOR_FORCE=1 forces it), always or never.")
                     ] = ColorMode.AUTO,
    no_pager: Annotated[bool, typer.Option("--no-pager", help="Never page long output (default on a terminal: "
                                           "$PAGER, else less -FRX).")] = False,
    version: Annotated[Optional[bool], typer.Option("--version", callback=_version, is_eager=True,
                                                    help="Print the version and exit.")] = None,
) -> None:
    st = state(ctx)
    st.workspace, st.agent = workspace, agent
    st.debug = debug or bool(os.environ.get("QWENMEM_DEBUG"))
    st.pager = not no_pager
    output.configure(color=color, table_format=output.OutputFormat.TABLE)


commands.register(app)
