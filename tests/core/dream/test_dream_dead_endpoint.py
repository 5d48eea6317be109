"""issue 24 item 11: a deterministic dream must not fail when the index's embedding endpoint is down, hangs or
answers junk (a real OpenAI-compatible server on 127.0.0.1, tests/llm_server.py): one warning line, the
near-duplicate pass skipped, exit 0, and no wait for the client's 60 s timeout and its retry. Only `--mode llm` fails
with 5 (LLM_FAILED) when its endpoint is down."""

from __future__ import annotations

import json

import pytest

from helpers import run_cli
from llm_server import ScriptedLLMServer

SKIPPED = "near-duplicate detection skipped"


def _point_agent_json_at(ws_path, base_url: str) -> None:
    cfg_path = ws_path / "agent.json"
    cfg = json.loads(cfg_path.read_text()) if cfg_path.exists() else {}
    cfg.setdefault("running", {}).setdefault("reme_light_memory_config", {})["embedding_model_config"] = {
        "base_url": base_url, "model_name": "text-embedding-v4", "api_key": "sk-test"}
    cfg_path.write_text(json.dumps(cfg))


@pytest.fixture
def indexed(sample_ws):
    """The sample workspace indexed with vectors from a live endpoint (the server is still running)."""
    server = ScriptedLLMServer()
    with server:
        _point_agent_json_at(sample_ws, server.base_url)
        built = run_cli("-w", str(sample_ws), "reindex")
        assert built.code == 0, built.stderr
        yield sample_ws, server


def _dream(ws, *extra):
    # the timeout is a bound, not a speed target: before the fix a hanging endpoint held the dream for 2 x 60 s
    return run_cli("-w", str(ws), "dream", "--dry-run", "--mode", "deterministic", *extra, timeout=45)


def _assert_dream_went_on(run, reason: str) -> None:
    assert run.code == 0, (run.code, run.stderr)
    lines = [ln for ln in run.stderr.splitlines() if SKIPPED in ln]
    assert len(lines) == 1 and reason in lines[0], run.stderr
    assert "Traceback" not in run.stderr


def test_endpoint_down_after_reindex(indexed):
    ws, server = indexed
    server.__exit__(None, None, None)  # the port now refuses connections, as a crashed embedding server's does
    _assert_dream_went_on(_dream(ws), "failed")
    run = _dream(ws, "--json")
    assert run.code == 0 and "Traceback" not in run.stderr, run.stderr
    doc = run.json()
    assert doc["result"]["status"] in ("dry-run", "unchanged") and doc["result"]["embedding_model"] is None
    assert len([w for w in doc["warnings"] if SKIPPED in w]) == 1, doc["warnings"]


def test_endpoint_that_hangs(indexed):
    ws, server = indexed
    server.embeddings_step = {"delay": 120}
    _assert_dream_went_on(_dream(ws), "timed out")


@pytest.mark.parametrize("step", [{"raw": b"<html>gateway</html>"}, {"raw": b'{"data": "nope"}'},
                                  {"raw": b'{"data": [{"index": 0, "embedding": ["x"]}]}'}, {"status": 500}],
                         ids=["html", "data-not-a-list", "vector-of-strings", "http-500"])
def test_endpoint_that_answers_junk(indexed, step):
    ws, server = indexed
    server.embeddings_step = step
    _assert_dream_went_on(_dream(ws), "")


def test_a_live_endpoint_is_still_used(indexed):
    ws, server = indexed
    before = len(server.requests)
    run = _dream(ws, "--json")
    assert run.code == 0 and SKIPPED not in run.stderr, run.stderr
    assert run.json()["result"]["embedding_model"].startswith("openai:")
    assert len(server.requests) > before + 1  # the probe, then the near-duplicate pass itself


def test_llm_mode_with_its_endpoint_down_still_fails_with_5(sample_ws):
    server = ScriptedLLMServer()
    with server:
        url = server.base_url
    run = run_cli("-w", str(sample_ws), "dream", "--dry-run", "--mode", "llm", "--llm-base-url", url,
                  "--llm-model", "m", "--llm-api-key", "k", "--llm-retries", "0", "--llm-timeout", "2", "--json")
    assert run.code == 5, (run.code, run.stderr)
    assert "Traceback" not in run.stderr
