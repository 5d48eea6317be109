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
from datetime import tzinfo
from pathlib import Path
from typing import Any, Final, Literal, Mapping

from qwenmem.core import redact
from qwenmem.core.redact import mask_secret as mask_secret  # QwenPaw's _mask_key, one definition; re-exported
from qwenmem.core.workspace import Workspace, dict_at, is_file, read_json_file

DEFAULT_MAX_INPUT_LENGTH = 131072

ConfigLayout = Literal["current", "legacy"]  # which agent.json key layout holds the 1.x settings
CURRENT: Final = "current"
LEGACY: Final = "legacy"

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
    config_layout: ConfigLayout = CURRENT
    language: str = "zh"
    user_timezone: str | None = None
    active_provider: str | None = None
    active_model: str | None = None
    max_input_length: int = DEFAULT_MAX_INPUT_LENGTH
    compact_threshold_ratio: float = 0.8
    reserve_threshold_ratio: float = 0.1
    token_count_estimate_divisor: float = 4.0
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
    dream_cron_enabled: bool = True  # 2.x: QwenPaw schedules its dream only when `dream_cron_enabled and dream_cron`
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




def _dig(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


_LC = "running.light_context_config"
_CC = f"{_LC}.context_compact_config"
_TP = f"{_LC}.tool_result_pruning_config"
_RM = "running.reme_light_memory_config"
_EMBEDDING_KEYS = ("backend", "api_key", "base_url", "model_name", "dimensions", "use_dimensions", "max_batch_size")

# setting → its JSON path in agent.json, per generation (spec §1.5)
CURRENT_PATHS = {
    "dialog_path": f"{_LC}.dialog_path",
    "token_count_estimate_divisor": f"{_LC}.token_count_estimate_divisor",
    "compact_enabled": f"{_CC}.enabled",
    "compact_threshold_ratio": f"{_CC}.compact_threshold_ratio",
    "reserve_threshold_ratio": f"{_CC}.reserve_threshold_ratio",
    "compact_with_thinking_block": f"{_CC}.compact_with_thinking_block",
    "pruning_enabled": f"{_TP}.enabled",
    "pruning_recent_n": f"{_TP}.pruning_recent_n",
    "pruning_old_msg_max_bytes": f"{_TP}.pruning_old_msg_max_bytes",
    "pruning_recent_msg_max_bytes": f"{_TP}.pruning_recent_msg_max_bytes",
    "offload_retention_days": f"{_TP}.offload_retention_days",
    "tool_results_cache": f"{_TP}.tool_results_cache",
    "exempt_file_extensions": f"{_TP}.exempt_file_extensions",
    "exempt_tool_names": f"{_TP}.exempt_tool_names",
    "summarize_when_compact": f"{_RM}.summarize_when_compact",
    "dream_cron": f"{_RM}.dream_cron",
    "dream_cron_enabled": f"{_RM}.dream_cron_enabled",
    "recursive_file_watcher": f"{_RM}.recursive_file_watcher",
    **{f"embedding.{k}": f"{_RM}.embedding_model_config.{k}" for k in _EMBEDDING_KEYS},
}
LEGACY_PATHS = {
    "max_input_length": "running.max_input_length",
    "token_count_estimate_divisor": "running.context_compact.token_count_estimate_divisor",
    "compact_enabled": "running.context_compact.context_compact_enabled",
    "compact_threshold_ratio": "running.context_compact.memory_compact_ratio",
    "reserve_threshold_ratio": "running.context_compact.memory_reserve_ratio",
    "compact_with_thinking_block": "running.context_compact.compact_with_thinking_block",
    "pruning_enabled": "running.tool_result_compact.enabled",
    "pruning_recent_n": "running.tool_result_compact.recent_n",
    "pruning_old_msg_max_bytes": "running.tool_result_compact.old_max_bytes",
    "pruning_recent_msg_max_bytes": "running.tool_result_compact.recent_max_bytes",
    "offload_retention_days": "running.tool_result_compact.retention_days",
    "summarize_when_compact": "running.memory_summary.memory_summary_enabled",
    "dream_cron": "running.memory_summary.dream_cron",
    "recursive_file_watcher": "running.memory_summary.recursive_file_watcher",
    **{f"embedding.{k}": f"running.embedding_config.{k}" for k in _EMBEDDING_KEYS},
}
# Q@PRE defaults that differ from Q@HEAD's: ratio 0.75, ReMe's tool_result/ dir, no exempt tool names.
LEGACY_DEFAULTS = {"compact_threshold_ratio": 0.75, "tool_results_cache": "tool_result", "exempt_tool_names": []}


def _target(settings: Settings, name: str) -> tuple[Any, str]:
    return (settings.embedding, name.split(".", 1)[1]) if name.startswith("embedding.") else (settings, name)


def _accepts(default: Any, value: Any) -> bool:
    """A value is taken only when it has the default's type (ints are fine for float settings); else ignored."""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if isinstance(default, list):  # the list settings are lists of names: every item must be a string
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return isinstance(value, type(default))


# Values QwenPaw's own config validation would reject (and that would break our arithmetic: a divisor of 0, a NaN
# ratio) are ignored like wrongly typed ones, so the default applies. Bounds are the union of both generations'.
_IN_RANGE = {
    "max_input_length": lambda v: v >= 1,
    "token_count_estimate_divisor": lambda v: 0 < v <= 100,
    "compact_threshold_ratio": lambda v: 0 < v <= 1,
    "reserve_threshold_ratio": lambda v: 0 <= v < 1,
    "pruning_recent_n": lambda v: v >= 1,
    "pruning_old_msg_max_bytes": lambda v: v >= 1,
    "pruning_recent_msg_max_bytes": lambda v: v >= 1,
    "offload_retention_days": lambda v: v >= 0,
}


def _in_range(name: str, value: Any) -> bool:
    check = _IN_RANGE.get(name)
    return check is None or bool(check(value))  # NaN fails every comparison, so it is ignored too


def _apply_paths(settings: Settings, doc: dict[str, Any], paths: dict[str, str], label: str) -> None:
    for name, dotted in paths.items():
        value = _dig(doc, *dotted.split("."))
        target, attr = _target(settings, name)
        if value is not None and _accepts(getattr(target, attr), value) and _in_range(name, value):
            setattr(target, attr, value)
            settings.sources[name] = f"{label} {dotted}"


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
        if not is_file(path):
            continue
        try:
            doc = read_json_file(path)
        except Exception:  # a broken provider file must not stop us; QwenPaw falls back to 131072 too
            continue
        for key in ("models", "extra_models"):
            for info in (doc.get(key) or []) if isinstance(doc, dict) else []:
                if isinstance(info, dict) and info.get("id") == model and isinstance(info.get("max_input_length"), int) \
                        and not isinstance(info["max_input_length"], bool) and info["max_input_length"] >= 1:
                    return info["max_input_length"], str(path)
    return None


def load_settings(ws: Workspace, env: Mapping[str, str] | None = None) -> Settings:
    """Read agent.json (+ root config.json) into Settings. Raises ConfigError on malformed JSON."""
    env = os.environ if env is None else env
    settings = Settings()
    agent_json = ws.path / "agent.json"
    doc: dict[str, Any] = {}
    if agent_json.is_file():
        loaded = read_json_file(agent_json)
        doc = loaded if isinstance(loaded, dict) else {}
        settings.files["agent.json"] = str(agent_json)
    running = dict_at(doc, "running")
    if any(k in running for k in _CURRENT_KEYS) or not any(k in running for k in _LEGACY_KEYS):
        settings.config_layout = CURRENT
        _apply_paths(settings, doc, CURRENT_PATHS, "agent.json")
    else:
        settings.config_layout = LEGACY
        for name, value in LEGACY_DEFAULTS.items():
            setattr(settings, name, value)
        _apply_paths(settings, doc, LEGACY_PATHS, "agent.json")
    settings.sources["config_layout"] = "agent.json keys" if running else "default"
    _apply_paths(settings, doc, {"language": "language"}, "agent.json")
    active = dict_at(doc, "active_model")
    if active.get("provider_id") and active.get("model"):
        settings.active_provider, settings.active_model = str(active["provider_id"]), str(active["model"])
        settings.sources["active_provider"] = settings.sources["active_model"] = "agent.json active_model"
        if settings.config_layout == CURRENT:
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
    redact.register(settings.embedding.api_key)  # from agent.json or $EMBEDDING_API_KEY: never printed from here on
    return settings


def timezone_problem(settings: Settings) -> str | None:
    """A warning when config.json names a timezone this machine does not know (dates then use $TZ / local time)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not settings.user_timezone:
        return None
    try:
        ZoneInfo(settings.user_timezone)
    except (ZoneInfoNotFoundError, ValueError):
        return (f"config.json user_timezone {settings.user_timezone!r} is not a known timezone; "
                "using $TZ or the local timezone instead")
    return None


def user_tz(settings: Settings, env: Mapping[str, str] | None = None) -> tzinfo | None:
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
