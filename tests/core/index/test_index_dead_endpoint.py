"""issue 10 item 4: a dead embedding endpoint must not fail reindex or search (real HTTP server, started, stopped)."""

from __future__ import annotations

import json

import pytest

from helpers import run_cli
from llm_server import ScriptedLLMServer

from qwenmem.core.index import store


def _point_agent_json_at(ws_path, base_url: str) -> None:
    """QwenPaw's own setting (agent.json running.embedding_model_config...), not qwenmem's environment."""
    cfg_path = ws_path / "agent.json"
    cfg = json.loads(cfg_path.read_text()) if cfg_path.exists() else {}
    cfg.setdefault("running", {}).setdefault("reme_light_memory_config", {})["embedding_model_config"] = {
        "base_url": base_url, "model_name": "text-embedding-v4", "api_key": "sk-test"}
    cfg_path.write_text(json.dumps(cfg))


def _manifest(ws_path):
    gen = (ws_path / ".qwenmem" / "index" / "CURRENT").read_text().strip()
    return store.Manifest.load(ws_path / ".qwenmem" / "index" / gen)


@pytest.mark.slow  # two full builds against a real server: ~7 s
def test_dead_endpoint_reindex_keeps_full_text_search_answers_and_a_later_reindex_fills_in(sample_ws):
    server = ScriptedLLMServer()
    with server:
        base_url, port = server.base_url, int(server.base_url.rsplit(":", 1)[1].split("/")[0])
    # the server is stopped: its port refuses connections, as a crashed local embedding server does
    _point_agent_json_at(sample_ws, base_url)

    first = run_cli("reindex", "-w", str(sample_ws))
    assert first.code == 1, (first.stdout, first.stderr)  # PROBLEMS: partial success
    failure_lines = [ln for ln in first.stderr.splitlines() if "no vectors yet" in ln]
    assert len(failure_lines) == 1 and base_url in failure_lines[0], first.stderr
    assert "Traceback" not in first.stderr
    manifest = _manifest(sample_ws)
    assert manifest.vectors_missing > 0 and manifest.embedder["backend"] == "openai"

    found = run_cli("search", "ECONNREFUSED", "-w", str(sample_ws), "--json")
    assert found.code == 0, found.stderr
    doc = found.json()
    assert doc["result"]["hits"][0]["path"] == "memory/2026-11-27.md"
    # issue 29: the notice names the endpoint and its error (it said "not embedded yet ... run `qwenmem reindex`",
    # which then failed on the same endpoint)
    down = [w for w in doc["warnings"] if base_url in w and "unreachable" in w and "full text meanwhile" in w]
    assert len(down) == 1, doc["warnings"]
    assert not any("not embedded yet" in w for w in doc["warnings"]), doc["warnings"]

    as_json = run_cli("reindex", "-w", str(sample_ws), "--json")  # still down: still partial, nothing lost
    assert as_json.code == 1 and as_json.json()["status"] == "problems"
    assert as_json.json()["result"]["chunks_without_vectors"] == manifest.vectors_missing

    with ScriptedLLMServer(port=port) as back:  # the endpoint answers again, at the same address
        filled = run_cli("reindex", "-w", str(sample_ws), "--json")
        assert filled.code == 0, filled.stderr
        result = filled.json()["result"]
        assert result["chunks_without_vectors"] == 0 and result["pieces_embedded"] > 0
        assert _manifest(sample_ws).vectors_missing == 0
        assert any(r["path"].endswith("/embeddings") for r in back.requests)
        hybrid = run_cli("search", "ECONNREFUSED", "-w", str(sample_ws), "--json")
        assert hybrid.code == 0 and hybrid.json()["result"]["embedder"].startswith("openai:")
        assert hybrid.json()["result"]["hits"][0]["vector_score"] is not None
        again = run_cli("reindex", "-w", str(sample_ws), "--json")
        assert again.code == 0 and again.json()["result"]["up_to_date"]


def test_endpoint_down_after_a_full_build_adds_new_files_to_full_text(sample_ws):
    with ScriptedLLMServer() as server:
        _point_agent_json_at(sample_ws, server.base_url)
        assert run_cli("reindex", "-w", str(sample_ws)).code == 0
    (sample_ws / "memory" / "2026-11-29.md").write_text("- the walrus sanctuary opens in March\n")
    partial = run_cli("reindex", "-w", str(sample_ws), "--json")
    assert partial.code == 1 and partial.json()["result"]["chunks_without_vectors"] == 1
    hits = run_cli("search", "walrus", "-w", str(sample_ws), "--json", "--no-reindex")
    assert hits.code == 0 and [h["path"] for h in hits.json()["result"]["hits"]][0] == "memory/2026-11-29.md"


def test_search_names_the_endpoint_that_is_down_or_answers_junk_and_answers_from_full_text(sample_ws):
    """issue 29: an index with vectors, then the endpoint stops (connection refused) or answers a 200 that is not an
    embeddings reply: search says which endpoint failed and why, and answers from full text meanwhile."""
    server = ScriptedLLMServer()
    with server:
        _point_agent_json_at(sample_ws, server.base_url)
        assert run_cli("reindex", "-w", str(sample_ws)).code == 0
        server.embeddings_step = {"raw": b"<html>502 Bad Gateway</html>"}
        junk = run_cli("search", "ECONNREFUSED", "-w", str(sample_ws), "--json")
    assert junk.code == 0, junk.stderr
    assert junk.json()["result"]["hits"][0]["path"] == "memory/2026-11-27.md"
    failed = [w for w in junk.json()["warnings"] if server.base_url in w and "failed" in w]
    assert len(failed) == 1 and "full text meanwhile" in failed[0], junk.json()["warnings"]
    down = run_cli("search", "ECONNREFUSED", "-w", str(sample_ws))  # the server is stopped now
    assert down.code == 0 and "memory/2026-11-27.md" in down.stdout, down.stderr
    said = [ln for ln in down.stderr.splitlines() if server.base_url in ln]
    assert len(said) == 1 and "unreachable" in said[0] and "full text meanwhile" in said[0], down.stderr
    assert "reindex" not in said[0] and "Traceback" not in down.stderr  # every chunk has its vectors: nothing to redo
