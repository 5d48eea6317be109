"""QA pass on `qwenmem search` / `qwenmem reindex` (and dream's use of the index): one regression test per defect."""

from __future__ import annotations

import shutil

import pytest

from helpers import invoke
from search_fixtures import open_ws

from qwenmem.core.index import store


def _paths(run) -> list[str]:
    hits = run.json()["result"]["hits"]
    assert run.code == (0 if hits else 1), run.stderr  # like grep: exit 1 when nothing matched
    return [h["path"] for h in hits]


def test_search_since_an_absurdly_long_duration_covers_every_daily_log(sample_ws):
    invoke("reindex", "-w", str(sample_ws), "--embedder", "none")
    everything = invoke("search", "数据库", "-w", str(sample_ws), "--json", "-n", "20", "--since", "2000-01-01")
    for value in ("99999999d", "99999999999999999999w"):
        run = invoke("search", "数据库", "-w", str(sample_ws), "--json", "-n", "20", "--since", value)
        assert "internal error" not in run.stderr
        assert sorted(_paths(run)) == sorted(_paths(everything)) != []
    until = invoke("search", "数据库", "-w", str(sample_ws), "--json", "--until", "99999999d")
    assert _paths(until) == []


def test_since_after_until_is_a_usage_error_not_an_empty_answer(sample_ws):
    invoke("reindex", "-w", str(sample_ws), "--embedder", "none")
    run = invoke("search", "数据库", "-w", str(sample_ws), "--since", "2026-11-28", "--until", "2026-11-26")
    assert run.code == 2 and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and "after --until" in run.stderr
    same_day = invoke("search", "数据库", "-w", str(sample_ws), "--json", "--since", "2026-11-28", "--until", "2026-11-28")
    assert _paths(same_day) == ["memory/2026-11-28.md"]


def test_a_query_with_bytes_that_are_not_utf8_is_searched_not_an_internal_error(sample_ws):
    # `qwenmem search $'pool\xff'`: Python hands the byte over as the lone surrogate \udcff, which no embedding model
    # can encode; it is searched as U+FFFD, like an invalid byte in a memory file.
    assert invoke("reindex", "-w", str(sample_ws)).code == 0
    for mode in ("hybrid", "vector", "text"):
        run = invoke("search", "database pool\udcff", "-w", str(sample_ws), "--json", "--mode", mode)
        assert "internal error" not in run.stderr, (mode, run.stderr)
        assert "memory/2026-11-27.md" in _paths(run), mode
        assert run.json()["result"]["query"] == "database pool\ufffd"


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_dialog_and_session_messages_with_lone_surrogates_are_indexed_for_every_embedder(sample_ws):
    # QwenPaw writes a cut emoji as the JSON escape \ud83d; json.loads turns it into a lone surrogate, which the
    # embedders cannot encode: the whole reindex failed with an internal error and nothing new was indexed.
    (sample_ws / "dialog").mkdir()
    (sample_ws / "dialog" / "2026-11-27.jsonl").write_text(
        '{"role": "user", "content": "a cut emoji \\ud83d next to the zebra enclosure", '
        '"timestamp": "2026-11-27 10:00:00"}\n', encoding="utf-8")
    session = sample_ws / "sessions" / "console" / "default_1764235442381.json"
    session.write_text(session.read_text(encoding="utf-8").replace(
        "Can you check the logs?", "Can you check the logs? \\udc80 okapi", 1), encoding="utf-8")
    for args in ([], ["--model", "all-MiniLM-L6-v2"]):
        run = invoke("reindex", "-w", str(sample_ws), "--sources", "all", "--full", "--json", *args)
        assert run.code == 0, (args, run.stderr)
        zebra = invoke("search", "zebra enclosure", "-w", str(sample_ws), "--json", "--no-reindex")
        assert _paths(zebra)[0] == "dialog/2026-11-27.jsonl", args
        assert "\ufffd" in zebra.json()["result"]["hits"][0]["snippet"]
        okapi = invoke("search", "okapi", "-w", str(sample_ws), "--json", "--no-reindex")
        assert _paths(okapi)[0] == "sessions/console/default_1764235442381.json", args


