"""QwenPaw 2.x settings that 1.x did not have (spec qwenpaw2-workspace.md §1.4), and the workspace's generation.

Kept apart from settings.py (which reads the values both generations share) so each stays small:
context strategy, scroll settings (history db, retention), ReMe 0.4 folders, the provider's context size.
Secrets: an embedding api_key is masked like QwenPaw's _mask_key; provider keys are never read out (providers.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from qwenmem.core.history.state import history_db_path
from qwenmem.core.providers import ProviderModel, resolve_provider_model
from qwenmem.core.workspace import Workspace, read_json_file

SCROLL, NATIVE, LIGHT = "scroll", "native", "light"
_LC = ("running", "light_context_config")
_SC = _LC + ("scroll_config",)
_RM = ("running", "reme_light_memory_config")
SCROLL_DEFAULTS: dict[str, Any] = {"db_filename": "history.db", "history_retention_days": 30, "repl_timeout_s": 300,
                                   "allow_unsandboxed": False, "offload_dialog": False}
REME_DIR_DEFAULTS = {"metadata_dir": "mem_metadata", "session_dir": "mem_session", "mem_session_dir": "mem_agent",
                     "resource_dir": "resource", "daily_dir": "memory", "digest_dir": "digest"}
GEN2_MARKERS = ("history.db", "sessions/.synced.json", "mem_metadata", "mem_session")
GEN1_MARKERS = ("file_store", ".reme_store_v1", "memory_file_metadata.json")


def _dig(doc: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def _same_type(default: Any, value: Any) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    return isinstance(value, type(default))


def mask_secret(value: str) -> str:
    """QwenPaw's _mask_key: the first 5 characters, then stars."""
    return value if len(value) <= 5 else value[:5] + "*" * (len(value) - 5)


@dataclass
class Gen2Settings:
    strategy: str = SCROLL  # scroll | native; "light" for a 1.x agent.json (LightContextManager)
    strategy_source: str = "default"
    scroll: dict[str, Any] = field(default_factory=lambda: dict(SCROLL_DEFAULTS))
    scroll_sources: dict[str, str] = field(default_factory=dict)
    history_db: Path | None = None
    reme_dirs: dict[str, str] = field(default_factory=lambda: dict(REME_DIR_DEFAULTS))
    embedding_api_key: str = ""  # masked
    provider: ProviderModel | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def history_retention_days(self) -> int:
        return int(self.scroll["history_retention_days"])

    def to_json(self) -> dict:
        return {"strategy": self.strategy, "strategy_source": self.strategy_source, "scroll": dict(self.scroll),
                "history_db": str(self.history_db) if self.history_db else None, "reme_dirs": dict(self.reme_dirs),
                "embedding_api_key": self.embedding_api_key,
                "provider": self.provider.to_json() if self.provider else None}


def read_agent_json(ws: Workspace) -> dict:
    path = ws.path / "agent.json"
    if not path.is_file():
        return {}
    doc = read_json_file(path)
    return doc if isinstance(doc, dict) else {}


def load_gen2_settings(ws: Workspace, agent_doc: dict | None = None, env: Mapping[str, str] | None = None,
                       legacy_agent_json: bool = False) -> Gen2Settings:
    """2.x settings of `ws`. `legacy_agent_json`: the agent.json has only 1.x keys, so a 1.x QwenPaw would run
    `light`; a 2.x QwenPaw reading the same file runs its default `scroll`, which is what we report when the
    workspace shows 2.x markers (the caller decides)."""
    doc = read_agent_json(ws) if agent_doc is None else agent_doc
    out = Gen2Settings()
    strategy = _dig(doc, _LC + ("strategy",))
    if strategy in (SCROLL, NATIVE):
        out.strategy, out.strategy_source = strategy, "agent.json running.light_context_config.strategy"
    elif strategy is not None:
        out.notes.append(f"agent.json strategy {strategy!r} is not scroll/native (QwenPaw 2.x refuses the file)")
    elif legacy_agent_json:
        out.strategy, out.strategy_source = LIGHT, "1.x agent.json (LightContextManager)"
    for key, default in SCROLL_DEFAULTS.items():
        value = _dig(doc, _SC + (key,))
        if value is not None and _same_type(default, value) and not (key == "history_retention_days" and value < 0):
            out.scroll[key] = value
            out.scroll_sources[key] = "agent.json running.light_context_config.scroll_config." + key
    for key in REME_DIR_DEFAULTS:
        value = _dig(doc, _RM + (key,))
        if isinstance(value, str) and value:
            out.reme_dirs[key] = value
    key = _dig(doc, _RM + ("embedding_model_config", "api_key"))
    out.embedding_api_key = mask_secret(key) if isinstance(key, str) and key else ""
    out.history_db = history_db_path(ws.path, out.scroll["db_filename"])
    out.provider = resolve_provider_model(ws.root, doc, env)
    return out


@dataclass
class GenerationSummary:
    generation: str  # "1.x" | "2.x" | "mixed" | "unknown"
    files_1x: int
    files_2x: int
    markers: list[str]

    def to_json(self) -> dict:
        return {"generation": self.generation, "files_1x": self.files_1x, "files_2x": self.files_2x,
                "markers": self.markers}


def workspace_generation(ws: Workspace, files_1x: int, files_2x: int) -> GenerationSummary:
    """Spec §7.2 rules 1-3, from the per-file counts (classified by the caller) and the marker paths."""
    markers2 = [m for m in GEN2_MARKERS if os.path.lexists(ws.path / m)]
    markers1 = [m for m in GEN1_MARKERS if os.path.lexists(ws.path / m)]
    is2 = bool(markers2) or files_2x > 0
    if is2 and files_1x:
        gen = "mixed"
    elif is2:
        gen = "2.x"
    elif files_1x or markers1:
        gen = "1.x"
    else:
        gen = "unknown"
    return GenerationSummary(gen, files_1x, files_2x, markers2 + markers1)
