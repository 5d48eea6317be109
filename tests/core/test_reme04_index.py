"""ReMe 0.4 compatibility pieces of the index (qwenmem/core/reme_index.py): the indexed view of a note, ReMe's
rank fusion and its memory_search text, checked against what ReMe 0.4.1.11 itself printed on the generated corpus."""

from __future__ import annotations

import re
import string

import yaml
from hypothesis import given, settings, strategies as st

from qwenpaw2_support import GEN2_CORPUS, GEN2_WS, needs_gen2_corpus
from reme04_support import FIXTURE_WS

from qwenmem.core.index.chunking import chunk_text
from qwenmem.core.reme_index import (NO_MEMORY_RESULTS, RemeHit, candidates_for, format_memory_search, has_tag,
                                     index_view, label, reme_fuse)

lines_st = st.lists(st.text(alphabet=string.ascii_letters + " -#:数据", max_size=30), max_size=10)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["name", "description", "tags", "session_id", "x"]),
                       st.text(string.ascii_letters + " ", min_size=1, max_size=20), min_size=1), lines_st)
def test_index_view_blanks_front_matter_and_keeps_every_line_number(meta, body_lines):
    fm = "---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n"
    text = fm + "\n".join(body_lines)
    view, info = index_view("memory/2026-12-01/t.md", text)
    original, indexed = text.split("\n"), view.split("\n")
    n = fm.count("\n")
    assert len(indexed) == len(original)
    assert indexed[:n] == [""] * n and indexed[n:] == original[n:]
    assert info["kind"] == "note" and info["date"] == "2026-12-01"
    for chunk in chunk_text("memory/2026-12-01/t.md", view):
        assert chunk.start_line > n and "session_id" not in chunk.text


def test_index_view_of_the_fixtures():
    text = (FIXTURE_WS / "memory/2026-12-01/lisbon-trip.md").read_text()
    view, meta = index_view("memory/2026-12-01/lisbon-trip.md", text)
    assert meta == {"kind": "note", "title": "lisbon-trip", "date": "2026-12-01", "tags": ["travel", "lisbon"],
                    "description": "User is planning a March trip to Lisbon and wants a hotel in Alfama with a view "
                                   "of the river."}  # no "links": source_conversation is front matter, not body
    [chunk] = chunk_text("memory/2026-12-01/lisbon-trip.md", view)
    assert (chunk.start_line, chunk.end_line) == (10, 16) and chunk.text.startswith("## Facts")
    _, core = index_view("MEMORY.md", (FIXTURE_WS / "MEMORY.md").read_text())
    assert core["kind"] == "core" and label("MEMORY.md", core) == "core memory"
    log_view, log = index_view("memory/2026-05-20.md", (FIXTURE_WS / "memory/2026-05-20.md").read_text())
    assert log["kind"] == "daily_log" and log_view == (FIXTURE_WS / "memory/2026-05-20.md").read_text()
    assert has_tag(meta, ["#Travel"]) and not has_tag(meta, ["ops"]) and not has_tag(None, ["x"])


def test_body_links_are_recorded():
    _, meta = index_view("memory/2026-12-01.md", (FIXTURE_WS / "memory/2026-12-01.md").read_text())
    assert meta["kind"] == "day_index" and meta["links"] == ["memory/2026-12-01/deploy-runbook.md",
                                                             "memory/2026-12-01/lisbon-trip.md"]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(string.ascii_lowercase, min_size=1, max_size=3), st.floats(0.01, 30), max_size=40),
       st.dictionaries(st.text(string.ascii_lowercase, min_size=1, max_size=3), st.floats(-1, 1), max_size=40),
       st.integers(1, 80))
def test_reme_fusion(keyword, vector, limit):
    fused = reme_fuse(keyword, vector, limit)
    n = candidates_for(limit)
    if keyword and vector:
        assert all(0 < s <= 1 / 61 + 1e-12 for s in fused.values())
        assert len(fused) <= 2 * n
        top_k = min(keyword, key=lambda k: (-keyword[k], k))  # rank 1 (ties by id, as ReMe's lists here)
        top_v = min(vector, key=lambda k: (-vector[k], k))
        if top_k == top_v:
            assert abs(fused[top_k] - 1 / 61) < 1e-12
    elif keyword or vector:
        side = keyword or vector
        assert fused == dict(sorted(side.items(), key=lambda kv: (-kv[1], kv[0]))[:n])  # raw scores, unchanged
    else:
        assert fused == {}


def test_reme_fusion_weights():
    fused = reme_fuse({"a": 9.0, "b": 1.0}, {"b": 0.9, "a": 0.1}, 5)
    assert abs(fused["b"] - (0.7 / 61 + 0.3 / 62)) < 1e-12 and abs(fused["a"] - (0.7 / 62 + 0.3 / 61)) < 1e-12
    assert candidates_for(5) == 15 and candidates_for(1000) == 200


def _reme_blocks(text: str) -> list[tuple[str, int, int, float, float | None, float | None, str]]:
    """Parse ReMe's own memory_search text back into hits (path, lines, scores, chunk text)."""
    header = re.compile(r"^========== (.+?):(\d+)-(\d+) \[score=([\d.]+)(?: vector=([\d.]+) keyword=([\d.]+))?\] "
                        r"==========$", re.M)
    out, matches = [], list(header.finditer(text))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() - 1 if i + 1 < len(matches) else len(text)
        body = text[m.end() + 1:end]
        body = body.split("\n  outlinks (")[0].split("\n  inlinks (")[0]
        out.append((m.group(1), int(m.group(2)), int(m.group(3)), float(m.group(4)),
                    float(m.group(5)) if m.group(5) else None, float(m.group(6)) if m.group(6) else None, body))
    return out


@needs_gen2_corpus
def test_format_reproduces_reme_memory_search_text():
    """Given ReMe's own hits, our text is ReMe's text byte for byte, wikilink neighbours included (names and
    descriptions from our front-matter parser). The search ran before the dream, so without digest/."""
    files = {}
    for path in sorted((GEN2_WS / "memory").rglob("*.md")):
        rel = path.relative_to(GEN2_WS).as_posix()
        files[rel] = {"meta": index_view(rel, path.read_text())[1]}
    for name in ("memory_search_berlin.txt", "memory_search_umbrella.txt"):
        expected = (GEN2_CORPUS / "run" / name).read_text()
        hits = [RemeHit(p, a, b, s, v, k, t) for p, a, b, s, v, k, t in _reme_blocks(expected)]
        assert len(hits) == 3
        assert format_memory_search(hits, files).rstrip("\n") == expected.rstrip("\n")


def test_no_results_text():
    assert format_memory_search([]) == NO_MEMORY_RESULTS