def test_json_gets_an_error_envelope_for_parser_errors_and_internal_errors_too(sample_ws):
    for args in (["search", "x", "-n", "0"], ["search", "x", "--min-score", "2"], ["search"], ["reindex", "--bogus"]):
        run = invoke(*args, "-w", str(sample_ws), "--json")
        assert run.code == 2, args
        doc = run.json()
        assert doc["status"] == "error" and doc["result"] is None and doc["command"] == args[0], args
        assert doc["errors"][0]["code"] == "usage"
    # an internal error (here: Whoosh reading a truncated segment) still answers with one document
    assert invoke("reindex", "-w", str(sample_ws), "--embedder", "none").code == 0
    gen = store.current_generation(open_ws(sample_ws)[0])
    for seg in (gen / "fulltext").glob("*.seg"):
        seg.write_bytes(seg.read_bytes()[:100])
    run = invoke("search", "database pool", "--mode", "text", "--no-reindex", "-w", str(sample_ws), "--json")
    assert run.code == 1 and "Traceback" not in run.stderr
    doc = run.json()
    assert doc["status"] == "error" and doc["command"] == "search" and doc["errors"][0]["code"] == "internal_error"


def test_an_index_directory_that_is_a_plain_file_is_a_workspace_error_not_an_internal_one(sample_ws):
    (sample_ws / ".qwenmem").mkdir()
    (sample_ws / ".qwenmem" / "index").write_text("not a directory\n")
    for args in (("reindex",), ("search", "database pool")):
        run = invoke(*args, "-w", str(sample_ws), "--json")
        assert run.code == 3 and "internal error" not in run.stderr, (args, run.stderr)
        assert "cannot create the index directory" in run.json()["errors"][0]["message"]


def _damage(gen, how: str) -> None:
    if how == "chunks.json truncated":
        (gen / "chunks.json").write_bytes((gen / "chunks.json").read_bytes()[:60])
    elif how == "manifest.json truncated":
        (gen / "manifest.json").write_bytes((gen / "manifest.json").read_bytes()[:50])
    elif how == "vectors.npy missing":
        (gen / "vectors.npy").unlink()
    elif how == "vectors.npy truncated":
        (gen / "vectors.npy").write_bytes((gen / "vectors.npy").read_bytes()[:200])
    elif how == "owners.npy short":
        import numpy as np

        np.save(gen / "owners.npy", np.load(gen / "owners.npy")[:1])
    elif how == "full-text table of contents missing":
        for toc in (gen / "fulltext").glob("*.toc"):
            toc.unlink()


DAMAGE = ("chunks.json truncated", "manifest.json truncated", "vectors.npy missing", "vectors.npy truncated",
          "owners.npy short", "full-text table of contents missing")


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_a_damaged_index_is_rebuilt_by_search_and_reindex_and_never_an_internal_error(sample_ws):
    ws, _ = open_ws(sample_ws)
    assert invoke("reindex", "-w", str(sample_ws)).code == 0
    pristine = sample_ws.parent / "pristine-index"
    shutil.copytree(sample_ws / ".qwenmem" / "index", pristine)

    def damaged(how: str):
        shutil.rmtree(sample_ws / ".qwenmem" / "index")
        shutil.copytree(pristine, sample_ws / ".qwenmem" / "index")
        _damage(store.current_generation(ws), how)

    for how in DAMAGE:
        damaged(how)
        as_is = invoke("search", "database pool", "-w", str(sample_ws), "--json", "--no-reindex")
        assert as_is.code == 1, (how, as_is.stderr)  # no results
        assert as_is.json()["result"]["hits"] == [] and any("damaged" in w for w in as_is.json()["warnings"]), how
        run = invoke("search", "database pool", "-w", str(sample_ws), "--json")
        assert run.code == 0, (how, run.stderr)
        assert _paths(run)[0] == "memory/2026-11-27.md", how
        assert any("rebuilt" in w for w in run.json()["warnings"]), how
        assert run.json()["result"]["embedder"], how  # the vectors are back, not a silent full-text fallback
        damaged(how)
        again = invoke("reindex", "-w", str(sample_ws), "--json")
        assert again.code == 0 and not again.json()["result"]["up_to_date"], how
        assert again.json()["result"]["reason"] == "no usable index", how


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_dream_uses_the_model_the_index_was_built_with_and_none_for_an_index_without_vectors(sample_ws):
    dream = ("dream", "-w", str(sample_ws), "--mode", "deterministic", "--date", "2026-11-26", "--dry-run", "--json")
    assert invoke("reindex", "-w", str(sample_ws), "--model", "all-MiniLM-L6-v2").code == 0
    run = invoke(*dream)
    assert run.code == 0, run.stderr
    assert run.json()["result"]["embedding_model"] == "local:sentence-transformers/all-MiniLM-L6-v2"
    assert invoke("reindex", "-w", str(sample_ws), "--embedder", "none").code == 0
    run = invoke(*dream)
    assert run.code == 0, run.stderr
    assert run.json()["result"]["embedding_model"] is None  # no model is loaded behind the user's back


