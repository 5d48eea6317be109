"""`doctor`: every agent of a QwenPaw root checked (read-only); problems when anything needs attention.

It takes a place, not a Workspace: a root holds many agents, each checked as its own workspace."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome

if TYPE_CHECKING:
    from qwenmem.core.doctor import DoctorReport


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem doctor` but the output's (--quiet, --json): only which agent, if one."""

    agent: str | None = None  # only this agent of the root


def run(where: str | os.PathLike[str] | None, options: Options) -> Outcome[DoctorReport]:
    """`where`: a QwenPaw root, one agent's workspace, or None (found as every command finds its workspace)."""
    from qwenmem.core.doctor import run_doctor

    with recording() as log:
        report = run_doctor(where, options.agent)
    return Outcome("problems" if report.needs_attention else "ok", report, events=log.events)
