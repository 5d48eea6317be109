"""`qwenmem info`: which workspace, which files, which settings and where each setting came from
(qwenmem/core/ops/info.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from qwenmem.cli import output
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import AgentOpt, JsonFlag, WorkspaceOpt
from qwenmem.cli.result import CommandResult

if TYPE_CHECKING:
    from qwenmem.core.ops.info import Qwenpaw2Info


def info(ctx: typer.Context, json_out: JsonFlag = False, workspace: WorkspaceOpt = None,
         agent: AgentOpt = None) -> CommandResult:
    """Show the resolved workspace, its files, every setting with its source, and qwenmem's own data directory.

    Examples:

      qwenmem info

      qwenmem --agent work info --json
    """
    from qwenmem.core.ops import info as info_op

    ws = open_workspace(ctx, workspace, agent)
    outcome = info_op.run(ws, info_op.Options())
    info = outcome.data  # the JSON result, and what people's view shows in more words
    return CommandResult.of(outcome.with_data(info.result),
                            render=lambda: _render(ws, info.files, info.details, info.result.embedding_kernel))


def _render(ws: Any, files: dict[str, Any], gen: Qwenpaw2Info, kernel: dict[str, Any]) -> None:
    from qwenmem.core.workspace import path_exists

    con = output.out()
    say = output.para
    say(f"[bold]workspace[/bold] {output.escape(str(ws.path))}  (found by {ws.source}"
        + (f"; agent {ws.agent_id}" if ws.agent_id else "") + ")", "  ", width=con.width)
    for n in ws.notes:
        say(f"  [dim]{output.escape(n)}[/dim]", "    ", width=con.width)
    from qwenmem.cli.tables import Column, Kind, render

    render((Column("file", Kind.KEY), Column("path", Kind.WRAP), Column("exists", Kind.LABEL)),
           [[name, str(p), "yes" if path_exists(p) else "-"] for name, p in files.items()])
    # a source is a whole dotted key path: wrapped after its dots at 80 columns, never cut
    rows: list[list[Any]] = [[name, str(value), source] for name, value, source in gen.rows]
    rows += [["compact threshold", f"{gen.derived['compact_threshold']:,} tokens", "derived"],
             ["reserve", f"{gen.derived['reserve_tokens']:,} tokens", "derived"],
             ["e5 bulk kernel", kernel["kernel"], kernel["source"]]]
    render((Column("setting", Kind.KEY), Column("value", Kind.KEY), Column("source", Kind.WRAP)), rows)
    _print_qwenpaw2(_Wrapped(con.width), gen)


class _Wrapped:
    """A console whose print() wraps each line with a hanging indent (qwenmem/cli/output.para)."""

    def __init__(self, width: int) -> None:
        self.width = width

    def print(self, markup: str) -> None:
        output.para(markup, "    ", width=self.width)


def _print_qwenpaw2(con: _Wrapped, gen: Qwenpaw2Info) -> None:
    g = gen.generation
    con.print(f"[bold]QwenPaw generation[/bold] {g.generation}  ({g.files_1x} 1.x and {g.files_2x} 2.x session files"
              + (f"; markers: {', '.join(g.markers)}" if g.markers else "") + ")")
    if g.generation not in ("2.x", "mixed"):
        return
    c = gen.settings
    con.print(f"  context strategy {c.strategy}  [dim]({output.escape(c.strategy_source)})[/dim]")
    con.print("  scroll " + ", ".join(f"{k}={v}" for k, v in c.scroll.items()))
    if c.provider:
        p = c.provider
        con.print(f"  model {output.escape(str(p.provider_id))}/{output.escape(str(p.model_id))}: context "
                  f"{p.context_size:,} tokens [dim]({output.escape(p.context_source)}); api key {p.api_key}[/dim]")
    h = gen.history
    size = output.human_size(h.size) + (f" + {output.human_size(h.wal_size)} WAL" if h.wal_size else "")
    rows = "?" if h.rows is None else f"{h.rows:,}"
    retention = c.history_retention_days
    con.print(f"  history.db {output.escape(h.path)}: {h.status}" + (f", {size}, {rows} rows in {h.sessions} sessions"
              if h.exists and h.rows is not None else "") + f"; retention {retention or 'forever'}"
              + (" day(s)" if retention else "") + (f"  [yellow]{output.escape(h.detail)}[/]" if h.detail else ""))
    for q in h.quarantined:
        con.print(f"  [yellow]quarantined store[/] {output.escape(q)}")
    for name, info in gen.reme_dirs.items():
        con.print(f"  ReMe {name} {output.escape(info['path'])}" + ("" if info["exists"] else " [dim](absent)[/dim]"))
