"""The command map: every command, mounted on the root app. Commands live in this package, one module (or a
package, for a command with subcommands) per command; the plumbing they share is beside it in qwenmem/cli/."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    from qwenmem.cli import compact, completion, demo, dream, fleet, reindex, runner, schedule, search, snapshot
    from qwenmem.cli.commands import doctor, history, info, sessions

    sessions.register(app)
    compact.register(app)
    search.register(app)
    reindex.register(app)
    dream.register(app)
    snapshot.register(app)
    history.register(app)
    runner.command(app, "info")(info.info)
    runner.command(app, "doctor")(doctor.doctor)
    runner.command(app, "demo")(demo.demo)
    runner.command(app, "schedule")(schedule.schedule)
    runner.command(app, "completions")(completion.completions)
    fleet.register(app)
