"""`qwenmem snapshot`: back up memory/, digest/ and MEMORY.md (deduplicated); `list`; `restore` (itself undoable).
The library operations: qwenmem/core/ops/snapshot.py, snapshot_list.py and snapshot_restore.py."""

from __future__ import annotations

from typing import Annotated, Any, List, Optional

import typer

from qwenmem.cli import output
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import AgentOpt, DryRunFlag, JsonFlag, QuietFlag, WorkspaceOpt
from qwenmem.cli.result import CommandResult, document_of
from qwenmem.cli.runner import QwenmemGroup, command, runs
from qwenmem.cli.tables import Cell, Column, Kind, number
from qwenmem.cli.tables import render as render_table
from qwenmem.core.ops import snapshot as snapshot_op
from qwenmem.core.ops import snapshot_list, snapshot_restore
from qwenmem.core.ops.snapshot_list import SnapshotListResult  # noqa: F401 - the result the JSON contract pins

KeepOpt = Annotated[Optional[int], typer.Option("--keep", min=1, help="Afterwards, delete snapshots beyond the "
                                                "newest N and the stored files only they used (default: keep all).")]

# No help= here: the callback's docstring (with its examples) is the group's help.
app = typer.Typer(invoke_without_command=True, no_args_is_help=False, cls=QwenmemGroup)


@app.callback()
@runs
def snapshot_cmd(
    ctx: typer.Context,
    reason: Annotated[str, typer.Option("--reason", "-m", help="A note stored with the snapshot.")] = "manual",
    keep: KeepOpt = None,
    dry_run: DryRunFlag = False,
    quiet: QuietFlag = False,
    json_out: JsonFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult | None:
    """Take a snapshot of memory/, digest/ and MEMORY.md into <workspace>/.qwenmem/snapshots/.

    Files are stored once by content, so a snapshot of an unchanged tree adds only a small manifest. Run it
    before anything rewrites long-term memory, e.g. from cron before QwenPaw's nightly dream.

    Examples:

      qwenmem snapshot

      qwenmem snapshot --keep 30 --quiet

      qwenmem snapshot list

      qwenmem snapshot restore            # the newest snapshot; the current state is snapshotted first

      qwenmem snapshot restore 20261201T2255 --path digest --dry-run
    """
    if ctx.invoked_subcommand is not None:
        return None
    outcome = snapshot_op.run(open_workspace(ctx, workspace, agent), snapshot_op.Options(reason, keep, dry_run))
    result = outcome.data
    document = outcome.with_data(document_of(result, snapshot_op.OMITTED_FIELDS))
    return CommandResult.of(document, warnings_first=True, render=None if quiet else lambda: _render_create(result))


def _render_create(result: Any) -> None:
    s = result.snapshot
    verb = "would take" if result.status == "dry-run" else "took"
    say = output.out().print
    say(output.escape(f"{verb} snapshot {s.id}: {s.files:,} files, {output.human_size(s.bytes)}, "
                      f"{output.human_size(s.added_bytes)} new in the store"), soft_wrap=True)
    if result.same_as:
        say(output.escape(f"  same content as snapshot {result.same_as}"), soft_wrap=True)
    if result.pruned:
        what = "would prune" if result.status == "dry-run" else "pruned"
        freed = "" if result.status == "dry-run" else f", {output.human_size(result.bytes_freed)} freed"
        say(output.escape(f"  {what} {len(result.pruned)} old snapshot(s){freed}"), soft_wrap=True)


@command(app, "list")
def list_cmd(
    ctx: typer.Context,
    json_out: JsonFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """List snapshots, oldest first, with their size and what each added to the store.

    Examples:

      qwenmem snapshot list

      qwenmem snapshot list --json | jq -r '.result.snapshots[-1].id'
    """
    listed = snapshot_list.run(open_workspace(ctx, workspace, agent), snapshot_list.Options())
    return CommandResult.of(listed, warnings_first=True, render=lambda: _render_list(listed.data))


LIST_COLUMNS = (Column("id", Kind.KEY), Column("created", Kind.LABEL), Column("files", Kind.NUMBER, "right"),
                Column("size", Kind.NUMBER, "right"), Column("added", Kind.NUMBER, "right"), Column("reason"))


def _render_list(listed: SnapshotListResult) -> None:
    if not listed.snapshots:
        output.note(f"no snapshots in {listed.directory} (take one with `qwenmem snapshot`)")
        return
    render_table(LIST_COLUMNS, [[s.id, s.created, number(s.files), _size(s.bytes), _size(s.added_bytes), s.reason]
                                for s in listed.snapshots])


def _size(n: int) -> Cell:
    return Cell(output.human_size(n), raw=str(n))


@command(app, "restore")
def restore_cmd(
    ctx: typer.Context,
    ident: Annotated[Optional[str], typer.Argument(metavar="ID", help="Snapshot ID or a unique prefix of one "
                                                   "(default: the newest).", show_default=False)] = None,
    paths: Annotated[Optional[List[str]], typer.Option("--path", help="Restore only this file or directory "
                                                       "(workspace-relative, repeatable), e.g. digest.")] = None,
    exact: Annotated[bool, typer.Option("--exact", help="Also remove files that are not in the snapshot (they are "
                                        "kept in the undo snapshot).")] = False,
    keep: KeepOpt = None,
    dry_run: DryRunFlag = False,
    quiet: QuietFlag = False,
    json_out: JsonFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """Put memory/, digest/ and MEMORY.md back as a snapshot holds them. The current state is snapshotted first,
    so `qwenmem snapshot restore <undo ID>` undoes it. Stop QwenPaw first: it rewrites these files itself.

    Exit codes: 0 restored or nothing to do, 2 unknown snapshot, 3 damaged snapshot (nothing written),
    4 another qwenmem holds the lock or a file changed meanwhile.

    Examples:

      qwenmem snapshot restore --dry-run

      qwenmem snapshot restore 20261201T225500 --path digest/personal
    """
    options = snapshot_restore.Options(ident, tuple(paths or ()), exact, keep, dry_run)
    outcome = snapshot_restore.run(open_workspace(ctx, workspace, agent), options)
    result = outcome.data
    document = outcome.with_data(document_of(result, snapshot_restore.OMITTED_FIELDS))
    return CommandResult.of(document, warnings_first=True, render=None if quiet else lambda: _render_restore(result))


def _render_restore(result: Any) -> None:
    say = output.out().print
    verb = {"restored": "restored", "unchanged": "already identical to", "dry-run": "would restore"}[result.status]
    counts = f"{len(result.replaced)} replaced, {len(result.created)} created, {len(result.removed)} removed, " \
             f"{result.unchanged} unchanged"
    say(output.escape(f"{verb} snapshot {result.restored_from}" + ("" if result.status == "unchanged" else f": {counts}")),
        soft_wrap=True)
    for label, items in (("replaced", result.replaced), ("created", result.created), ("removed", result.removed)):
        for rel in items:
            say(output.escape(f"  {label:<8} {rel}"), soft_wrap=True)
    if result.extra:
        say(output.escape(f"  left in place (not in the snapshot; --exact removes them): {', '.join(result.extra)}"),
            soft_wrap=True)
    if result.undo_snapshot:
        say(output.escape(f"  undo: qwenmem snapshot restore {result.undo_snapshot}"), soft_wrap=True)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="snapshot")
