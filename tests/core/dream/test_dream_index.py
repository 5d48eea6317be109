"""With a search index: a dream uses its embedder for near-duplicates and refreshes the index afterwards."""

from __future__ import annotations

import pytest

from helpers import invoke


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_dream_uses_the_index_embedder_and_refreshes_the_index(sample_ws):
    from qwenmem.core import index
    from qwenmem.core.settings import load_settings
    from qwenmem.core.workspace import discover_workspace

    ws = discover_workspace(sample_ws)
    index.reindex(ws, load_settings(ws))
    assert index.index_exists(ws)
    run = invoke("dream", "-w", str(sample_ws), "--mode", "deterministic", "--date", "2026-11-26", "--json")
    assert run.code == 0, run.stderr
    result = run.json()["result"]
    assert result["status"] == "changed"
    assert result["embedding_model"], "the index's embedder was used for near-duplicates"
    assert result["index_refreshed"] is True


def test_without_an_index_nothing_is_refreshed(sample_ws):
    run = invoke("dream", "-w", str(sample_ws), "--mode", "deterministic", "--date", "2026-11-26", "--json")
    result = run.json()["result"]
    assert result["index_refreshed"] is None and result["embedding_model"] is None
