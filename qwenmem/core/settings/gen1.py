"""What only QwenPaw 1.x reads from agent.json (spec qwenpaw-workspace.md §1.5): its two key layouts, the legacy
defaults, the model limit from the provider JSON, and the EMBEDDING_* fallbacks.

  * current (Q@HEAD): running.light_context_config…, running.reme_light_memory_config…, the model limit from the
    provider JSON of the active model (2.x kept these paths for the values it kept: settings.gen2 adjusts the rest);
  * legacy (Q@PRE): running.max_input_length, running.context_compact.memory_compact_ratio, tool_result_compact,
    memory_summary, embedding_config.
Pure data and look-ups: the neutral loader (qwenmem.core.settings) applies them, so nothing here needs Settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal, Mapping

from qwenmem.core.workspace import Workspace, is_file, read_json_file

ConfigLayout = Literal["current", "legacy"]  # which agent.json key layout holds the 1.x settings
CURRENT: Final = "current"
LEGACY: Final = "legacy"

_LEGACY_KEYS = ("context_compact", "tool_result_compact", "memory_summary", "embedding_config", "max_input_length")
_CURRENT_KEYS = ("light_context_config", "reme_light_memory_config", "context_manager_backend")

_LC = "running.light_context_config"
_CC = f"{_LC}.context_compact_config"
_TP = f"{_LC}.tool_result_pruning_config"
_RM = "running.reme_light_memory_config"
_EMBEDDING_KEYS = ("backend", "api_key", "base_url", "model_name", "dimensions", "use_dimensions", "max_batch_size")

# setting → its JSON path in agent.json, per layout (spec §1.5)
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
LEGACY_DEFAULTS: dict[str, Any] = {"compact_threshold_ratio": 0.75, "tool_results_cache": "tool_result",
                                   "exempt_tool_names": []}
LAYOUT_PATHS: dict[ConfigLayout, dict[str, str]] = {CURRENT: CURRENT_PATHS, LEGACY: LEGACY_PATHS}
LAYOUT_DEFAULTS: dict[ConfigLayout, dict[str, Any]] = {CURRENT: {}, LEGACY: LEGACY_DEFAULTS}

# QwenPaw 1.x's get_embedding_config: an empty api_key/base_url/model_name falls back to these (2.x dropped them)
EMBEDDING_ENV = (("api_key", "EMBEDDING_API_KEY"), ("base_url", "EMBEDDING_BASE_URL"),
                 ("model_name", "EMBEDDING_MODEL_NAME"))


def config_layout(running: Mapping[str, Any]) -> ConfigLayout:
    """The layout of agent.json's `running`: legacy only when it has legacy keys and none of the current ones."""
    if any(k in running for k in _CURRENT_KEYS) or not any(k in running for k in _LEGACY_KEYS):
        return CURRENT
    return LEGACY


def model_limit_from_providers(ws: Workspace, provider: str, model: str,
                               env: Mapping[str, str]) -> tuple[int, str] | None:
    """Q@HEAD's get_model_max_input_length: the active model's max_input_length in the provider JSON of the secret
    dir, with the file it came from; None when no provider file names it."""
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