def test_an_eof_error_inside_a_command_is_not_reported_as_an_interruption(sample_ws):
    # click turns any EOFError into Abort, which qwenmem reported as "interrupted", exit 130 (as for Ctrl-C). A
    # truncated full-text segment makes Whoosh raise one.
    ws, _ = open_ws(sample_ws)
    assert invoke("reindex", "-w", str(sample_ws), "--embedder", "none").code == 0
    for seg in (store.current_generation(ws) / "fulltext").glob("*.seg"):
        seg.write_bytes(seg.read_bytes()[:100])
    run = invoke("search", "database pool", "-w", str(sample_ws), "--json")
    assert run.code != 130 and "interrupted" not in run.stderr
    assert run.code == 0 or run.json()["status"] == "error"


def test_vector_mode_on_an_index_without_vectors_answers_from_full_text_as_its_notice_says(sample_ws):
    assert invoke("reindex", "-w", str(sample_ws), "--embedder", "none").code == 0
    run = invoke("search", "database pool", "-w", str(sample_ws), "--json", "--mode", "vector")
    assert any("full-text search only" in w for w in run.json()["warnings"])
    assert _paths(run)[0] == "memory/2026-11-27.md"
    assert run.json()["result"]["mode"] == "text"


def test_a_workspace_where_qwenmem_cannot_create_its_data_dir_gives_a_one_line_error(sample_ws):
    # a read-only workspace, or `.qwenmem` taken by a plain file: the index lock cannot be created
    (sample_ws / ".qwenmem").write_text("not a directory\n")
    for args in (("reindex",), ("search", "database pool")):
        run = invoke(*args, "-w", str(sample_ws))
        assert run.code == 3, (args, run.stderr)
        assert "internal error" not in run.stderr and "cannot create the index lock" in run.stderr, args
        assert len(run.stderr.strip().splitlines()) == 1


def test_a_single_cjk_character_finds_the_text_that_holds_it(sample_ws):
    # CJK runs are indexed as bigrams, so the one-character word 猫 (cat) did not match 我的猫叫咪咪 at all.
    (sample_ws / "memory" / "2026-11-29.md").write_text("# 2026-11-29\n- 用户说：我的猫叫咪咪，今天带它去看兽医。\n",
                                                         encoding="utf-8")
    assert invoke("reindex", "-w", str(sample_ws), "--embedder", "none").code == 0
    run = invoke("search", "猫", "-w", str(sample_ws), "--json", "--mode", "text")
    hit = run.json()["result"]["hits"][0]
    assert hit["path"] == "memory/2026-11-29.md"
    assert [hit["snippet"][s:e] for s, e in hit["highlights"]] == ["猫"]
    pools = invoke("search", "池", "-w", str(sample_ws), "--json", "--mode", "text", "-n", "10")
    assert set(_paths(pools)) == {"MEMORY.md", "memory/2026-11-26.md", "memory/2026-11-28.md"}
    two = invoke("search", "猫 池", "-w", str(sample_ws), "--json", "--mode", "text", "-n", "10")
    assert "memory/2026-11-29.md" in _paths(two) and "MEMORY.md" in _paths(two)
