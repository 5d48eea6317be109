"""Chunking: ReMe-compatible line ranges (reme-index.md §2.2) and invariants for any text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from qwenmem.core.index.chunking import ChunkSpec, chunk_text


def test_matches_reme_line_ranges_for_uniform_lines():
    # reme-index.md §2.2: "A 79-line file with 69-character lines gave chunks 1-23, 19-41, 37-59, 55-77, 73-79".
    # (69 characters including the newline, as ReMe counts len(line) + 1.)
    text = "\n".join("x" * 68 for _ in range(79))
    chunks = chunk_text("memory/a.md", text)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 23), (19, 41), (37, 59), (55, 77), (73, 79)]


def test_long_line_never_makes_oversized_chunks():
    # ReMe produced 3,201-character chunks here; ours stay within max_chars and keep the line number.
    chunks = chunk_text("MEMORY.md", "y" * 5000)
    assert all(len(c.text) <= 1600 for c in chunks)
    assert {(c.start_line, c.end_line) for c in chunks} == {(1, 1)}
    assert "".join(c.text for c in chunks) == "y" * 5000


def test_heading_aware_split_starts_a_chunk_at_a_heading():
    text = "# A\n" + "a" * 500 + "\n" + "b" * 500 + "\n## B\nafter heading"
    plain = chunk_text("m.md", text)
    aware = chunk_text("m.md", text, ChunkSpec(headings=True))
    assert len(plain) == 1
    assert [(c.start_line, c.end_line) for c in aware] == [(1, 3), (4, 5)]
    assert aware[1].text.startswith("## B")


def test_blank_text_gives_no_chunks():
    assert chunk_text("m.md", "\n\n   \n") == []


lines = st.lists(st.text(alphabet=st.sampled_from("ab 数据库#\t-"), max_size=120), min_size=1, max_size=60)


@settings(max_examples=150, deadline=None)
@given(lines, st.integers(min_value=32, max_value=400), st.integers(min_value=0, max_value=200))
def test_chunks_cover_every_nonblank_line_and_respect_size(file_lines, max_chars, overlap):
    text = "\n".join(file_lines)
    chunks = chunk_text("m.md", text, ChunkSpec(max_chars=max_chars, overlap_chars=overlap))
    covered = set()
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(file_lines)
        assert len(c.text) <= max(32, max_chars)
        covered.update(range(c.start_line, c.end_line + 1))
        # the chunk text is made of the lines it claims (long lines may be cut into pieces)
        for piece in c.text.split("\n"):
            assert any(piece in file_lines[n - 1] for n in range(c.start_line, c.end_line + 1))
    for number, line in enumerate(file_lines, start=1):
        if line.strip():
            assert number in covered
    starts = [c.start_line for c in chunks]
    assert starts == sorted(starts)
