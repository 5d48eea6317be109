"""agent.json with the 2.x keys (spec qwenpaw2-workspace.md §1.4, `config/config.py @2.2.2.post1`).

Only missing keys are added, with QwenPaw 2.x's defaults; every key already there (1.x-only ones included, which
2.x ignores) stays as it is. Two values are the upgrade's, not defaults: the strategy chosen, and
`scroll_config.history_retention_days` when absent: QwenPaw's default 30 makes its first close purge every imported
row older than 30 days (spec §3.5, §8 item 4), the very record the upgrade keeps, so it is 0 (keep forever) when the
record holds such messages. QwenPaw's value range checks that would refuse the file are reported, not changed.
"""

from __future__ import annotations

import copy
import json
from typing import Any

LIGHT_CONTEXT_DEFAULTS: dict[str, Any] = {
    "dialog_path": "dialog",
    "token_count_estimate_divisor": 4,
    "context_compact_config": {"enabled": True, "compact_threshold_ratio": 0.8, "reserve_threshold_ratio": 0.1},
    "tool_result_pruning_config": {"enabled": True, "pruning_recent_n": 2, "pruning_old_msg_max_bytes": 3000,
                                   "pruning_recent_msg_max_bytes": 50000, "offload_retention_days": 30,
                                   "tool_results_cache": "tool_results", "exempt_file_extensions": [".md"],
                                   "exempt_tool_names": ["chat_with_agent"]},
    "scroll_config": {"db_filename": "history.db", "history_retention_days": 30, "repl_timeout_s": 300,
                      "allow_unsandboxed": False, "offload_dialog": False},
    "visual_compact_config": {"enabled": False, "effort": "low"},
}
REME_DEFAULTS: dict[str, Any] = {
    "metadata_dir": "mem_metadata", "session_dir": "mem_session", "mem_session_dir": "mem_agent",
    "resource_dir": "resource", "daily_dir": "memory", "digest_dir": "digest", "auto_memory_interval": 5,
    "dream_cron_enabled": True, "dream_cron": "0 23 * * *", "memory_search_enabled": True,
}
KEEP_FOREVER = 0


def _fill(target: dict[str, Any], defaults: dict[str, Any], path: str, added: list[str]) -> None:
    for key, value in defaults.items():
        if key not in target:
            target[key] = copy.deepcopy(value)
            added.append(f"{path}.{key}")
        elif isinstance(value, dict) and isinstance(target[key], dict):
            _fill(target[key], value, f"{path}.{key}", added)


def upgraded(doc: dict[str, Any], strategy: str, retention_days: int) -> tuple[dict[str, Any], list[str], list[str]]:
    """(the new document, keys added, warnings). `doc` is not changed."""
    out = copy.deepcopy(doc)
    added: list[str] = []
    warnings: list[str] = []
    running = out.setdefault("running", {})
    if not isinstance(running, dict):
        return doc, [], ["agent.json `running` is not an object: left as it is (QwenPaw 2.x refuses it)"]
    light = running.setdefault("light_context_config", {})
    if not isinstance(light, dict):
        return doc, [], ["agent.json `running.light_context_config` is not an object: left as it is"]
    if light.get("strategy") != strategy:
        if "strategy" in light:
            warnings.append(f"agent.json strategy {light['strategy']!r} becomes {strategy!r}")
        light["strategy"] = strategy
        added.append("running.light_context_config.strategy")
    scroll = light.setdefault("scroll_config", {})
    if isinstance(scroll, dict) and "history_retention_days" not in scroll:
        scroll["history_retention_days"] = retention_days
        added.append("running.light_context_config.scroll_config.history_retention_days")
    _fill(light, LIGHT_CONTEXT_DEFAULTS, "running.light_context_config", added)
    reme = running.setdefault("reme_light_memory_config", {})
    if isinstance(reme, dict):
        _fill(reme, REME_DEFAULTS, "running.reme_light_memory_config", added)
    compact = light.get("context_compact_config")
    if isinstance(compact, dict) and compact.get("reserve_threshold_ratio") == 0:
        warnings.append("agent.json reserve_threshold_ratio is 0, which QwenPaw 2.x refuses (it must be > 0); "
                        "left as it is")
    return out, added, warnings


def encode(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
