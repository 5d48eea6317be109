"""agent.json (and the root config.json) as typed settings, with QwenPaw's defaults.

Two generations exist (spec qwenpaw-workspace.md §1.5):
  * current (Q@HEAD): running.light_context_config…, running.reme_light_memory_config…, model limits from the
    provider JSON of the active model;
  * legacy (Q@PRE): running.max_input_length, running.context_compact.memory_compact_ratio, tool_result_compact,
    memory_summary, embedding_config.
Every value remembers where it came from so `qwenmem info` can show it. Unknown keys are ignored, as QwenPaw does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from qwenmem.core.workspace import Workspace, read_json_file

DEFAULT_MAX_INPUT_LENGTH = 131072

CURRENT = "current"
LEGACY = "legacy"

_LEGACY_KEYS = ("context_compact", "tool_result_compact", "memory_summary", "embedding_config", "max_input_length")
_CURRENT_KEYS = ("light_context_config", "reme_light_memory_config", "context_manager_backend")


@dataclass
class EmbeddingConfig:
    backend: str = "openai"
    api_key: str = ""
    base_url: str = ""
    model_name: str = ""
    dimensions: int = 1024
    use_dimensions: bool = False
    max_batch_size: int = 10


@dataclass
class Settings:
    generation: str = CURRENT
    language: str = "zh"
    user_timezone: str | None = None
    active_provider: str | None = None
    active_model: str | None = None
    max_input_length: int = DEFAULT_MAX_INPUT_LENGTH
    compact_threshold_ratio: float = 0.8
    reserve_threshold_ratio: float = 0.1
    token_count_estimate_divisor: float = 4
    compact_enabled: bool = True
    compact_with_thinking_block: bool = True
    dialog_path: str = "dialog"
    pruning_enabled: bool = True
    pruning_recent_n: int = 2
    pruning_old_msg_max_bytes: int = 3000
    pruning_recent_msg_max_bytes: int = 50000
    offload_retention_days: int = 5
    tool_results_cache: str = "tool_results"
    exempt_file_extensions: list[str] = field(default_factory=lambda: [".md"])
    exempt_tool_names: list[str] = field(default_factory=lambda: ["chat_with_agent"])
    summarize_when_compact: bool = True
    dream_cron: str = "0 23 * * *"
    recursive_file_watcher: bool = False
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    sources: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)

    def source_of(self, name: str) -> str:
        return self.sources.get(name, "default")

    def as_rows(self) -> list[tuple[str, Any, str]]:
        rows = []
        for f in fields(self):
            if f.name in ("sources", "files", "embedding"):
                continue
            rows.append((f.name, getattr(self, f.name), self.source_of(f.name)))
        for f in fields(self.embedding):
            name = f"embedding.{f.name}"
            value = getattr(self.embedding, f.name)
            if f.name == "api_key" and value:
                value = mask_secret(value)
            rows.append((name, value, self.source_of(name)))
        return rows

    @property
    def compact_threshold(self) -> int:
        return int(self.max_input_length * self.compact_threshold_ratio)

    @property
    def reserve_tokens(self) -> int:
        return int(self.max_input_length * self.reserve_threshold_ratio)


def mask_secret(value: str) -> str:
    """QwenPaw's _mask_key: keep the first 5 characters."""
    return value if len(value) <= 5 else value[:5] + "*" * (len(value) - 5)


