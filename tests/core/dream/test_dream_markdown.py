"""The MEMORY.md model: lossless round trips, and code/tables never mistaken for entries."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import CORPUS_REAL, FIXTURES, SAMPLE, needs_shared
from qwenmem.core.dream.markdown import parse
from qwenmem.core.dream.normalize import normalize


def test_every_fixture_markdown_file_round_trips_byte_for_byte():
    files = sorted(FIXTURES.rglob("*.md")) + sorted(SAMPLE.rglob("*.md"))
    assert len(files) >= 10
    for f in files:
        text = f.read_text(encoding="utf-8")
        assert parse(text).render() == text, f


@needs_shared
def test_every_real_markdown_file_round_trips_byte_for_byte():
    files = sorted(CORPUS_REAL.rglob("*.md"))
    files = [f for f in files if f.name != "SOURCES.md"]
    assert len(files) >= 7
    for f in files:
        text = f.read_text(encoding="utf-8")
        assert parse(text).render() == text, f


LINE = st.one_of(
    st.sampled_from(["# T", "## Section", "- item", "  - child", "* star", "1. one", "```", "~~~", "| a | b |",
                     "|---|---|", "---", "", "text", "\t- tab", "- ", "#", "> quote", "---\n", "\r"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=30), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_parse_render_is_lossless_for_any_text(lines, newline, final_newline):
    text = newline.join(lines) + (newline if final_newline else "")
    doc = parse(text)
    assert doc.render() == text
    for i, item in enumerate(doc.items):
        assert 0 <= item.start < item.end <= len(doc.lines)
        assert not any(n in doc.protected for n in range(item.start, item.start + 1))
        if item.parent is not None:
            parent = doc.items[item.parent]
            assert parent.start < item.start and item.end <= parent.end


def test_items_inside_code_fences_and_tables_are_not_entries():
    text = "# M\n\n```\n- not an item\n```\n\n| - cell | x |\n|---|---|\n\n- real item\n  - child\n"
    doc = parse(text)
    heads = [doc.item_head(i) for i in range(len(doc.items))]
    assert heads == ["real item", "child"]
    assert doc.items[1].parent == 0
    assert doc.items[0].end == len(doc.lines)


def test_front_matter_is_recognised_and_excluded():
    doc = parse("---\ntitle: x\n- not: an item\n---\n# H\n- a\n")
    assert doc.front_matter == 4
    assert [doc.item_head(i) for i in range(len(doc.items))] == ["a"]
    assert doc.headings[0].title == "H"


def test_normalize_ignores_spacing_case_punctuation_and_width():
    assert normalize("The user prefers English,  中文。") == normalize("the user prefers english 中文")
    assert normalize("ＡＢＣ１２３") == normalize("abc123")
    assert normalize("**状态**：✅ 已启用") == normalize("状态: 已启用")
    assert normalize("连接池上限为 100") != normalize("连接池上限为 200")
