"""`qwenmem sessions list|show|repair|restore`: one module per subcommand, mounted on this group."""

from __future__ import annotations

import typer

from qwenmem.cli.runner import QwenmemGroup, command

app = typer.Typer(help="List, show and repair session files (short-term memory).", no_args_is_help=True,
                  cls=QwenmemGroup)


def register(root: typer.Typer) -> None:
    # `list` is imported under another name: the module would shadow the builtin in this namespace
    from qwenmem.cli.commands.sessions import list as list_command
    from qwenmem.cli.commands.sessions import repair, restore, show

    command(app, "list")(list_command.list_cmd)
    command(app, "show")(show.show_cmd)
    command(app, "repair")(repair.repair_cmd)
    command(app, "restore")(restore.restore_cmd)
    root.add_typer(app, name="sessions")
