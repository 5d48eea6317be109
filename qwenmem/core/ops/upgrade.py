"""`qwenmem upgrade`: one 1.x workspace moved to the 2.x shape with its whole record (qwenmem.core.upgrade), or
(`undo`) the newest upgrade put back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from qwenmem.core.errors import UsageError
from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:  # the upgrade itself loads when it runs: every command's start-up imports this module
    from qwenmem.core.upgrade.shape import Strategy
    from qwenmem.core.upgrade.run import UpgradeResult
    from qwenmem.core.upgrade.undo import UndoResult

UpgradeStatus = Literal["ok", "problems"]


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem upgrade`, with the CLI's defaults."""

    strategy: Strategy = "scroll"  # QwenPaw 2.2.2's default context strategy (spec §1.4, §4.1)
    dry_run: bool = False
    undo: bool = False
    retention_days: int | None = None  # None: keep forever when the record is older than 30 days, else 30

    def __post_init__(self) -> None:
        if self.strategy not in ("scroll", "native"):
            raise UsageError(f"--strategy must be scroll or native, not {self.strategy!r}")
        if self.retention_days is not None and self.retention_days < 0:
            raise UsageError("--retention-days must be 0 (keep forever) or more")


def run(ws: Workspace, options: Options) -> Outcome[UpgradeResult]:
    """Upgrade: `problems` when a session could not be upgraded (damaged: repair it first)."""
    from qwenmem.core.upgrade.run import Settings, upgrade

    with recording() as log:
        result = upgrade(ws, Settings(options.strategy, options.dry_run, options.retention_days))
    damaged = [f"{r.key}: {r.problem}" for r in result.sessions if r.status == "damaged"]
    status: UpgradeStatus = "problems" if damaged else "ok"
    return Outcome(status, result, tuple(result.warnings + damaged), events=log.events)


def run_undo(ws: Workspace, options: Options) -> Outcome[UndoResult]:
    """Undo: `problems` when a file changed since the upgrade and was left as it is."""
    from qwenmem.core.upgrade.run import history_db_path, read_agent_json
    from qwenmem.core.upgrade.undo import undo

    with recording() as log:
        agent_doc, _ = read_agent_json(ws)
        result = undo(ws, history_db_path(ws, agent_doc or {}), options.dry_run)
    warnings = tuple(f"{rel}: changed since the upgrade (QwenPaw saved it?); left as it is, its 1.x original is "
                     f"in {result.journal}/originals" for rel in result.left_changed)
    status: UpgradeStatus = "problems" if result.left_changed else "ok"
    return Outcome(status, result, warnings, events=log.events)
