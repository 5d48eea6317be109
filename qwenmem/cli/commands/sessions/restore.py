"""`qwenmem sessions restore`: put quarantined originals back, or list quarantine runs (itself undoable;
qwenmem/core/ops/sessions_restore.py)."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from qwenmem.cli import output
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import AgentOpt, DryRunFlag, JsonFlag, WorkspaceOpt
from qwenmem.cli.result import CommandResult


def restore_cmd(
    ctx: typer.Context,
    target: Annotated[Optional[str], typer.Argument(help="A quarantine run id (or prefix), or a session whose "
                                                          "newest quarantined original to put back.",
                                                     metavar="RUN|SESSION", show_default=False)] = None,
    run: Annotated[Optional[str], typer.Option("--run", help="Take the session's original from this run.")] = None,
    dry_run: DryRunFlag = False,
    json_out: JsonFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """Put quarantined originals back, or list quarantine runs.

    The file being replaced is itself quarantined first, so a restore can be undone the same way.

    Examples:

      qwenmem sessions restore

      qwenmem sessions restore 20261130T031502123456

      qwenmem sessions restore telegram/77_telegram--77 --dry-run
    """
    from qwenmem.core.ops import sessions_restore

    ws = open_workspace(ctx, workspace, agent)
    options = sessions_restore.Options(target, run, dry_run)
    outcome = sessions_restore.run(ws, options)
    if options.lists_runs:
        return CommandResult.of(outcome, render=lambda: _render_runs(ws, outcome.data.runs))
    return CommandResult.of(outcome, render=lambda: _render_restore(outcome.data))


def _render_runs(ws: Any, runs: list[Any]) -> None:
    if not runs:
        output.note(f"no quarantine runs under {ws.data_dir / 'quarantine'}")
        return
    from qwenmem.cli.tables import Column, Kind, render

    # the run id is what `sessions restore RUN` takes back: never cut (the time it was made goes on a
    # narrow terminal, as its id holds it too); the file list wraps at its spaces
    render((Column("run", Kind.LABEL), Column("kind", Kind.LABEL), Column("created", Kind.LABEL, drop=3),
            Column("files", Kind.WRAP)),
           [[r.run_id, r.kind, r.created, ", ".join(r.files) or "-"] for r in runs])


def _render_restore(result: Any) -> None:
    con = output.out()
    for f in result.files:
        extra = f" (the replaced file is kept at {output.escape(f.kept_current)})" if f.kept_current else ""
        con.print(f"{f.status.replace('_', ' ')}: {output.escape(f.path)} from {output.escape(f.source)}{extra}")
    if result.backup_run:
        output.note(f"undo with `qwenmem sessions restore {result.backup_run}`")
