"""The composition root's state: global options resolved once and handed to every command through ctx.obj."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer


@dataclass
class AppState:
    workspace: Path | None = None
    agent: str | None = None
    debug: bool = False


# The running command's path ("sessions show"), so an error raised inside it can be reported in its JSON envelope.
current_command: dict[str, str | None] = {"path": None}


def state(ctx: typer.Context) -> AppState:
    root = ctx.find_root()
    if not isinstance(root.obj, AppState):
        root.obj = AppState()
    return root.obj


def open_workspace(ctx: typer.Context, workspace: Path | None = None, agent: str | None = None):
    """The workspace for this command: a per-command -w/--agent beats the global one."""
    from qwenmem.core.workspace import discover_workspace

    st = state(ctx)
    current_command["path"] = ctx.command_path.partition(" ")[2] or None
    return discover_workspace(workspace or st.workspace, agent or st.agent)
