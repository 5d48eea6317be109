"""The command map: every command group, mounted on the root app. Each group is one module."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    from qwenmem.cli import completion, demo, info, sessions

    app.add_typer(sessions.app, name="sessions")
    app.command("info")(info.info)
    app.command("demo")(demo.demo)
    app.command("completions")(completion.completions)
    for optional in ("compact", "search", "dream"):
        _mount_optional(app, optional)


def _mount_optional(app: typer.Typer, name: str) -> None:
    """Groups built by parallel work land here as they are finished (each module exposes `register(app)`)."""
    import importlib

    try:
        module = importlib.import_module(f"qwenmem.cli.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"qwenmem.cli.{name}":
            raise
        return
    module.register(app)
