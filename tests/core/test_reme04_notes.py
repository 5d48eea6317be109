"""ReMe 0.4 note parsing (qwenmem/core/reme_notes.py) and the memory-tree generation (core/memory_layout.py):
properties over generated text, the self-written fixtures, and the generated QwenPaw 2.2.2 corpus."""

from __future__ import annotations

import string

import yaml
from hypothesis import given, settings, strategies as st

from qwenpaw2_support import GEN2_WS, needs_gen2_corpus
from reme04_support import FIXTURE_WS, copy_fixture

from qwenmem.core import reme_notes as R
from qwenmem.core.memory_layout import GEN2_MARKERS, memory_layout
from qwenmem.core.workspace import discover_workspace

line_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00"),
                    max_size=40)
body_lines = st.lists(line_text, max_size=12)
keys = st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=12)
scalars = st.one_of(st.text(max_size=30).filter(lambda s: "\x00" not in s), st.integers(), st.booleans())
def _yaml_round_trips(meta: dict) -> bool:
    """PyYAML itself does not round-trip every string (a raw U+0085 in a quoted scalar loads back as a line
    fold): such metadata could not come from a YAML writer, and it says nothing about the front-matter split."""
    loaded = yaml.safe_load(yaml.safe_dump(meta, allow_unicode=True, sort_keys=False))
    return loaded == meta or (loaded is None and meta == {})


metas = st.dictionaries(keys, st.one_of(scalars, st.lists(st.text(string.ascii_letters, max_size=8), max_size=4)),
                        max_size=6).filter(_yaml_round_trips)


def with_front_matter(meta: dict, body: str) -> str:
    return "---\n" + yaml.safe_dump(meta, allow_unicode=True, sort_keys=False) + "---\n" + body


@settings(max_examples=200, deadline=None)
@given(metas, body_lines)
def test_front_matter_splits_exactly_and_parses_back(meta, lines):
    body = "\n".join(lines)
    text = with_front_matter(meta, body)
    note = R.parse_note(text)
    assert note.problem is None
    assert note.body == body  # the body is the file's text after the fence, byte for byte
    assert note.meta == meta  # unknown keys kept
    all_lines = text.split("\n")
    assert "\n".join(all_lines[note.body_start_line - 1:]) == body
    assert all_lines[note.front_matter_lines - 1] == "---"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_never_loses_a_character(text):
    note = R.parse_note(text)
    if note.front_matter_lines == 0:
        assert note.body == text
    else:
        head = "".join(line + "\n" for line in text.split("\n")[:note.front_matter_lines])
        assert head + note.body == text


@settings(max_examples=100, deadline=None)
@given(body_lines)
def test_text_without_a_valid_front_matter_is_all_body(lines):
    for text in ("---\n" + "\n".join(lines),  # never closed
                 "---\n- a list\n- not a mapping\n---\n" + "\n".join(lines),
                 "---\nkey: [unclosed\n---\n" + "\n".join(lines),
                 "\n".join(lines)):
        note = R.parse_note(text)
        if text.startswith("---\n") and note.front_matter_lines:
            continue  # the generated lines happened to close a valid mapping
        assert note.body == text and note.meta == {} and note.front_matter_lines == 0


def test_a_horizontal_rule_log_keeps_its_text():
    text = "---\n# 2026-05-01\n---\n- fact\n"  # to YAML the heading is a comment: this is a 1.x log, not metadata
    assert R.parse_note(text).body == text
    assert R.parse_note("---\n---\nbody").front_matter_lines == 2  # empty front matter is still front matter
    text = "---\nJust a line of prose: with a colon\nand another\n---\n- fact\n"
    note = R.parse_note(text)
    assert note.body == text and "not valid YAML" in (note.problem or "")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(line_text.filter(lambda s: "<!--" not in s), st.just("@BLOCK")), max_size=15),
       st.sampled_from(["notes", "links", "a.b-c"]))
def test_auto_blocks_found_at_their_lines(parts, name):
    lines, expected = [], []
    for p in parts:
        if p == "@BLOCK":
            start = len(lines) + 1
            lines += [f"<!-- {name}:auto -->", "- [[memory/2026-12-01/x.md]] name: x", f"<!-- /{name}:auto -->"]
            expected.append(R.AutoBlock(name, start, start + 2, True))
        else:
            lines.append(p)
    assert R.auto_blocks("\n".join(lines)) == expected


def test_unclosed_block_runs_to_the_end_and_mismatched_close_is_ignored():
    text = "intro\n<!-- notes:auto -->\n- [[a]]\n<!-- /other:auto -->\n- [[b]]"
    assert R.auto_blocks(text) == [R.AutoBlock("notes", 2, 5, False)]


@given(st.lists(st.text(alphabet=string.ascii_letters + "/-._ 数", min_size=1, max_size=20)
                .filter(lambda s: s.strip()), max_size=6))
def test_wikilinks(targets):
    text = " and ".join(f"[[{t}]]" for t in targets) + " [[x|label]]"
    expected = []
    for t in targets + ["x"]:
        if t.strip() not in expected:
            expected.append(t.strip())
    assert R.wikilinks(text) == expected


@given(st.one_of(st.lists(st.text(string.ascii_letters + "#", max_size=8), max_size=5),
                 st.text(string.ascii_letters + "#, ", max_size=30)))
