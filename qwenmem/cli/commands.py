"""The command map: every command group, mounted on the root app. Each group is one module."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    from qwenmem.cli import compact, completion, demo, dream, info, repair, search, sessions, snapshot

    repair.register(sessions.app)
    app.add_typer(sessions.app, name="sessions")
    compact.register(app)
    search.register(app)  # search and reindex
    dream.register(app)
    snapshot.register(app)
    app.command("info")(info.info)
    app.command("demo")(demo.demo)
    app.command("completions")(completion.completions)
