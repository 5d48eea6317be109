"""`info`: the resolved workspace, its files, every setting with its source, the QwenPaw generation."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, TypedDict

from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.history.state import HistoryState
    from qwenmem.core.settings import Settings
    from qwenmem.core.settings.gen2 import Gen2Settings, GenerationSummary


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
    generation: dict[str, Any]  # 1.x / 2.x / mixed with file counts (settings.gen2.GenerationSummary)
    qwenpaw2: dict[str, Any]  # strategy, scroll settings, history.db state, ReMe 0.4 folders, provider context
    embedding_kernel: dict[str, Any]  # the kernel a bulk reindex with the default e5 model runs (core/index/e5_kernel)


class ReMeDirState(TypedDict):
    path: str
    exists: bool


@dataclass
class Qwenpaw2Info:
    """Everything `info` shows about the 2.x side of a workspace."""

    generation: GenerationSummary
    settings: Gen2Settings
    history: HistoryState
    reme_dirs: dict[str, ReMeDirState]
    rows: list[tuple[str, Any, str]]
    derived: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {"strategy": self.settings.strategy, "strategy_source": self.settings.strategy_source,
                "scroll": dict(self.settings.scroll), "history_retention_days": self.settings.history_retention_days,
                "history": self.history.to_json(), "reme_dirs": self.reme_dirs,
                "provider": self.settings.provider.to_json() if self.settings.provider else None,
                "embedding_api_key": self.settings.embedding_api_key}


def qwenpaw2_info(ws: Workspace, settings: Settings, env: Mapping[str, str] | None = None) -> Qwenpaw2Info:
    """`settings` is settings.load_settings(ws). For a 1.x workspace the rows stay as they are."""
    from qwenmem.core.history.state import history_state
    from qwenmem.core.sessions import count_file_generations
    from qwenmem.core.settings.gen2 import derived_limits, load_gen2_settings, rows_for_gen2, workspace_generation

    n1, n2 = count_file_generations(ws)
    generation = workspace_generation(ws, n1, n2)
    is2 = generation.generation in ("2.x", "mixed")
    gen2 = load_gen2_settings(ws, env=env, legacy_agent_json=settings.config_layout == "legacy" and not is2)
    history = history_state(gen2.history_db_file(), check=is2)
    reme = {key: ReMeDirState(path=str(ws.path / name), exists=(ws.path / name).is_dir())
            for key, name in gen2.reme_dirs.items() if key in ("metadata_dir", "digest_dir", "session_dir")}
    rows = settings.as_rows()
    if is2:
        rows = rows_for_gen2(rows, gen2)
    return Qwenpaw2Info(generation, gen2, history, reme, rows, derived_limits(settings, gen2 if is2 else None))


@dataclass
class Info:
    """The JSON result and what it was made from, which people's view shows in more words."""

    result: InfoResult
    files: dict[str, Path]
    details: Qwenpaw2Info


def run(ws: Workspace, options: Options) -> Outcome[Info]:
    from qwenmem.core.index import e5_kernel
    from qwenmem.core.settings import load_settings
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