def _dig(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


class _Loader:
    def __init__(self, settings: Settings, doc: dict, label: str):
        self.settings, self.doc, self.label = settings, doc, label

    def take(self, name: str, *path: str, kind: type | tuple = (int, float, str, bool, list)) -> None:
        value = _dig(self.doc, *path)
        if value is None or isinstance(value, bool) and kind in (int, float, (int, float)):
            return
        if not isinstance(value, kind):
            return
        target, attr = (self.settings.embedding, name.split(".", 1)[1]) if name.startswith("embedding.") else (
            self.settings, name)
        setattr(target, attr, value)
        self.settings.sources[name] = f"{self.label} {'.'.join(path)}"


def _num(*kinds):
    return kinds if len(kinds) > 1 else kinds[0]


def _load_current(ld: _Loader) -> None:
    lc = ("running", "light_context_config")
    cc = lc + ("context_compact_config",)
    tp = lc + ("tool_result_pruning_config",)
    rm = ("running", "reme_light_memory_config")
    ld.take("dialog_path", *lc, "dialog_path", kind=str)
    ld.take("token_count_estimate_divisor", *lc, "token_count_estimate_divisor", kind=_num(int, float))
    ld.take("compact_enabled", *cc, "enabled", kind=bool)
    ld.take("compact_threshold_ratio", *cc, "compact_threshold_ratio", kind=_num(int, float))
    ld.take("reserve_threshold_ratio", *cc, "reserve_threshold_ratio", kind=_num(int, float))
    ld.take("compact_with_thinking_block", *cc, "compact_with_thinking_block", kind=bool)
    ld.take("pruning_enabled", *tp, "enabled", kind=bool)
    ld.take("pruning_recent_n", *tp, "pruning_recent_n", kind=int)
    ld.take("pruning_old_msg_max_bytes", *tp, "pruning_old_msg_max_bytes", kind=int)
    ld.take("pruning_recent_msg_max_bytes", *tp, "pruning_recent_msg_max_bytes", kind=int)
    ld.take("offload_retention_days", *tp, "offload_retention_days", kind=int)
    ld.take("tool_results_cache", *tp, "tool_results_cache", kind=str)
    ld.take("exempt_file_extensions", *tp, "exempt_file_extensions", kind=list)
    ld.take("exempt_tool_names", *tp, "exempt_tool_names", kind=list)
    ld.take("summarize_when_compact", *rm, "summarize_when_compact", kind=bool)
    ld.take("dream_cron", *rm, "dream_cron", kind=str)
    ld.take("recursive_file_watcher", *rm, "recursive_file_watcher", kind=bool)
    _load_embedding(ld, rm + ("embedding_model_config",))


def _load_legacy(ld: _Loader) -> None:
    s = ld.settings
    # Q@PRE defaults differ from Q@HEAD's: ratio 0.75, ReMe's tool_result/ dir, no exempt tool names.
    s.compact_threshold_ratio = 0.75
    s.tool_results_cache = "tool_result"
    s.exempt_tool_names = []
    ld.take("max_input_length", "running", "max_input_length", kind=int)
    cc = ("running", "context_compact")
    tr = ("running", "tool_result_compact")
    ms = ("running", "memory_summary")
    ld.take("token_count_estimate_divisor", *cc, "token_count_estimate_divisor", kind=_num(int, float))
    ld.take("compact_enabled", *cc, "context_compact_enabled", kind=bool)
    ld.take("compact_threshold_ratio", *cc, "memory_compact_ratio", kind=_num(int, float))
    ld.take("reserve_threshold_ratio", *cc, "memory_reserve_ratio", kind=_num(int, float))
    ld.take("compact_with_thinking_block", *cc, "compact_with_thinking_block", kind=bool)
    ld.take("pruning_enabled", *tr, "enabled", kind=bool)
    ld.take("pruning_recent_n", *tr, "recent_n", kind=int)
    ld.take("pruning_old_msg_max_bytes", *tr, "old_max_bytes", kind=int)
    ld.take("pruning_recent_msg_max_bytes", *tr, "recent_max_bytes", kind=int)
    ld.take("offload_retention_days", *tr, "retention_days", kind=int)
    ld.take("summarize_when_compact", *ms, "memory_summary_enabled", kind=bool)
    ld.take("dream_cron", *ms, "dream_cron", kind=str)
    ld.take("recursive_file_watcher", *ms, "recursive_file_watcher", kind=bool)
    _load_embedding(ld, ("running", "embedding_config"))


def _load_embedding(ld: _Loader, path: tuple[str, ...]) -> None:
    for key, kind in (("backend", str), ("api_key", str), ("base_url", str), ("model_name", str),
                      ("dimensions", int), ("use_dimensions", bool), ("max_batch_size", int)):
        ld.take(f"embedding.{key}", *path, key, kind=kind)


def _apply_embedding_env(settings: Settings, env: Mapping[str, str]) -> None:
    """QwenPaw's get_embedding_config: empty api_key/base_url/model_name fall back to EMBEDDING_* env vars."""
    for attr, var in (("api_key", "EMBEDDING_API_KEY"), ("base_url", "EMBEDDING_BASE_URL"),
                      ("model_name", "EMBEDDING_MODEL_NAME")):
        if not getattr(settings.embedding, attr) and env.get(var):
            setattr(settings.embedding, attr, env[var])
            settings.sources[f"embedding.{attr}"] = f"${var}"


def _model_limit_from_providers(ws: Workspace, provider: str, model: str, env: Mapping[str, str]) -> tuple[int, str] | None:
    secret = env.get("QWENPAW_SECRET_DIR") or env.get("COPAW_SECRET_DIR") or f"{ws.root}.secret"
    for kind in ("builtin", "custom"):
        path = Path(secret) / "providers" / kind / f"{provider}.json"
        if not path.is_file():
            continue
        try:
            doc = read_json_file(path)
        except Exception:  # a broken provider file must not stop us; QwenPaw falls back to 131072 too
            continue
        for key in ("models", "extra_models"):
            for info in (doc.get(key) or []) if isinstance(doc, dict) else []:
                if isinstance(info, dict) and info.get("id") == model and isinstance(info.get("max_input_length"), int):
                    return info["max_input_length"], str(path)
    return None


def load_settings(ws: Workspace, env: Mapping[str, str] | None = None) -> Settings:
    """Read agent.json (+ root config.json) into Settings. Raises ConfigError on malformed JSON."""
    env = os.environ if env is None else env
    settings = Settings()
    agent_json = ws.path / "agent.json"
    doc: dict = {}
    if agent_json.is_file():
        loaded = read_json_file(agent_json)
        doc = loaded if isinstance(loaded, dict) else {}
        settings.files["agent.json"] = str(agent_json)
    running = doc.get("running") if isinstance(doc.get("running"), dict) else {}
    loader = _Loader(settings, doc, "agent.json")
    if any(k in running for k in _CURRENT_KEYS) or not any(k in running for k in _LEGACY_KEYS):
        settings.generation = CURRENT
        _load_current(loader)
    else:
        settings.generation = LEGACY
        _load_legacy(loader)
    settings.sources["generation"] = "agent.json keys" if running else "default"
    loader.take("language", "language", kind=str)
    active = doc.get("active_model") if isinstance(doc.get("active_model"), dict) else {}
    if active.get("provider_id") and active.get("model"):
        settings.active_provider, settings.active_model = str(active["provider_id"]), str(active["model"])
        settings.sources["active_provider"] = settings.sources["active_model"] = "agent.json active_model"
        if settings.generation == CURRENT:
            found = _model_limit_from_providers(ws, settings.active_provider, settings.active_model, env)
            if found:
                settings.max_input_length, where = found
                settings.sources["max_input_length"] = where
    _apply_embedding_env(settings, env)
    root_config = ws.root / "config.json"
    if root_config.is_file():
        settings.files["config.json"] = str(root_config)
        cfg = read_json_file(root_config)
        if isinstance(cfg, dict) and isinstance(cfg.get("user_timezone"), str) and cfg["user_timezone"]:
            settings.user_timezone = cfg["user_timezone"]
            settings.sources["user_timezone"] = "config.json user_timezone"
    return settings


def user_tz(settings: Settings, env: Mapping[str, str] | None = None):
    """The user's timezone: config.json user_timezone, else $TZ, else the local zone."""
    from datetime import datetime
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    env = os.environ if env is None else env
    for name in (settings.user_timezone, env.get("TZ")):
        if name:
            try:
                return ZoneInfo(name)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    return datetime.now().astimezone().tzinfo
