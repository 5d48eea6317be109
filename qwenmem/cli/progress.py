"""A Rich progress bar on stderr driven by core's (stage, done, total) callbacks (search and reindex)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from qwenmem.cli import output


@contextlib.contextmanager
def progress_callback(quiet: bool) -> Iterator[Callable[[str, int, int], None]]:
    """A Rich progress bar on stderr driven by core's (stage, done, total) callbacks, created on first use so a
    search that needs no indexing does not pay for importing rich.progress."""
    state: dict[str, Any] = {"prog": None, "tasks": {}}

    def callback(stage: str, done: int, total: int) -> None:
        if quiet:
            return
        if state["prog"] is None:
            prog, _, _ = output.progress("indexing", None, quiet)
            prog.start()
            state["prog"] = prog
        tasks = state["tasks"]
        if stage not in tasks:
            tasks[stage] = state["prog"].add_task(stage, total=total)
        state["prog"].update(tasks[stage], completed=done, total=total)

    try:
        yield callback
    finally:
        if state["prog"] is not None:
            state["prog"].stop()
