"""2.x settings: strategy, scroll settings, retention, the provider's effective context size, secrets never shown."""

from __future__ import annotations

import json

import pytest

from qwenpaw2_support import builder, copy_corpus, needs_gen2_corpus
from qwenmem.core.providers import DEFAULT_CONTEXT_WINDOW, effective_context_size, known_context_size
from qwenmem.core.settings.gen2 import load_gen2_settings
from qwenmem.core.workspace import discover_workspace


@needs_gen2_corpus
def test_corpus_settings(tmp_path):
    ws = discover_workspace(copy_corpus(tmp_path), env={}, home=tmp_path)
    s = load_gen2_settings(ws, env={})
    assert s.strategy == "scroll" and s.history_retention_days == 30
    assert s.history_db == ws.path / "history.db"
    assert s.provider.context_size == 9000  # user-configured on the custom provider; its JSON caches 131072
    assert s.provider.api_key.startswith("encrypted")
    dumped = json.dumps(s.to_json())
    token = json.loads((ws.root.parent / "root.secret/providers/custom/stubllm.json").read_text())["api_key"]
    assert token.startswith("ENC:") and token[4:] not in dumped and "gAAAA" not in dumped
    assert s.embedding_api_key == "****"  # QwenPaw's mask would show a 4-character key whole


def test_strategy_and_scroll_settings(tmp_path):
    builder.agent_json(tmp_path, strategy="native", retention=0, embedding_key="sk-1234567890")
    ws = discover_workspace(tmp_path, env={}, home=tmp_path)
    s = load_gen2_settings(ws, env={})
    assert s.strategy == "native" and s.history_retention_days == 0
    assert s.embedding_api_key == "sk-12" + "*" * 8 and "67890" not in json.dumps(s.to_json())


def test_defaults_and_bad_values(tmp_path):
    builder.agent_json(tmp_path, strategy=None, extra_running={})
    doc = json.loads((tmp_path / "agent.json").read_text())
    doc["running"]["light_context_config"]["scroll_config"] = {"history_retention_days": -3, "db_filename": 7}
    (tmp_path / "agent.json").write_text(json.dumps(doc))
    s = load_gen2_settings(discover_workspace(tmp_path, env={}, home=tmp_path), env={})
    assert s.strategy == "scroll" and s.strategy_source == "default"
    assert s.history_retention_days == 30 and s.scroll["db_filename"] == "history.db"


def test_absolute_db_filename(tmp_path):
    builder.agent_json(tmp_path)
    doc = json.loads((tmp_path / "agent.json").read_text())
    doc["running"]["light_context_config"]["scroll_config"] = {"db_filename": str(tmp_path / "elsewhere" / "h.db")}
    (tmp_path / "agent.json").write_text(json.dumps(doc))
    s = load_gen2_settings(discover_workspace(tmp_path, env={}, home=tmp_path), env={})
    assert s.history_db == tmp_path / "elsewhere" / "h.db"


@pytest.mark.parametrize("model,expected", [("claude-sonnet-4.5", 200_000), ("anthropic/claude-2.1", 100_000),
                                            ("qwen-plus-latest", 1_000_000), ("qwen-plus", 131_072),
                                            ("openai/o3-mini", 200_000), ("gpt-4o3x", None), ("", None)])
def test_catalog_longest_pattern_at_word_boundary(model, expected):
    assert known_context_size(model) == expected


def test_precedence():
    assert effective_context_size("claude-x", {"max_input_length": 5000, "max_input_length_configured": True})[0] == 5000
    assert effective_context_size("claude-x", {"max_input_length_auto_detected": 64000})[0] == 64000
    assert effective_context_size("claude-x", {"max_input_length": 300000})[0] == 300000
    assert effective_context_size("claude-x", {"max_input_length": DEFAULT_CONTEXT_WINDOW})[0] == 200_000
    assert effective_context_size("claude-x", {}, local=True)[0] == DEFAULT_CONTEXT_WINDOW
    assert effective_context_size("unknown", None) == (DEFAULT_CONTEXT_WINDOW, "QwenPaw default (128k)")
    assert effective_context_size("claude-x", {"input_token_limit": 1000})[0] == 1000


def test_provider_from_secret_dir(tmp_path):
    secret = tmp_path / "root.secret" / "providers"
    (secret / "builtin").mkdir(parents=True)
    (secret / "builtin" / "anthropic.json").write_text(json.dumps({
        "id": "anthropic", "api_key": "ENC:gAAAAAsecret", "is_local": False,
        "models": [{"id": "claude-opus-4", "max_input_length": 131072, "max_input_length_configured": False}]}))
    (secret / "active_model.json").write_text(json.dumps({"provider_id": "anthropic", "model": "claude-opus-4"}))
    ws_dir = tmp_path / "root"
    ws_dir.mkdir()
    builder.agent_json(ws_dir)
    s = load_gen2_settings(discover_workspace(ws_dir, env={}, home=tmp_path), env={})
    assert (s.provider.context_size, s.provider.context_source) == (200_000, "QwenPaw's context-window catalog")
    assert "gAAAAAsecret" not in json.dumps(s.to_json())
