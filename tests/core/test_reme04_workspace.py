"""QwenPaw 2.x long-term memory end to end (issue 16): reindex, search and dream on the generated QwenPaw 2.2.2
corpus and on the self-written ReMe 0.4 fixtures (which need no ../shared). Real files, real Whoosh, the real CLI."""

from __future__ import annotations

import json

import pytest

from helpers import invoke
from dream_fixtures import tree
from qwenpaw2_support import copy_corpus
from reme04_support import copy_fixture

from qwenmem.core.reme_notes import parse_note


def _front_matter_lines(ws, rel) -> set[str]:
    text = (ws / rel).read_text(encoding="utf-8")
    n = parse_note(text).front_matter_lines
    return {ln.strip() for ln in text.split("\n")[:n] if ln.strip() and ln.strip() != "---"}


def _search(ws, *args):
    run = invoke("-w", str(ws), "search", *args, "--json")
    assert run.code in (0, 1), run.stderr
    return run.json()["result"]["hits"]


def _assert_no_front_matter(ws, hits):
    assert hits
    for h in hits:
        fm = _front_matter_lines(ws, h["path"])
        assert not any(line in h["snippet"] for line in fm), (h["path"], h["snippet"])


@pytest.fixture(params=["fixture", "corpus"])
def gen2_ws(request, tmp_path):
    if request.param == "corpus":
        from qwenpaw2_support import GEN2_WS

        if not GEN2_WS.is_dir():
            pytest.skip(f"generated QwenPaw 2.2.2 corpus not found at {GEN2_WS}")
        return copy_corpus(tmp_path), "berlin"
    return copy_fixture(tmp_path), "lisbon"


TOPIC = {"berlin": ("memory/2026-12-01/berlin-trip-planning.md", "digest/personal/berlin-trip.md", "Berlin hotel"),
         "lisbon": ("memory/2026-12-01/lisbon-trip.md", "digest/personal/lisbon-trip.md", "Lisbon hotel")}


def test_reindex_covers_notes_and_digest_never_mem_metadata(gen2_ws):
    ws, which = gen2_ws
    note, digest, _ = TOPIC[which]
    metadata_before = tree(ws / "mem_metadata")
    run = invoke("-w", str(ws), "reindex", "--embedder", "none", "--json")
    assert run.code == 0, run.stderr
    added = run.json()["result"]["files_added"]
    assert note in added and digest in added and "MEMORY.md" in added
    assert not any(p.startswith(("mem_metadata", "mem_session", "sessions")) for p in added)
    assert not any(p.endswith(".yaml") for p in added)  # interests.yaml is not Markdown
    assert tree(ws / "mem_metadata") == metadata_before


def test_search_finds_the_note_and_the_digest_without_front_matter(gen2_ws):
    ws, which = gen2_ws
    note, digest, query = TOPIC[which]
    invoke("-w", str(ws), "reindex", "--embedder", "none")
    hits = _search(ws, query, "-n", "10")
    paths = [h["path"] for h in hits]
    assert note in paths and digest in paths
    _assert_no_front_matter(ws, hits)
    by_path = {h["path"]: h for h in hits}
    assert by_path[note]["kind"] == "note" and by_path[digest]["kind"] == "digest"
    # every chunk of every indexed file, not only these hits: no front matter anywhere in the index
    everything = _search(ws, "the", "-n", "1000", "--mode", "text")
    _assert_no_front_matter(ws, everything)


def test_memory_md_is_core_memory(tmp_path):
    ws = copy_fixture(tmp_path)
    invoke("-w", str(ws), "reindex", "--embedder", "none")
    [hit] = _search(ws, "Ana Porto", "-n", "1")
    assert hit["path"] == "MEMORY.md" and hit["kind"] == "core"
    human = invoke("-w", str(ws), "search", "Ana Porto", "-n", "1")
    assert "MEMORY.md:" in human.stdout and "core memory" in human.stdout


def test_tag_and_since_filter_by_front_matter(tmp_path):
    ws = copy_fixture(tmp_path)
    invoke("-w", str(ws), "reindex", "--embedder", "none")
    assert {h["path"] for h in _search(ws, "billing", "--tag", "ops", "-n", "10")} == \
        {"memory/2026-12-01/deploy-runbook.md"}
    assert {h["path"] for h in _search(ws, "数据库", "--tag", "运维", "-n", "10")} == {"memory/2026-11-30/数据库.md"}
    assert _search(ws, "Lisbon", "--tag", "nosuchtag") == []
    # --since by the note's date (folder or front matter): the 1.x log of May and the undated digest drop out
    since = {h["path"] for h in _search(ws, "Lisbon", "--since", "2026-12-01", "-n", "10")}
    assert since == {"memory/2026-12-01/lisbon-trip.md", "memory/2026-12-01.md"}
    until = {h["path"] for h in _search(ws, "数据库 Lisbon", "--until", "2026-11-30", "-n", "10")}
    assert until == {"memory/2026-11-30/数据库.md", "memory/2026-11-30.md", "memory/2026-05-20.md"}


