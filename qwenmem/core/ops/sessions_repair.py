"""`sessions repair`: classify (--check), plan (--dry-run) or repair session files, both generations."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qwenmem.core.errors import UsageError
from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.repair.run import RepairMode


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem sessions repair`, with the CLI's defaults."""

    sessions: tuple[str, ...] = ()  # named sessions (key, file name, path or id); none: every session
    all_sessions: bool = False
    check: bool = False
    dry_run: bool = False
    fix_tool_pairs: bool = False
    from_backup: bool = False
    from_file: Path | None = None  # --from: rebuild the one named session from this file inside the workspace
    convert_1x: bool = False

    def __post_init__(self) -> None:
        self.mode  # noqa: B018 - the flag rules are checked when the options are made

    @property
    def mode(self) -> RepairMode:
        """The mode these flags ask for, by the rules of `sessions repair` (fleet's too)."""
        if self.check and self.dry_run:
            raise UsageError("--check and --dry-run are alternatives; use one")
        if self.sessions and self.all_sessions:
            raise UsageError("name sessions or use --all, not both")
        mode: RepairMode = "check" if self.check else "dry-run" if self.dry_run else "repair"
        if mode == "repair" and not self.sessions and not self.all_sessions:
            raise UsageError("name the sessions to repair, or use --all (see --check for a read-only report)")
        return mode


@dataclass
class RepairResult:
    """`sessions repair --json` result."""

    workspace: str
    mode: RepairMode
    run: str | None
    quarantine: str | None
    counts: dict[str, int]
    statuses: dict[str, int]
    files: list[Any]  # qwenmem.core.repair.run.FileReport


def run(ws: Workspace, options: Options) -> Outcome[RepairResult]:
    """Problems when a file needs attention or changed while it was worked on; the latter exits busy (4)."""
    from qwenmem.core.repair import run_repair
    from qwenmem.core.sessions import find_session, iter_session_refs

    with recording() as log:
        refs = [find_session(ws, s) for s in options.sessions] if options.sessions else list(iter_session_refs(ws))
        source = ws.resolve_inside(options.from_file) if options.from_file is not None else None
        result = run_repair(ws, refs, options.mode, options.fix_tool_pairs, options.from_backup, source,
                            convert_gen1=options.convert_1x)
    data = RepairResult(result.workspace, result.mode, result.run_id, result.quarantine, result.counts,
                        result.statuses, result.files)
    problems = bool(result.needs_attention or result.changed_underneath)
    return Outcome("problems" if problems else "ok", data, events=log.events,
                   exit_as="busy" if result.changed_underneath else None)
