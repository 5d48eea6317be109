"""`qwenmem history check|salvage|rebuild-fts`: QwenPaw 2.x's history.db, the full record under scroll
(qwenmem/core/ops/history_check.py, history_salvage.py, history_rebuild_fts.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from qwenmem.cli import output
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import AgentOpt, DryRunFlag, JsonFlag, QuietFlag, WorkspaceOpt
from qwenmem.cli.result import CommandResult, document_of
from qwenmem.cli.runner import command

app = typer.Typer(no_args_is_help=True, help="Check and salvage QwenPaw 2.x's history database (history.db).\n\n"
                  "Examples:\n\n  qwenmem history check\n\n  qwenmem history salvage --dry-run")


@command(app, "check")
def check_cmd(
    ctx: typer.Context,
    deep: Annotated[bool, typer.Option("--deep", help="Also compare the full-text index with the rows' content "
                                       "(on a private copy; reads the whole store).")] = False,
    quiet: QuietFlag = False,
    json_out: JsonFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """Check history.db without writing it: integrity, full-text table against the rows, rows whose JSON does not
    parse, eviction blocks and persisted messages whose rows are gone, imported placeholders, size and retention.

    Exit 1 when anything needs attention (a notice alone does not). Safe while QwenPaw runs.

    Examples:

      qwenmem history check

      qwenmem history check --deep --json
    """
    from qwenmem.core.ops import history_check

    outcome = history_check.run(open_workspace(ctx, workspace, agent), history_check.Options(deep))
    attention = outcome.data.needs_attention
    return CommandResult.of(outcome, render=None if quiet and not attention else lambda: _render_check(outcome.data))


def _render_check(result: Any) -> None:
    say = output.out().print
    st = result.state
    if st.status == "missing":
        say(output.escape(f"{result.path}: no history database (this agent does not run the scroll strategy, or "
                          "it has not started yet)"), soft_wrap=True)
    else:
        wal = f" + {output.human_size(st.wal_size)} WAL" if st.wal_size else ""
        rows = f"{st.rows:,} rows in {st.sessions:,} session(s)" if st.rows is not None else "rows unknown"
        say(output.escape(f"{result.path}: {output.human_size(st.size)}{wal}, {rows}; integrity {result.integrity}; "
                          f"full text {result.fts}"), soft_wrap=True)
    for f in result.findings:
        mark = "[bold red]problem[/]" if f.severity == "problem" else "[dim]notice[/]"
        say(f"  {mark}: {output.escape(f.message)}", soft_wrap=True)
        for example in f.examples:
            say(f"    {output.escape(example)}", soft_wrap=True)
    if not result.findings and st.status != "missing":
        say("  nothing needs attention")


@command(app, "salvage")
def salvage_cmd(
    ctx: typer.Context,
    from_file: Annotated[Path | None, typer.Option("--from", help="Read rows from this file (e.g. a "
                                                      "history.db.corrupt-<ts> copy) instead of finding them.",
                                                      show_default=False)] = None,
    dry_run: DryRunFlag = False,
    quiet: QuietFlag = False,
    json_out: JsonFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """Recover every readable row of a corrupt history.db, or of the history.db.corrupt-<ts> copies QwenPaw set
    aside, and write them into the live store (one transaction; already-present rows are skipped). The originals
    are kept in <workspace>/.qwenmem/quarantine/ first. Rows are read page by page (qwenmem's own reader of
    SQLite's file format, the committed -wal frames included), so a destroyed root or interior page or a cut file
    loses only the rows on the pages that are gone. A corrupt live store is never replaced by one holding fewer
    rows than its pages still have.

    Exit 1 if rows known to exist (named by the store's indexes or full-text table, on a lost leaf page, or cut by
    the damage: reported by seq) were not recovered. Exit 4 if QwenPaw keeps the store locked past SQLite's busy
    timeout, or holds a corrupt store open.

    Examples:

      qwenmem history salvage --dry-run

      qwenmem history salvage --from history.db.corrupt-20261130T101500
    """
    from qwenmem.core.ops import history_salvage

    outcome = history_salvage.run(open_workspace(ctx, workspace, agent), history_salvage.Options(from_file, dry_run))
    document = outcome.with_data(document_of(outcome.data, history_salvage.OMITTED_FIELDS))
    return CommandResult.of(document, render=None if quiet else lambda: _render_salvage(outcome.data))


def _render_salvage(result: Any) -> None:
    say = output.out().print
    for s in result.sources:
        extra = [f"{s.from_lost_and_found:,} from unlinked pages"] if s.from_lost_and_found else []
        extra += [f"{s.rows_from_wal:,} from the -wal"] if s.rows_from_wal else []
        more = f" ({', '.join(extra)})" if extra else ""
        say(output.escape(f"read {s.rows_read:,} row(s){more} from {s.path} ({s.method})"), soft_wrap=True)
        lost = len(s.cut_seqs) + len(s.missing_seqs)
        if lost or s.lost_pages:
            pages = f", and {s.lost_pages} lost leaf page(s) of the table" if s.lost_pages else ""
            say(output.escape(f"  not recovered: {lost:,} row(s) known to exist{pages} (see the warnings)"),
                soft_wrap=True)
    if result.action == "nothing to salvage":
        say("nothing to salvage")
        return
    verb = "would" if result.dry_run else "did"
    what = {"merged": f"insert {result.inserted:,} row(s) into {result.live} ({result.already_present:,} already "
                      f"there, {result.kept_seq:,} under their own seq, {result.renumbered:,} renumbered)",
            "rebuilt": f"rebuild {result.live} from {result.inserted:,} recovered row(s)",
            "created": f"create {result.live} from {result.inserted:,} recovered row(s)"}[result.action]
    say(output.escape(f"{verb}: {what}"), soft_wrap=True)
    if result.quarantine:
        say(output.escape(f"originals kept in {result.quarantine}"), soft_wrap=True)


@command(app, "rebuild-fts")
def rebuild_fts_cmd(
    ctx: typer.Context,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even when the check finds no disagreement.")] = False,
    dry_run: DryRunFlag = False,
    json_out: JsonFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """Rebuild the full-text table of history.db from its rows when it disagrees with them (QwenPaw keeps the two
    in sync by hand). A consistent copy of the store goes to the quarantine first.

    Examples:

      qwenmem history rebuild-fts --dry-run

      qwenmem history rebuild-fts
    """
    from qwenmem.core.ops import history_rebuild_fts

    outcome = history_rebuild_fts.run(open_workspace(ctx, workspace, agent), history_rebuild_fts.Options(force, dry_run))
    result = outcome.data

    def render() -> None:
        if not result.needed and not force:
            output.out().print("the full-text table agrees with the rows; nothing to rebuild")
        elif dry_run:
            output.out().print("would rebuild the full-text table (the check found it disagrees with the rows)")
        else:
            output.out().print(output.escape(f"rebuilt: {result.documents_before:,} -> {result.documents_after:,} "
                                             f"documents; the store before is in {result.quarantine}"))

    return CommandResult.of(outcome, render=render)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="history")
