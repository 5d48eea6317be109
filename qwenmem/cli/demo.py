"""`qwenmem demo`: copy the bundled sample workspace to a temporary directory and walk through the main job there."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer

from qwenmem.cli import output
from qwenmem.cli.runner import execute

# Each step is a qwenmem command line run against the demo copy; steps whose command is not installed are skipped.
DEMO_STEPS: list[tuple[str, list[str]]] = [
    ("Where everything is", ["info"]),
    ("Every session with its health (one is damaged on purpose)", ["sessions", "list"]),
    ("Read a conversation", ["sessions", "show", "discord/4821_discord--dm--4821", "--tail", "4"]),
    ("Find what is wrong", ["sessions", "repair", "--check", "--all"]),
    ("Repair it (the original goes to quarantine first)", ["sessions", "repair", "--all"]),
    ("Would any conversation compact?", ["compact", "--check", "--all"]),
    ("Build the search index", ["reindex"]),
    ("Search long-term memory", ["search", "数据库连接超时", "-n", "3"]),
    ("Search for an exact error code", ["search", "ECONNREFUSED", "-n", "3"]),
    # the sample's newest daily log is 2026-11-28: dream that day so facts are promoted, not only deduplicated
    ("Consolidate MEMORY.md (dry run, shows the diff)",
     ["dream", "--dry-run", "--mode", "deterministic", "--date", "2026-11-28"]),
    ("Consolidate MEMORY.md for real (backup first)", ["dream", "--mode", "deterministic", "--date", "2026-11-28"]),
]


def sample_workspace() -> Path:
    return Path(__file__).resolve().parent.parent / "sample" / "workspace"


def demo(
    ctx: typer.Context,
    target: Annotated[Optional[Path], typer.Option("--into", help="Copy the sample here instead of a temp dir.")] = None,
    keep: Annotated[bool, typer.Option("--keep/--no-keep", help="Keep the demo copy afterwards.")] = True,
) -> None:
    """Copy the bundled sample workspace (English and Chinese, one damaged session) somewhere temporary and run
    the main job on it: list, show, repair, compact check, index, search and dream. Offline; touches nothing else.

    Examples:

      qwenmem demo

      qwenmem demo --into /tmp/qwenmem-demo
    """

    base = target or Path(tempfile.mkdtemp(prefix="qwenmem-demo-"))
    dest = base / "workspace"
    if dest.exists():
        raise typer.BadParameter(f"{dest} already exists", param_hint="--into")
    shutil.copytree(sample_workspace(), dest)
    con = output.out()
    con.print(f"[bold]qwenmem demo[/bold]: working on a copy at {output.escape(str(dest))}\n")
    failures = 0
    for title, argv in DEMO_STEPS:
        con.rule(f"[bold]{title}[/bold]")
        con.print(f"[dim]$ qwenmem -w {output.escape(str(dest))} {output.escape(' '.join(argv))}[/dim]")
        code = execute(ctx.find_root().command, ["-w", str(dest), *argv])
        if code not in (0, 1):
            failures += 1
            output.warn(f"step exited with {code}")
    if not keep:
        # only what the demo created: the copy, and the temp dir when --into was not given (never the user's dir)
        shutil.rmtree(dest if target else base, ignore_errors=True)
    else:
        con.print(f"\nThe demo workspace stays at {output.escape(str(dest))}; try: qwenmem -w {output.escape(str(dest))} sessions list")
    if failures:
        raise typer.Exit(1)

