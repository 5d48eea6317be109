"""The command map: every command, mounted on the root app. Commands live in this package, one module (or a
package, for a command with subcommands) per command; the plumbing they share is beside it in qwenmem/cli/."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    from qwenmem.cli import runner
    from qwenmem.cli.commands import (compact, completions, demo, doctor, dream, fleet, history, info, reindex,
                                      schedule, search, sessions, snapshot, upgrade)

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
    runner.command(app, "completions")(completions.completions)
    runner.command(app, "upgrade")(upgrade.upgrade)
    fleet.register(app)