def test_tags_are_clean_and_unique(value):
    tags = R.parse_tags(value)
    assert len(tags) == len(set(tags)) and all(t and not t.startswith("#") and "," not in t for t in tags)


def test_dates_from_front_matter_or_path():
    assert R.parse_note("---\ndate: 2026-11-30\n---\nx").date("memory/2026-12-01/a.md") == "2026-11-30"
    assert R.parse_note("---\ncreated: '2026-10-01T10:00:00'\n---\nx").date() == "2026-10-01"
    assert R.parse_note("---\nname: a\n---\nx").date("memory/2026-12-01/a.md") == "2026-12-01"
    assert R.parse_note("x").date("memory/2026-02-30.md") is None  # not a real day
    assert R.path_date("digest/wiki/a.md") is None


def test_fixture_notes_and_kinds():
    note = R.parse_note((FIXTURE_WS / "memory/2026-12-01/lisbon-trip.md").read_text())
    assert note.title == "lisbon-trip" and note.tags == ["travel", "lisbon"]
    assert note.description.startswith("User is planning a March trip") and note.description.endswith("river.")
    assert note.body.startswith("\n## Facts") and note.body_start_line == 9
    zh = R.parse_note((FIXTURE_WS / "memory/2026-11-30/数据库.md").read_text())
    assert zh.tags == ["数据库", "运维"] and zh.date("memory/2026-11-30/数据库.md") == "2026-11-30"
    index = R.parse_note((FIXTURE_WS / "memory/2026-12-01.md").read_text())
    assert index.title == "2026-12-01"
    [block] = R.auto_blocks(index.body)
    assert block.name == "notes" and block.closed
    assert R.wikilinks(index.body) == ["memory/2026-12-01/deploy-runbook.md", "memory/2026-12-01/lisbon-trip.md"]
    kinds = {rel: R.kind_of(rel, R.parse_note((FIXTURE_WS / rel).read_text())) for rel in
             ["MEMORY.md", "memory/2026-12-01.md", "memory/2026-05-20.md", "memory/2026-12-01/lisbon-trip.md",
              "digest/wiki/billing-deploys.md"]}
    assert kinds == {"MEMORY.md": R.CORE, "memory/2026-12-01.md": R.DAY_INDEX, "memory/2026-05-20.md": R.DAILY_LOG,
                     "memory/2026-12-01/lisbon-trip.md": R.NOTE, "digest/wiki/billing-deploys.md": R.DIGEST}


@needs_gen2_corpus
def test_generated_corpus_notes():
    note = R.parse_note((GEN2_WS / "memory/2026-12-01/berlin-trip-planning.md").read_text())
    # ReMe's own chunk of this note is lines 8-14 (run/memory_search_berlin.txt): the body starts on line 8
    assert note.body_start_line == 8 and note.title == "berlin-trip-planning"
    assert note.meta["session_id"].startswith("qpsid_sha256_")
    assert note.description == "User plans a June trip to Berlin, hotel near Alexanderplatz, museum tickets still to book."
    index = R.parse_note((GEN2_WS / "memory/2026-12-01.md").read_text())
    assert index.body_start_line == 5  # ReMe's chunk: memory/2026-12-01.md:5-8
    assert [b.closed for b in R.auto_blocks(index.body)] == [True]
    digest = R.parse_note((GEN2_WS / "digest/personal/berlin-trip.md").read_text())
    assert R.wikilinks(digest.body) == ["memory/2026-12-01/berlin-trip-planning.md"]
    assert R.parse_note((GEN2_WS / "memory/2026-05-20.md").read_text()).front_matter_lines == 0


@needs_gen2_corpus
def test_generated_corpus_is_a_2x_memory_tree():
    layout = memory_layout(discover_workspace(GEN2_WS, env={}))
    assert layout.is_gen2 and "mem_metadata/" in layout.reasons and "digest/" in layout.reasons


def test_layout_rules(tmp_path):
    ws = copy_fixture(tmp_path)
    assert memory_layout(discover_workspace(ws, env={})).is_gen2
    one = tmp_path / "one"
    (one / "memory").mkdir(parents=True)
    (one / "memory" / "2026-05-01.md").write_text("# log\n")
    (one / "MEMORY.md").write_text("# m\n")
    (one / "file_store").mkdir()
    assert memory_layout(discover_workspace(one, env={})).generation == "1.x"
    (one / "memory" / "2026-05-02").mkdir()
    assert memory_layout(discover_workspace(one, env={})).reasons == ("memory/<date>/ note folders",)
    (one / "memory" / "2026-05-02").rmdir()
    (one / "history.db").write_bytes(b"")
    assert memory_layout(discover_workspace(one, env={})).reasons == ("history.db",)


def test_configured_folders_and_escapes(tmp_path):
    ws = copy_fixture(tmp_path)
    w = discover_workspace(ws, env={})
    doc = {"running": {"reme_light_memory_config": {"daily_dir": "notes", "digest_dir": "/etc"}}}
    layout = memory_layout(w, doc)
    assert (layout.daily_dir, layout.digest_dir) == ("notes", "digest") and "/etc" in layout.notes[0]


def test_markers_match_the_session_layer():
    from qwenmem.core.settings import gen2

    assert GEN2_MARKERS == gen2.GEN2_MARKERS
