"""One workspace's task, as a worker runs it: open the workspace, run the operation, return plain data.

Nothing raised here leaves the worker: a failing workspace becomes a record, so it never stops the rest.
"""

from __future__ import annotations

import time
from typing import Any

from qwenmem.core import confine
from qwenmem.core.errors import BusyError, ChangedUnderneathError, QwenmemError
from qwenmem.core.events import Events, recording
from qwenmem.core.fleet.operations import OPERATIONS, Command
from qwenmem.core.fleet.targets import Target

OK, PROBLEMS, ERROR, BUSY, TIMEOUT, CRASHED = "ok", "problems", "error", "busy", "timeout", "crashed"
STATUSES = (OK, PROBLEMS, ERROR, BUSY, TIMEOUT, CRASHED)


NO_EVENTS = Events()


def failure(status: str, kind: str, message: str, seconds: float = 0.0, events: Events = NO_EVENTS,
            code: str | None = None, exit_as: str | None = None) -> dict[str, Any]:
    """A task that ended without an outcome. `code` and `exit_as` are the error's own words (qwenmem.core.errors),
    so the driver needs no class to give the record its envelope code and exit; `kind` names what happened."""
    return {"status": status, "result": None, "warnings": [],
            "error": {"type": kind, "code": code, "message": message},
            "seconds": round(seconds, 3), "events": plain_events(events), "exit_as": exit_as}


def _failed(status: str, exc: QwenmemError, seconds: float, events: Events) -> dict[str, Any]:
    return failure(status, type(exc).__name__, str(exc), seconds, events, exc.code, exc.exit_as)


def plain_events(events: Events) -> dict[str, list[str]]:
    """This task's own events (qwenmem.core.events): the driver's exit code for the record, as the CLI's."""
    return {"refused_links": list(events.refused_links), "disk_full": list(events.disk_full)}


def run_task(target: Target, command: Command) -> dict[str, Any]:
    from qwenmem.core.workspace import discover_workspace

    start = time.monotonic()
    # this workspace's events and confinement only: a worker runs many, one after another
    with recording() as log, confine.scope():
        try:
            ws = discover_workspace(target.path, target.agent)
            outcome = OPERATIONS[command.name].run_for(target, ws, command.options)
        except (BusyError, ChangedUnderneathError) as exc:
            return _failed(BUSY, exc, time.monotonic() - start, log.events)
        except QwenmemError as exc:
            return _failed(ERROR, exc, time.monotonic() - start, log.events)
        except Exception as exc:  # noqa: BLE001 - one workspace's internal error is its record, not the run's end
            return failure(ERROR, "internal", f"{type(exc).__name__}: {exc}", time.monotonic() - start, log.events)
    return {"status": outcome.status, "result": outcome.data, "warnings": list(outcome.warnings), "error": None,
            "seconds": round(time.monotonic() - start, 3), "events": plain_events(log.events),
            "exit_as": outcome.exit_as}

