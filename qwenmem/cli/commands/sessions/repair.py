"""`qwenmem sessions repair`: find and repair damaged session files (qwenmem/core/ops/sessions_repair.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from qwenmem.cli import output
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import AgentOpt, DryRunFlag, FormatOpt, JsonFlag, QuietFlag, WorkspaceOpt
from qwenmem.cli.output import OutputFormat
from qwenmem.cli.tables import Cell, Column, Kind
from qwenmem.cli.tables import render as render_table
from qwenmem.cli.result import CommandResult

if TYPE_CHECKING:
    from qwenmem.core.ops.sessions_repair import Options, RepairResult

STATUS_STYLE = {"ok": "green", "warning": "yellow", "repaired": "green", "would_repair": "yellow", "needs_repair": "yellow",
                "needs_flag": "yellow", "unrecoverable": "bold red", "changed": "bold red", "busy": "bold red",
                "error": "bold red"}


def repair_cmd(
    ctx: typer.Context,
    sessions: Annotated[Optional[list[str]], typer.Argument(help="Sessions to repair (key, file name, path or id).",
                                                            metavar="SESSION", show_default=False)] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every session file in the workspace.")] = False,
    check: Annotated[bool, typer.Option("--check", help="Only classify; write nothing. Exit 1 if anything needs "
                                                        "repair. The default selection is --all.")] = False,
    dry_run: DryRunFlag = False,
    fix_tool_pairs: Annotated[bool, typer.Option("--fix-tool-pairs", help="Drop tool results that answer no call and "
                                                 "close dangling calls with a \"result lost\" result.")] = False,
    from_backup: Annotated[bool, typer.Option("--from-backup", help="For files with nothing recoverable, rebuild from "
                                              "the newest usable backup sibling, copy or earlier quarantine.")] = False,
    from_file: Annotated[Optional[Path], typer.Option("--from", help="Rebuild the one named session from this file "
                                                      "inside the workspace: a backup or copy of it, or a "
                                                      "dialog/YYYY-MM-DD.jsonl offload.", show_default=False)] = None,
    convert_1x: Annotated[bool, typer.Option("--convert-1x", help="In a QwenPaw 2.x workspace, convert 1.x session "
                                             "files to the 2.x shape exactly as QwenPaw 2.x loads them (messages "
                                             "marked compressed come back into the live context); without it they "
                                             "are only reported.")] = False,
    json_out: JsonFlag = False,
    output_format: FormatOpt = OutputFormat.TABLE,
    quiet: QuietFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """Find and repair damaged session files without losing anything.

    --check and --dry-run look at every session unless some are named; a real run needs names or --all. A real run copies each original to <workspace>/.qwenmem/quarantine/<run>/ before an atomic replace, and
    refuses (exit 4) if a file changed while it worked or is being written (open for writing, or damaged and
    modified seconds ago and still changing). Healthy files are never rewritten.

    Examples:

      qwenmem sessions repair --check

      qwenmem sessions repair --all --dry-run

      qwenmem sessions repair console/default_1775286565823 --fix-tool-pairs

      qwenmem sessions repair telegram/77_telegram--77 --from-backup --json

      qwenmem sessions repair --all --convert-1x --dry-run
    """
    from qwenmem.core.ops import sessions_repair

    options = repair_options(locals())
    outcome = sessions_repair.run(open_workspace(ctx, workspace, agent), options)
    silent = quiet and outcome.status == "ok"
    return CommandResult.of(outcome, quiet=silent, render=None if silent else lambda: _render(outcome.data))


#: the `sessions repair` flags fleet runs: the run's own, over every session (none named, no --from)
FLEET_PARAMS = frozenset({"check", "all_", "dry_run", "fix_tool_pairs", "from_backup", "convert_1x"})


def repair_options(params: dict[str, Any]) -> Options:
    """The parsed flags (as the command function receives them) as the operation's Options, checked by its rules."""
    from qwenmem.core.ops.sessions_repair import Options

    return Options(tuple(params["sessions"] or ()), params["all_"], params["check"], params["dry_run"],
                   params["fix_tool_pairs"], params["from_backup"], params["from_file"], params["convert_1x"])


REPAIR_COLUMNS = (Column("session", Kind.KEY), Column("classes", Kind.TEXT), Column("intact", Kind.NUMBER, "right"),
                  Column("lost", Kind.NUMBER, "right"), Column("removed", Kind.NUMBER, "right"),
                  Column("status", Kind.LABEL))


def _render(result: RepairResult) -> None:
    con = output.out()
    if not result.files:
        output.note("no session files found")
        return
    render_table(REPAIR_COLUMNS, [
        [f.key, ", ".join(f.classes) or "-", str(f.messages_intact), str(f.messages_lost), str(f.messages_removed),
         Cell(f.status.replace("_", " "), STATUS_STYLE.get(f.status, "white"))] for f in result.files])
    if output.table_format() == "tsv":
        return  # programs get the rows; the per-file details are for people (and in --json)
    verb = {"check": "would", "dry-run": "would", "repair": "did"}[result.mode]
    for f in result.files:
        if f.classes == ["ok"] and not f.pending:
            continue
        con.print(f"\n[bold]{output.escape(f.path)}[/bold]")
        # a repair that failed or was refused (changed underneath, unwritable) did not do what it planned
        done_verb = "not done" if verb == "did" and f.status in ("error", "changed", "busy") else verb
        say = output.para  # wrapped with a hanging indent under the text after the label
        for violation in f.violations:
            say(f"  [red]rejected by QwenPaw 2.x:[/red] {output.escape(violation)}", "    ")
        for action in f.actions:
            say(f"  {done_verb}: {output.escape(action)}", "    ")
        for pending in f.pending:
            say(f"  [yellow]needs a flag:[/yellow] {output.escape(pending)}", "    ")
        for note in f.notes:
            say(f"  [dim]note: {output.escape(note)}[/dim]", "    ")
        for ev in f.evidence:
            say(f"  [cyan]evidence:[/cyan] {output.escape(ev.path)} ({ev.kind}, {ev.messages} messages"
                + (f", newest {ev.newest}" if ev.newest and ev.kind != 'dialog' else "") + ")", "    ")
        if f.quarantined:
            output.para(f"  original kept at {output.escape(f.quarantined)}", "    ")
    done = result.statuses
    summary = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in sorted(done.items()))
    output.note(f"\n{len(result.files)} file(s): {summary}")
    if result.quarantine:
        output.note(f"originals and removed content kept in {result.quarantine} "
                    f"(undo with `qwenmem sessions restore {result.run}`)")
    if result.mode != "repair" and any(f.status in ("needs_repair", "would_repair") for f in result.files):
        output.note("to repair, run the same command without --check/--dry-run (a real run needs sessions or --all)")
