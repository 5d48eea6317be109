"""`qwenmem sessions list`: every session file with its health (read-only; qwenmem/core/ops/sessions_list.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Optional, cast

import typer

from qwenmem.cli import output
from qwenmem.cli.choices import SortKey, Tokenizer
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import AgentOpt, FormatOpt, JsonFlag, TokenizerOpt, WorkspaceOpt
from qwenmem.cli.output import OutputFormat
from qwenmem.cli.result import CommandResult
from qwenmem.cli.tables import Cell, CellValue, Column, Kind, number
from qwenmem.cli.tables import render as render_table

if TYPE_CHECKING:  # core is imported by the commands that use it (start-up time)
    from qwenmem.core.ops.sessions_list import SessionsListResult

HEALTH_STYLE = {"ok": "green", "warnings": "yellow", "corrupt": "bold red"}


def list_cmd(
    ctx: typer.Context,
    channel: Annotated[Optional[str], typer.Option("--channel", help="Only this channel (sub-directory).")] = None,
    user: Annotated[Optional[str], typer.Option("--user", help="Only this user id.")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="Modified since: 7d, 12h, or 2026-05-01.")] = None,
    sort: Annotated[SortKey, typer.Option("--sort", help="The column to sort by.")] = SortKey.MODIFIED,
    reverse: Annotated[bool, typer.Option("--reverse", help="Reverse the sort order.")] = False,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="Show at most N rows.")] = None,
    tokenizer: TokenizerOpt = Tokenizer.ESTIMATE,
    json_out: JsonFlag = False,
    output_format: FormatOpt = OutputFormat.TABLE,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """List every session file with its health. Never modifies anything.

    Examples:

      qwenmem sessions list

      qwenmem sessions list --channel discord --sort tokens --limit 10

      qwenmem sessions list --since 7d --json | jq '.result.sessions[] | select(.health != "ok")'
    """
    from qwenmem.core.ops import sessions_list

    ws = open_workspace(ctx, workspace, agent)
    options = sessions_list.Options(channel, user, since, cast(sessions_list.SortKey, sort.value), reverse, limit,
                                    cast(sessions_list.Tokenizer, tokenizer.value))
    outcome = sessions_list.run(ws, options)
    if outcome.data.empty:  # nothing listed: the warning says which filter matched nothing (a plain note)
        return CommandResult.of(outcome, warnings_as_notes=True)
    return CommandResult.of(outcome, render=lambda: _render_list(outcome.data))


LIST_COLUMNS = (Column("session", Kind.KEY), Column("channel", Kind.KEY, redundant=True),
                Column("user", Kind.KEY, redundant=True),
                Column("msgs", Kind.NUMBER, "right"), Column("tokens", Kind.NUMBER, "right"),
                Column("summary", Kind.LABEL, "center", drop=3), Column("size", Kind.NUMBER, "right", drop=1),
                Column("modified", Kind.TEXT, drop=2), Column("health", Kind.LABEL))
# a 2.x (or mixed) workspace adds the generation and the history.db rows after `msgs`
GEN2_COLUMNS = (Column("gen", Kind.LABEL, drop=4), Column("history", Kind.NUMBER, "right"))


def _render_list(data: SessionsListResult) -> None:
    rows: list[Any] = data.sessions
    gen2 = data.generation["generation"] in ("2.x", "mixed")
    columns = LIST_COLUMNS[:4] + GEN2_COLUMNS + LIST_COLUMNS[4:] if gen2 else LIST_COLUMNS
    table: list[list[CellValue]] = []
    for r in rows:
        who = (r.user_id or "-") + ("?" if r.ambiguous else "")
        extra: list[CellValue] = [r.generation or "-", "-" if r.history_rows is None else number(r.history_rows)] \
            if gen2 else []
        # at risk is a warning whatever the file's health: never green
        health = Cell(r.health + (" at risk" if r.at_risk else ""),
                      HEALTH_STYLE["warnings"] if r.at_risk and r.health == "ok" else HEALTH_STYLE[r.health])
        table.append([r.key, r.channel or "(flat)", who, _msgs(r), *extra, number(r.tokens),
                      "yes" if r.has_summary else "-", Cell(output.human_size(r.size), raw=str(r.size)),
                      Cell(_local_minute(r.modified), raw=r.modified or ""), health])
        for b in r.backups:  # what `repair --from-backup` would read, under the session it backs up
            table.append(["  ↳ " + b["path"].rsplit(".json.", 1)[-1], "", "", str(b["messages"]), *([""] * len(extra)),
                          "", "", Cell(output.human_size(b["size"]), raw=str(b["size"])),
                          Cell(_local_minute(b["modified"]), raw=b["modified"] or ""),
                          Cell(b["health"], HEALTH_STYLE[b["health"]])])
    for h in data.history_only:  # 2.x: a session whose file is gone, or that never had one
        table.append([h["session_id"], "-", "-", "0", "-", number(h["rows"]), "-", "-", "-", "",
                      Cell("history.db only", "dim")])
    render_table(columns, table)
    if output.table_format() != "tsv" and any(r.in_context < r.messages for r in rows):
        output.para("[dim]msgs: in context/in the file where they differ (compressed or evicted messages are not "
                    "in the context); tokens count the context[/dim]")


def _msgs(r: Any) -> Cell:
    """Every message in the file; `23/230` when only 23 are in the context (the 207 others compressed), so a
    file of 183 compressed messages and 0 tokens reads `0/183`. TSV keeps the file's count."""
    text = f"{r.in_context:,}/{r.messages:,}" if r.in_context < r.messages else f"{r.messages:,}"
    return Cell(text, raw=str(r.messages))


def _local_minute(iso: str | None) -> str:
    """The table shows modification times in the local timezone, like ls and like --since's dates (JSON keeps UTC)."""
    if not iso:
        return ""
    from datetime import datetime

    return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")


