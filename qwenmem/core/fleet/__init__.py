"""Maintenance over many workspaces: find them, map one operation onto a local pool or a Dask cluster."""

from qwenmem.core.fleet.operations import (
           OPERATIONS,
           Command,
           command_words,
)
from qwenmem.core.fleet.run import FleetSummary, RetryPolicy, run_fleet
from qwenmem.core.fleet.targets import Target, discover, listed_paths
from qwenmem.core.fleet.tasks import STATUSES, run_task

__all__ = ["OPERATIONS", "STATUSES", "Command", "FleetSummary", "RetryPolicy", "Target", "command_words",
           "discover", "listed_paths", "run_fleet", "run_task"]
