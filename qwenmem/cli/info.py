"""`qwenmem info`: which workspace, which files, which settings and where each setting came from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import typer

from qwenmem.cli import output
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import AgentOpt, JsonFlag, WorkspaceOpt
from qwenmem.cli.result import CommandResult


@dataclass
class InfoResult:
    """`info --json` result."""

    workspace: str
    root: str
    agent: str | None
    found_by: str
    notes: list[str]
    files: dict[str, dict[str, Any]]
    settings: list[dict[str, Any]]
    derived: dict[str, int]


def info(ctx: typer.Context, json_out: JsonFlag = False, workspace: WorkspaceOpt = None,
         agent: AgentOpt = None) -> CommandResult:
    """Show the resolved workspace, its files, every setting with its source, and qwenmem's own data directory.

    Examples:

      qwenmem info

      qwenmem --agent work info --json
    """
    from qwenmem.core.settings import load_settings

    ws = open_workspace(ctx, workspace, agent)
    settings = load_settings(ws)
    files = {
        "agent.json": ws.path / "agent.json",
        "chats.json": ws.path / "chats.json",
        "MEMORY.md": ws.memory_md,
        "memory/": ws.memory_dir,
        "sessions/": ws.sessions_dir,
        "dialog/": ws.dialog_dir,
        "backup/": ws.backup_dir,
        "qwenmem data": ws.data_dir,
    }
    result = InfoResult(
        str(ws.path), str(ws.root), ws.agent_id, ws.source, list(ws.notes),
        {name: {"path": str(p), "exists": p.exists()} for name, p in files.items()},
        [{"name": n, "value": v, "source": s} for n, v, s in settings.as_rows()],
        {"compact_threshold": settings.compact_threshold, "reserve_tokens": settings.reserve_tokens})
    return CommandResult(result, render=lambda: _render(ws, files, settings))


def _render(ws: Any, files: dict[str, Any], settings: Any) -> None:
    from rich.table import Table

    con = output.out()
    con.print(f"[bold]workspace[/bold] {output.escape(str(ws.path))}  (found by {ws.source}"
              + (f"; agent {ws.agent_id}" if ws.agent_id else "") + ")")
    for n in ws.notes:
        con.print(f"  [dim]{output.escape(n)}[/dim]")
    t = Table(box=None, show_edge=False, header_style="bold")
    t.add_column("file")
    t.add_column("path", overflow="fold")
    t.add_column("exists")
    for name, p in files.items():
        t.add_row(name, output.escape(str(p)), "yes" if p.exists() else "-")
    con.print(t)
    s = Table(box=None, show_edge=False, header_style="bold")
    s.add_column("setting")
    s.add_column("value", overflow="fold")
    s.add_column("source", style="dim")
    for name, value, source in settings.as_rows():
        s.add_row(name, output.escape(str(value)), output.escape(source))
    s.add_row("compact threshold", f"{settings.compact_threshold:,} tokens", "derived")
    s.add_row("reserve", f"{settings.reserve_tokens:,} tokens", "derived")
    con.print(s)
