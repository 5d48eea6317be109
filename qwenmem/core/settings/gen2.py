"""QwenPaw 2.x settings that 1.x did not have (spec qwenpaw2-workspace.md §1.4), and the workspace's generation.

Kept apart from the neutral core (settings/__init__.py: the values both generations share) so each stays small:
context strategy, scroll settings (history db, retention), ReMe 0.4 folders, the provider's context size.
Secrets: an embedding api_key is masked like QwenPaw's _mask_key; provider keys are never read out (providers.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, Mapping

from qwenmem.core.providers import ProviderModel, resolve_provider_model
from qwenmem.core.settings import Settings
from qwenmem.core.workspace import Workspace, read_config_if_present

ContextStrategy = Literal["scroll", "native", "light"]  # light: what a 1.x QwenPaw runs (LightContextManager)
SCROLL: Final = "scroll"
NATIVE: Final = "native"
LIGHT: Final = "light"
WorkspaceGeneration = Literal["1.x", "2.x", "mixed", "unknown"]
_LC = ("running", "light_context_config")
_SC = _LC + ("scroll_config",)
_RM = ("running", "reme_light_memory_config")
DEFAULT_DB_FILENAME = "history.db"
SCROLL_DEFAULTS: dict[str, Any] = {"db_filename": DEFAULT_DB_FILENAME, "history_retention_days": 30,
                                   "repl_timeout_s": 300, "allow_unsandboxed": False, "offload_dialog": False}
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


def history_db_path(workspace_dir: Path, db_filename: str | None = None) -> Path:
    """QwenPaw's resolve_history_db_path (config/history_path.py): relative names resolve under the workspace,
    absolute ones are honoured, backslashes become slashes."""
    name = (db_filename or DEFAULT_DB_FILENAME).replace("\\", "/")
    p = Path(name).expanduser()
    return p if p.is_absolute() else Path(workspace_dir) / p


def mask_secret(value: str) -> str:
    """QwenPaw's _mask_key keeps the first 5 characters, which is the whole of a short key: a key of 8 characters or
    fewer is all stars here."""
    return "*" * len(value) if len(value) <= 8 else value[:5] + "*" * (len(value) - 5)


@dataclass
class Gen2Settings:
    strategy: ContextStrategy = SCROLL  # "light" for a 1.x agent.json
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

    def history_db_file(self) -> Path:
        """`history_db`, which load_gen2_settings always sets (TypeError for a bare Gen2Settings(), as before)."""
        if self.history_db is None:
            raise TypeError("Gen2Settings.history_db is not set: build the settings with load_gen2_settings")
        return self.history_db

    def to_json(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "strategy_source": self.strategy_source, "scroll": dict(self.scroll),
                "history_db": str(self.history_db) if self.history_db else None, "reme_dirs": dict(self.reme_dirs),
                "embedding_api_key": self.embedding_api_key,
                "provider": self.provider.to_json() if self.provider else None}


def read_agent_json(ws: Workspace) -> dict[str, Any]:
    doc = read_config_if_present(ws.path / "agent.json")
    return doc if isinstance(doc, dict) else {}


def load_gen2_settings(ws: Workspace, agent_doc: dict[str, Any] | None = None, env: Mapping[str, str] | None = None,
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
    generation: WorkspaceGeneration
    files_1x: int
    files_2x: int
    markers: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"generation": self.generation, "files_1x": self.files_1x, "files_2x": self.files_2x,
                "markers": self.markers}


def workspace_generation(ws: Workspace, files_1x: int, files_2x: int) -> GenerationSummary:
    """Spec §7.2 rules 1-3, from the per-file counts (classified by the caller) and the marker paths."""
    markers2 = [m for m in GEN2_MARKERS if os.path.lexists(ws.path / m)]
    markers1 = [m for m in GEN1_MARKERS if os.path.lexists(ws.path / m)]
    is2 = bool(markers2) or files_2x > 0
    gen: WorkspaceGeneration
    if is2 and files_1x:
        gen = "mixed"
    elif is2:
        gen = "2.x"
    elif files_1x or markers1:
        gen = "1.x"
    else:
        gen = "unknown"
    return GenerationSummary(gen, files_1x, files_2x, markers2 + markers1)


# 1.x settings 2.x removed (spec §1.4: "removed, ignored"), and 1.x defaults 2.x changed.
REMOVED_IN_GEN2 = ("compact_with_thinking_block", "summarize_when_compact", "recursive_file_watcher")
DEFAULTS_GEN2 = {"offload_retention_days": 30}


def rows_for_gen2(rows: list[tuple[str, Any, str]], gen2: Gen2Settings) -> list[tuple[str, Any, str]]:
    """settings.as_rows() as QwenPaw 2.x reads them: removed keys dropped, changed defaults applied, and the model
    limit taken from the provider (max_input_length in agent.json is vestigial in 2.x)."""
    out = []
    for name, value, source in rows:
        if name in REMOVED_IN_GEN2:
            continue
        if name == "config_layout":  # 1.x key layouts mean nothing to 2.x
            continue
        if name in DEFAULTS_GEN2 and source == "default":
            value, source = DEFAULTS_GEN2[name], "default (2.x)"
        if name == "max_input_length" and gen2.provider is not None:
            value, source = gen2.provider.context_size, gen2.provider.context_source
        if name in ("active_provider", "active_model") and gen2.provider is not None and gen2.provider.provider_id:
            value = gen2.provider.provider_id if name == "active_provider" else gen2.provider.model_id
            source = gen2.provider.active_source
        if name == "embedding.api_key":
            value = gen2.embedding_api_key
        out.append((name, value, source))
    return out


def derived_limits(settings: Settings, gen2: Gen2Settings | None) -> dict[str, int]:
    """The compaction threshold and reserve QwenPaw applies: 1.x from agent.json's max_input_length; 2.x (`gen2`
    given) from the provider's context size, for every file of the workspace, 1.x-shaped ones too (QwenPaw 2.x loads
    them with its own rules, spec §2.6). `info` and `doctor` report the same numbers."""
    if gen2 is None:
        return {"compact_threshold": settings.compact_threshold, "reserve_tokens": settings.reserve_tokens}
    size = gen2.provider.context_size if gen2.provider else settings.max_input_length
    reserve = size * settings.reserve_threshold_ratio
    if gen2.strategy == SCROLL:  # scroll's bounded reserve (spec §4.4)
        reserve = min(40_000, max(reserve, min(10_000, 0.1 * size)))
    return {"compact_threshold": int(size * settings.compact_threshold_ratio), "reserve_tokens": int(reserve)}
