"""agent.json → typed settings for both QwenPaw generations, with sources; malformed files are one-line errors."""

import json
import os

import pytest

from helpers import invoke
from qwenmem.core.errors import ConfigError
from qwenmem.core.settings import load_settings
from qwenmem.core.settings.gen1 import CURRENT, LEGACY
from qwenmem.core.settings.gen2 import load_gen2_settings
from qwenmem.core.workspace import discover_workspace


def ws_with(tmp_path, agent: dict | str | None, root_config: dict | None = None):
    ws = tmp_path / "ws"
    (ws / "sessions").mkdir(parents=True)
    if agent is not None:
        (ws / "agent.json").write_text(agent if isinstance(agent, str) else json.dumps(agent))
    if root_config is not None:
        (ws / "config.json").write_text(json.dumps(root_config))
    return discover_workspace(ws, env={})


def test_defaults_without_agent_json_are_qwenpaw_head_defaults(tmp_path):
    s = load_settings(ws_with(tmp_path, None), env={})
    assert s.config_layout == CURRENT
    assert (s.max_input_length, s.compact_threshold_ratio, s.reserve_threshold_ratio) == (131072, 0.8, 0.1)
    assert s.compact_threshold == 104857 and s.reserve_tokens == 13107
    assert (s.pruning_recent_n, s.pruning_old_msg_max_bytes, s.pruning_recent_msg_max_bytes) == (2, 3000, 50000)
    assert s.tool_results_cache == "tool_results" and s.exempt_tool_names == ["chat_with_agent"]
    assert s.source_of("compact_threshold_ratio") == "default"


def test_current_generation_keys(tmp_path):
    agent = {"language": "en", "running": {
        "light_context_config": {"token_count_estimate_divisor": 3,
                                 "context_compact_config": {"compact_threshold_ratio": 0.6, "reserve_threshold_ratio": 0.2},
                                 "tool_result_pruning_config": {"pruning_old_msg_max_bytes": 1000, "unknown_knob": 1}},
        "reme_light_memory_config": {"dream_cron": "", "embedding_model_config": {"model_name": "bge-m3"}}},
        "future_top_level": {"x": 1}}
    s = load_settings(ws_with(tmp_path, agent), env={"EMBEDDING_BASE_URL": "http://127.0.0.1:1/v1"})
    assert s.config_layout == CURRENT
    assert (s.token_count_estimate_divisor, s.compact_threshold_ratio, s.reserve_threshold_ratio) == (3, 0.6, 0.2)
    assert s.pruning_old_msg_max_bytes == 1000 and s.dream_cron == "" and s.language == "en"
    assert s.embedding.model_name == "bge-m3" and s.embedding.base_url == "http://127.0.0.1:1/v1"
    assert s.source_of("embedding.base_url") == "$EMBEDDING_BASE_URL"
    assert "context_compact_config.compact_threshold_ratio" in s.source_of("compact_threshold_ratio")


def test_legacy_generation_keys(tmp_path):
    agent = {"running": {"max_input_length": 65536,
                         "context_compact": {"memory_compact_ratio": 0.5, "memory_reserve_ratio": 0.2},
                         "tool_result_compact": {"recent_n": 3, "old_max_bytes": 2000}}}
    s = load_settings(ws_with(tmp_path, agent), env={})
    assert s.config_layout == LEGACY
    assert s.max_input_length == 65536 and s.compact_threshold == 32768 and s.reserve_tokens == 13107
    assert (s.pruning_recent_n, s.pruning_old_msg_max_bytes) == (3, 2000)
    assert s.tool_results_cache == "tool_result"


def test_legacy_defaults_use_ratio_075(tmp_path):
    s = load_settings(ws_with(tmp_path, {"running": {"max_input_length": 131072}}), env={})
    assert s.config_layout == LEGACY and s.compact_threshold == 98304


def test_wrong_types_are_ignored_not_fatal(tmp_path):
    agent = {"running": {"light_context_config": {"token_count_estimate_divisor": "four",
                                                  "context_compact_config": {"enabled": "yes"}}}}
    s = load_settings(ws_with(tmp_path, agent), env={})
    assert s.token_count_estimate_divisor == 4 and s.compact_enabled is True


def test_user_timezone_from_root_config(tmp_path):
    s = load_settings(ws_with(tmp_path, {}, {"user_timezone": "Asia/Shanghai"}), env={})
    assert s.user_timezone == "Asia/Shanghai"


def test_malformed_agent_json_raises_config_error_with_position(tmp_path):
    ws = ws_with(tmp_path, '{"running": {\n  "max_input_length": 12,\n  oops\n}}')
    with pytest.raises(ConfigError) as info:
        load_settings(ws, env={})
    assert "agent.json:3:" in str(info.value)


def test_malformed_agent_json_is_one_line_exit_3(tmp_path):
    ws = ws_with(tmp_path, '{"running": [1, 2,')
    run = invoke("-w", str(ws.path), "info")
    assert run.code == 3
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "agent.json:1:" in lines[0] and "Traceback" not in run.stderr


def test_a_legacy_default_list_is_each_loads_own(tmp_path):
    ws = ws_with(tmp_path, {"running": {"max_input_length": 131072}})
    first = load_settings(ws, env={})
    first.exempt_tool_names.append("mutated by a caller")
    assert load_settings(ws, env={}).exempt_tool_names == []  # the legacy default, not the first load's list


@pytest.mark.parametrize("kind", ["fifo", "directory", "dangling link"])
@pytest.mark.parametrize("name", ["agent.json", "config.json"])
def test_a_config_file_that_is_there_but_unreadable_is_an_error_not_the_defaults(tmp_path, kind, name):
    """Before, `is_file()` let a FIFO, a directory or a dangling link named agent.json read as no file at all, so
    every command ran silently on QwenPaw's default thresholds."""
    ws = ws_with(tmp_path, None)
    target = ws.path / name
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    else:
        target.symlink_to(ws.path / "gone.json")  # inside: a link out is refused as such (UnsafeLinkError)
    with pytest.raises(ConfigError, match=name):
        load_settings(ws, env={})
    if name == "agent.json":
        with pytest.raises(ConfigError, match=name):
            load_gen2_settings(ws, env={})
    doctor = invoke("-w", str(ws.path), "doctor")
    assert doctor.code == 1 and name in doctor.stdout + doctor.stderr


def test_no_config_file_at_all_is_still_the_defaults(tmp_path):
    ws = ws_with(tmp_path, None)
    assert load_settings(ws, env={}).source_of("max_input_length") == "default"
    assert load_gen2_settings(ws, env={}).strategy_source != "agent.json running.light_context_config.strategy"
