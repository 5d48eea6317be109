"""`qwenmem upgrade`: flags → qwenmem.core.ops.upgrade.Options → the operation → a table or JSON."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from qwenmem.cli import output
from qwenmem.cli.choices import Strategy
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import AgentOpt, DryRunFlag, FormatOpt, JsonFlag, QuietFlag, WorkspaceOpt
from qwenmem.cli.output import OutputFormat
from qwenmem.cli.result import CommandResult
from qwenmem.cli.tables import Column, Kind, number
from qwenmem.cli.tables import render as render_table
from qwenmem.core.ops import upgrade as op

StrategyOpt = Annotated[Strategy, typer.Option("--strategy", help=(
    "2.x context strategy: scroll (QwenPaw 2.2's default: 1.x's compressed messages become evicted history.db rows "
    "under a placeholder and continuation summary) or native (the summary goes into state.summary, the compressed "
    "messages to dialog/)."))]
UndoFlag = Annotated[bool, typer.Option("--undo", help="Put the newest upgrade back (files QwenPaw saved since are "
                                                       "left as they are and reported).")]
RetentionOpt = Annotated[Optional[int], typer.Option("--retention-days", min=0, help=(
    "history_retention_days to write when agent.json has none (default: 0 = keep forever when the record holds "
    "messages older than QwenPaw's 30 days, whose purge would delete them; else 30)."))]


def upgrade(ctx: typer.Context, strategy: StrategyOpt = Strategy.SCROLL, dry_run: DryRunFlag = False,
            undo: UndoFlag = False, retention_days: RetentionOpt = None, quiet: QuietFlag = False,
            json_out: JsonFlag = False, output_format: FormatOpt = OutputFormat.TABLE, workspace: WorkspaceOpt = None,
            agent: AgentOpt = None) -> CommandResult:
    """Move a QwenPaw 1.x workspace to the 2.x shape without losing a message.

    Every 1.x message (the session files, the ones marked compressed, dialog/*.jsonl) goes into history.db in
    QwenPaw 2.x's row format, with no 30-day cut; each session file is rewritten in the 2.x shape with the live
    context 1.x had, so the first 2.x turn does not compact; agent.json gains the 2.x keys (the original is kept).
    memory/ is snapshotted first; `--undo` puts everything back. Exit 4 while QwenPaw holds the workspace.

    Examples:

      qwenmem upgrade --dry-run

      qwenmem upgrade

      qwenmem upgrade --strategy native

      qwenmem upgrade --undo
    """
    options = op.Options(strategy=strategy.value, dry_run=dry_run, undo=undo, retention_days=retention_days)
    ws = open_workspace(ctx, workspace, agent)
    if undo:
        undone = op.run_undo(ws, options)
        return CommandResult.of(undone, command="upgrade undo", quiet=quiet,
                                render=None if quiet else lambda: _render_undo(undone.data))
    outcome = op.run(ws, options)
    return CommandResult.of(outcome, command="upgrade", quiet=quiet,
                            render=None if quiet else lambda: _render(outcome.data))


COLUMNS = (Column("session", Kind.KEY), Column("status", Kind.LABEL), Column("messages", Kind.NUMBER, "right"),
           Column("compressed", Kind.NUMBER, "right", drop=2), Column("rows to add", Kind.NUMBER, "right"),
           Column("tokens before", Kind.NUMBER, "right"), Column("tokens after", Kind.NUMBER, "right"),
           Column("QwenPaw keeps", Kind.NUMBER, "right", drop=1))


def _render(r: Any) -> None:
    rows = [[s.key, s.status, number(s.messages), number(s.compressed), number(s.rows_to_add),
             number(s.tokens_before), number(s.tokens_after), number(s.qwenpaw_keeps)] for s in r.sessions]
    rows += [[d.file, "dialog", number(d.messages), number(0), number(d.rows_to_add), number(0), number(0), number(0)]
             for d in r.dialog]
    if rows:
        render_table(COLUMNS, rows)
    say = output.out().print
    verb = {"dry-run": "would upgrade", "upgraded": "upgraded", "unchanged": "nothing to upgrade"}[r.status]
    say(output.escape(f"{verb}: {r.workspace} ({r.strategy}); history.db {r.history_db}"
                      + (f", {r.rows_added} row(s) added" if r.status == "upgraded" else "")), soft_wrap=True)
    if r.reme_leftovers:
        say(output.escape("1.x ReMe index leftovers (not deleted; QwenPaw 2.x builds mem_metadata/ itself): "
                          + ", ".join(r.reme_leftovers)), soft_wrap=True)
    if r.journal:
        say(output.escape(f"undo with `qwenmem upgrade --undo` (journal {r.journal}, snapshot {r.snapshot})"),
            soft_wrap=True)


def _render_undo(r: Any) -> None:
    say = output.out().print
    verb = "would put back" if r.status == "dry-run" else "put back"
    say(output.escape(f"{verb} {len(r.restored)} file(s), {r.rows_removed} history.db row(s) removed"
                      + (", history.db removed" if r.removed_history_db else "")), soft_wrap=True)
