"""`qwenmem demo`: copy the bundled sample workspace to a temporary directory and walk through the main job there."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer

from qwenmem.cli import output
from qwenmem.cli.errors import ExitCode
from qwenmem.cli.runner import execute

# Each step is a qwenmem command line run against the demo copy; steps whose command is not installed are skipped.
DEMO_STEPS: list[tuple[str, list[str]]] = [
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
    ("Everything that still needs attention, on one screen", ["doctor"]),
]

# How to run qwenmem after the demo, in a new shell: the venv's own script, or an install that puts it on PATH.
HOW_TO_RUN = ("In a new shell, run .venv/bin/qwenmem (scripts/demo.sh made .venv),\n"
              "or put qwenmem on your PATH: pipx install .   (or: uv tool install .)")


def sample_workspace() -> Path:
    import qwenmem

    return Path(qwenmem.__file__).resolve().parent / "sample" / "workspace"


def _short_info(dest: Path) -> None:
    """Four lines instead of `qwenmem info`'s every setting: where it is and the numbers the demo relies on."""
    from qwenmem.core.settings import load_settings
    from qwenmem.core.workspace import discover_workspace

    ws = discover_workspace(dest)
    settings = load_settings(ws)
    sessions = sum(1 for _ in ws.sessions_dir.rglob("*.json"))
    daily = sorted(p.name for p in ws.memory_dir.glob("*.md"))
    con = output.out()
    con.print(f"workspace   {output.escape(str(ws.path))}", soft_wrap=True)  # a long path: never cut in two
    hang = " " * 12  # under the value column
    output.para(f"sessions    {sessions} files under sessions/ (console, discord, telegram, one flat legacy file)",
                hang)
    output.para(f"memory      MEMORY.md and {len(daily)} daily logs ({output.escape(', '.join(daily))})", hang)
    output.para(f"compaction  at {settings.compact_threshold:,} of {settings.max_input_length:,} tokens "
                "(`qwenmem info` lists every setting)", hang)


def demo(
    ctx: typer.Context,
    target: Annotated[Optional[Path], typer.Option("--into", help="Copy the sample here instead of a temp dir.")] = None,
    keep: Annotated[bool, typer.Option("--keep/--no-keep", help="Keep the demo copy afterwards (default: "
                                       "remove it).")] = False,
) -> None:
    """Copy the bundled sample workspace (English and Chinese, one damaged session) somewhere temporary and run
    the main job on it: list, show, repair, compact check, index, search, dream and doctor. Offline; touches
    nothing else, and removes its copy at the end unless --keep.

    Examples:

      qwenmem demo

      qwenmem demo --keep --into /tmp/qwenmem-demo
    """

    base = target or Path(tempfile.mkdtemp(prefix="qwenmem-demo-"))
    dest = base / "workspace"
    if dest.exists():
        raise typer.BadParameter(f"{dest} already exists", param_hint="--into")
    shutil.copytree(sample_workspace(), dest)
    con = output.out()
    failures = 0
    try:
        con.print(f"[bold]qwenmem demo[/bold]: working on a copy{'' if keep else ' (removed at the end)'}")
        _short_info(dest)
        for title, argv in DEMO_STEPS:
            con.print()
            con.rule(f"[bold]{title}[/bold]")
            con.print(f"[dim]$ qwenmem {output.escape(' '.join(argv))}[/dim]")
            code = execute(ctx.find_root().command, ["-w", str(dest), *argv])
            if code not in (ExitCode.OK, ExitCode.PROBLEMS):  # problems found is what some steps are there to show
                failures += 1
                output.warn(f"step exited with {code}")
    finally:
        if not keep:
            # only what the demo created: the copy, and the temp dir when --into was not given (never the user's dir)
            shutil.rmtree(dest if target else base, ignore_errors=True)
    con.print()
    if keep:
        con.print(f"The demo workspace stays at {output.escape(str(dest))}; try: qwenmem -w "
                  f"{output.escape(str(dest))} sessions list")
    else:
        con.print("The demo copy is removed (qwenmem demo --keep keeps it).\n"
                  "On your own data: qwenmem -w ~/.qwenpaw doctor")
    con.print(HOW_TO_RUN, markup=False)
    if failures:
        raise typer.Exit(int(ExitCode.PROBLEMS))
