"""What qwenmem's dream reads on a 2.x workspace (qwenmem/core/reme_promote.py): the day's ReMe notes, day page
and the digest pages that cite them, as a cited daily log. Read-only: every file stays byte-identical."""

from __future__ import annotations

from dream_fixtures import tree
from reme04_support import copy_fixture

from qwenmem.core.dream.consolidate import consolidate
from qwenmem.core.reme_notes import cited_source, without_citations
from qwenmem.core.reme_promote import day_log
from qwenmem.core.workspace import discover_workspace


def test_day_log_sources_and_citations(tmp_path):
    ws = discover_workspace(copy_fixture(tmp_path), env={})
    before = tree(ws.path)
    log = day_log(ws, "2026-12-01")
    assert log.sources == ["memory/2026-12-01.md", "memory/2026-12-01/deploy-runbook.md",
                           "memory/2026-12-01/lisbon-trip.md", "digest/personal/lisbon-trip.md",
                           "digest/wiki/billing-deploys.md"]
    items = [ln for ln in log.text.splitlines() if ln.startswith("- ")]
    assert items and all(cited_source(ln) for ln in items)
    assert "- Trip to Lisbon in March, 3 to 9. (from [[memory/2026-12-01/lisbon-trip.md]])" in items
    assert "notes:auto" not in log.text and "[[memory/2026-12-01/lisbon-trip.md]] name:" not in log.text
    assert "session_id" not in log.text and "description:" not in log.text  # no front matter
    assert "## Sources" not in log.text  # a digest's source list is not a fact
    assert tree(ws.path) == before


def test_other_days_and_uncited_digests_are_left_out(tmp_path):
    ws = discover_workspace(copy_fixture(tmp_path), env={})
    log = day_log(ws, "2026-11-30")
    assert log.sources == ["memory/2026-11-30/数据库.md"]  # the day page holds only its generated block
    assert day_log(ws, "2026-01-01").text is None


def test_promoted_lines_cite_their_note_and_repeat_nothing(tmp_path):
    ws = discover_workspace(copy_fixture(tmp_path), env={})
    memory = ws.memory_md.read_text()
    log = day_log(ws, "2026-12-01")
    first = consolidate(memory, log.text, "2026-12-01")
    added = [c.new for c in first.changes if c.action == "added"]
    assert added and all(cited_source(a) for a in added)
    assert any(without_citations(a) == "- Trip to Lisbon in March, 3 to 9." for a in added)
    # the note's "Hotel in Alfama with a river view." is stated by the digest's longer line, which is promoted
    assert not any(without_citations(a) == "- Hotel in Alfama with a river view." for a in added)
    again = consolidate(first.text, log.text, "2026-12-01")
    assert again.text == first.text and not again.changes  # a second dream of the same day adds nothing


def test_a_fact_memory_already_states_is_not_promoted_again_with_a_citation(tmp_path):
    ws = discover_workspace(copy_fixture(tmp_path), env={})
    memory = ws.memory_md.read_text().replace("- The user's name is Ana; she lives in Porto.",
                                              "- The user's name is Ana; she lives in Porto.\n"
                                              "- Hotel in Alfama with a river view.")
    done = consolidate(memory, day_log(ws, "2026-12-01").text, "2026-12-01")
    assert not any((c.new or "").startswith("- Hotel in Alfama with a river view. (from") for c in done.changes)
    assert "memory/2026-12-01/lisbon-trip.md" in " ".join(done.skipped)  # skipped, and said where it came from


def test_change_reasons_name_the_note(tmp_path):
    ws = discover_workspace(copy_fixture(tmp_path), env={})
    done = consolidate(ws.memory_md.read_text(), day_log(ws, "2026-12-01").text, "2026-12-01")
    reasons = [c.reason for c in done.changes if c.action == "added"]
    assert "new fact from memory/2026-12-01/lisbon-trip.md (Facts)" in reasons  # not "memory/2026-12-01.md line 19"


def test_a_cited_question_is_still_a_question(tmp_path):
    import pytest

    pytest.importorskip("qwenmem.core.dream.facts", reason="needs dream's fact filter (the dream-safety landing)")
    ws = discover_workspace(copy_fixture(tmp_path), env={})
    note = ws.path / "memory" / "2026-12-01" / "lisbon-trip.md"
    note.write_text(note.read_text() + "\n## Decisions\n- Should we book the hotel in Alfama now?\n")
    done = consolidate(ws.memory_md.read_text(), day_log(ws, "2026-12-01").text, "2026-12-01")
    assert not any("Should we book" in (c.new or "") for c in done.changes)  # the citation does not hide the "?"
