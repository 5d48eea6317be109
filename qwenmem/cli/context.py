"""The composition root's state: global options resolved once and handed to every command through ctx.obj."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class AppState:
    workspace: Path | None = None
    agent: str | None = None
    debug: bool = False
    json: bool = False  # set by the command's parser (runner.QwenmemCommand), never by scanning argv
    command: str | None = None  # the running command's path ("sessions show"), for its JSON envelope
    pager: bool = True  # long output for people goes through $PAGER on a terminal (--no-pager: never)


def state(ctx: Any) -> AppState:
    root = ctx.find_root()
    if not isinstance(root.obj, AppState):
        root.obj = AppState()
    return root.obj


def open_workspace(ctx: Any, workspace: Path | None = None, agent: str | None = None) -> Any:
    """The workspace for this command: a per-command -w/--agent beats the global one."""
    from qwenmem.core.workspace import discover_workspace

    from qwenmem.cli import output

    st = state(ctx)
    ws = discover_workspace(workspace or st.workspace, agent or st.agent)
    for notice in ws.notices:
        output.note(notice)
    return ws
