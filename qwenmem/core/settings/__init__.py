"""agent.json (and the root config.json) as typed settings, with QwenPaw's defaults: the generation-neutral core.

`Settings` holds the values both generations read; every value remembers where it came from so `qwenmem info` can
show it. Unknown keys are ignored, as QwenPaw does, and so are values of the wrong type or out of QwenPaw's range.
Where a value lives in agent.json is per generation: gen1.py has 1.x's two key layouts (which 2.x kept for the
values it kept), gen2.py what 2.x adds and changes on top of these values.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field, fields
from datetime import tzinfo
from typing import Any, Mapping

from qwenmem.core import redact
from qwenmem.core.redact import mask_secret
from qwenmem.core.settings.gen1 import (CURRENT, EMBEDDING_ENV, LAYOUT_DEFAULTS, LAYOUT_PATHS, ConfigLayout,
                                        config_layout, model_limit_from_providers)
from qwenmem.core.workspace import Workspace, dict_at, read_config_if_present

DEFAULT_MAX_INPUT_LENGTH = 131072


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
    """1.x's EMBEDDING_* fallbacks for an empty api_key/base_url/model_name (applied to every workspace)."""
    for attr, var in EMBEDDING_ENV:
        if not getattr(settings.embedding, attr) and env.get(var):
            setattr(settings.embedding, attr, env[var])
            settings.sources[f"embedding.{attr}"] = f"${var}"


def _read_agent_json(ws: Workspace, settings: Settings) -> dict[str, Any]:
    agent_json = ws.path / "agent.json"
    loaded = read_config_if_present(agent_json)
    if loaded is None:
        return {}
    settings.files["agent.json"] = str(agent_json)
    return loaded if isinstance(loaded, dict) else {}


def _apply_layout(settings: Settings, doc: dict[str, Any]) -> None:
    running = dict_at(doc, "running")
    settings.config_layout = config_layout(running)
    for name, value in LAYOUT_DEFAULTS[settings.config_layout].items():
        setattr(settings, name, copy.copy(value))  # a list default must not be the module's own list
    _apply_paths(settings, doc, LAYOUT_PATHS[settings.config_layout], "agent.json")
    settings.sources["config_layout"] = "agent.json keys" if running else "default"


def _apply_active_model(settings: Settings, ws: Workspace, doc: dict[str, Any], env: Mapping[str, str]) -> None:
    active = dict_at(doc, "active_model")
    if not (active.get("provider_id") and active.get("model")):
        return
    settings.active_provider, settings.active_model = str(active["provider_id"]), str(active["model"])
    settings.sources["active_provider"] = settings.sources["active_model"] = "agent.json active_model"
    if settings.config_layout == CURRENT:
        found = model_limit_from_providers(ws, settings.active_provider, settings.active_model, env)
        if found:
            settings.max_input_length, where = found
            settings.sources["max_input_length"] = where


def _apply_root_config(settings: Settings, ws: Workspace) -> None:
    root_config = ws.root / "config.json"
    cfg = read_config_if_present(root_config)
    if cfg is None:
        return
    settings.files["config.json"] = str(root_config)
    if isinstance(cfg, dict) and isinstance(cfg.get("user_timezone"), str) and cfg["user_timezone"]:
        settings.user_timezone = cfg["user_timezone"]
        settings.sources["user_timezone"] = "config.json user_timezone"


def load_settings(ws: Workspace, env: Mapping[str, str] | None = None) -> Settings:
    """Read agent.json (+ root config.json) into Settings. Raises ConfigError on malformed JSON."""
    env = os.environ if env is None else env
    settings = Settings()
    doc = _read_agent_json(ws, settings)
    _apply_layout(settings, doc)
    _apply_paths(settings, doc, {"language": "language"}, "agent.json")
    _apply_active_model(settings, ws, doc, env)
    _apply_embedding_env(settings, env)
    _apply_root_config(settings, ws)
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