def test_format_reme_prints_memory_search_blocks(gen2_ws):
    ws, which = gen2_ws
    note, digest, query = TOPIC[which]
    invoke("-w", str(ws), "reindex", "--embedder", "none")
    run = invoke("-w", str(ws), "search", query, "--format", "reme", "-n", "5")
    assert run.code == 0
    headers = [ln for ln in run.stdout.splitlines() if ln.startswith("========== ")]
    assert headers and all(ln.endswith(" ==========") and "[score=" in ln for ln in headers)
    assert any(ln.startswith(f"========== {note}:") for ln in headers)
    assert f"← {digest}" in run.stdout or f"→ {note}" in run.stdout  # wikilink neighbours, as ReMe lists them
    assert "session_id:" not in run.stdout
    nothing = invoke("-w", str(ws), "search", "zzqxjv", "--format", "reme", "--mode", "text")
    assert "(no memory results)" in nothing.stdout


def test_fusion_reme_scores_are_reme_scale(tmp_path):
    ws = copy_fixture(tmp_path)
    invoke("-w", str(ws), "reindex", "--embedder", "none")
    hits = _search(ws, "Lisbon hotel", "--fusion", "reme", "--mode", "text", "-n", "3")
    assert hits and hits[0]["score"] > 1.0  # keyword side only: ReMe returns raw BM25, not a 0-1 score


def test_dream_leaves_memory_and_digest_byte_identical(gen2_ws):
    ws, which = gen2_ws
    note, digest, _ = TOPIC[which]
    before = {k: v for k, v in tree(ws).items() if k.startswith(("memory/", "digest/", "mem_metadata/"))}
    mtimes = {p: (ws / p).stat().st_mtime_ns for p in before}
    run = invoke("-w", str(ws), "dream", "--date", "2026-12-01", "--mode", "deterministic", "--no-embeddings",
                 "--json")
    assert run.code == 0, run.stderr
    doc = run.json()["result"]
    after = {k: v for k, v in tree(ws).items() if k.startswith(("memory/", "digest/", "mem_metadata/"))}
    assert after == before and {p: (ws / p).stat().st_mtime_ns for p in before} == mtimes
    assert doc["status"] == "changed" and doc["snapshot"]
    added = [c["new"] for c in doc["changes"] if c["action"] == "added"]
    assert added and all("(from [[" in a for a in added)
    assert any(f"(from [[{note}]])" in a or f"(from [[{digest}]])" in a for a in added)
    memory = (ws / "MEMORY.md").read_text(encoding="utf-8")
    assert memory.startswith("---\nsummary:")  # the 2.x template's front matter is kept
    assert all(a in memory for a in added)
    # the snapshot taken before the write restores the tree as it was
    listed = invoke("-w", str(ws), "snapshot", "list", "--json").json()["result"]["snapshots"]
    assert [s["id"] for s in listed] == [doc["snapshot"]] and "before qwenmem dream" in listed[0]["reason"]
    again = invoke("-w", str(ws), "dream", "--date", "2026-12-01", "--mode", "deterministic", "--no-embeddings",
                   "--json").json()["result"]
    assert again["status"] == "unchanged"  # promoted once, not again


def test_generation_switch_reindexes_front_matter_away(tmp_path):
    """A 1.x tree indexed with front matter in a daily log; once it is a 2.x tree the same unchanged file is read
    again and its front matter leaves the chunks."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-05-01.md").write_text("---\nname: zebrafrontmatter\n---\n\n- fact about otters\n")
    invoke("-w", str(ws), "reindex", "--embedder", "none")
    assert _search(ws, "zebrafrontmatter", "--mode", "text")  # 1.x: unchanged behaviour, front matter is text
    (ws / "digest" / "wiki").mkdir(parents=True)
    hits = _search(ws, "zebrafrontmatter", "--mode", "text")  # the stale check sees the switch and reindexes
    assert hits == []
    assert _search(ws, "otters", "--mode", "text")[0]["kind"] == "day_index"  # a dated page with front matter


def test_1x_workspace_is_unchanged(sample_ws):
    invoke("-w", str(sample_ws), "reindex", "--embedder", "none")
    hits = _search(sample_ws, "the", "-n", "50", "--mode", "text")
    assert hits and all(h["kind"] is None for h in hits)
    gen = sorted((sample_ws / ".qwenmem" / "index").glob("gen-*")) or sorted((sample_ws / ".qwenmem" / "index").iterdir())
    manifests = [p / "manifest.json" for p in gen if (p / "manifest.json").is_file()]
    files = json.loads(manifests[-1].read_text())["files"]
    assert files and not any("meta" in f for f in files.values())
