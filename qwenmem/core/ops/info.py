"""`info`: the resolved workspace, its files, every setting with its source, the QwenPaw generation."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.settings2 import Qwenpaw2Info


@dataclass(frozen=True)
class Options:
    """`qwenmem info` has no flags but where the workspace is and --json."""


@dataclass
class InfoResult:
    """`info --json` result."""

    workspace: str
    root: str
    agent: str | None
    found_by: str
    notes: list[str]
    files: dict[str, dict[str, Any]]
    settings: list[dict[str, Any]]
    derived: dict[str, int]
    generation: dict[str, Any]  # 1.x / 2.x / mixed with file counts (settings2.GenerationSummary)
    qwenpaw2: dict[str, Any]  # strategy, scroll settings, history.db state, ReMe 0.4 folders, provider context
    embedding_kernel: dict[str, Any]  # the kernel a bulk reindex with the default e5 model runs (core/index/e5_kernel)


@dataclass
class Info:
    """The JSON result and what it was made from, which people's view shows in more words."""

    result: InfoResult
    files: dict[str, Path]
    details: Qwenpaw2Info


def run(ws: Workspace, options: Options) -> Outcome[Info]:
    from qwenmem.core.index import e5_kernel
    from qwenmem.core.settings import load_settings
    from qwenmem.core.settings2 import qwenpaw2_info
    from qwenmem.core.workspace import path_exists

    with recording() as log:
        gen = qwenpaw2_info(ws, load_settings(ws))
        files = {
            "agent.json": ws.path / "agent.json",
            "chats.json": ws.path / "chats.json",
            "MEMORY.md": ws.memory_md,
            "memory/": ws.memory_dir,
            "sessions/": ws.sessions_dir,
            "dialog/": ws.dialog_dir,
            "backup/": ws.backup_dir,
            "qwenmem data": ws.data_dir,
        }
        result = InfoResult(
            str(ws.path), str(ws.root), ws.agent_id, ws.source, list(ws.notes),
            {name: {"path": str(p), "exists": path_exists(p)} for name, p in files.items()},
            [{"name": n, "value": v, "source": s} for n, v, s in gen.rows], gen.derived, gen.generation.to_json(),
            gen.to_json(), e5_kernel.describe())
    return Outcome("ok", Info(result, files, gen), events=log.events)
