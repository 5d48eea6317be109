"""Properties of deterministic dedupe on generated MEMORY.md files: nothing but duplicates ever goes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dream_fixtures import protected_blocks
from qwenmem.core.dream.consolidate import consolidate
from qwenmem.core.dream.markdown import parse
from qwenmem.core.dream.normalize import normalize

FACTS = ["Staging Postgres runs on 10.0.3.7:5432.", "staging postgres runs on 10.0.3.7:5432", "用户喜欢简短的回答。",
         "用户 喜欢简短的回答", "状态: ✅", "Restart pgbouncer with systemctl.", "Fix: restart pgbouncer with systemctl, then wait.",
         "El usuario prefiere respuestas cortas.", "port: 80", "x"]

item = st.builds(lambda indent, fact: f"{'  ' * indent}- {fact}", st.integers(0, 2), st.sampled_from(FACTS))
block = st.one_of(
    st.lists(item, min_size=1, max_size=6).map("\n".join),
    st.sampled_from(["```\n- Staging Postgres runs on 10.0.3.7:5432.\n- Staging Postgres runs on 10.0.3.7:5432.\n```",
                     "| a | b |\n|---|---|\n| - 状态: ✅ | 1 |\n| - 状态: ✅ | 1 |", "Some paragraph text.", "---"]),
    st.sampled_from(FACTS).map(lambda t: "## " + t[:12]),
)
document = st.builds(lambda front, blocks: ("---\ntitle: t\n---\n" if front else "") + "# Memory\n\n" +
                     "\n\n".join(blocks) + "\n", st.booleans(), st.lists(block, max_size=10))


@settings(max_examples=200, deadline=None)
@given(document)
def test_dedupe_only_drops_lines_whose_words_survive(text):
    out = consolidate(text, None, "2026-01-01")
    new = out.text
    assert protected_blocks(new) == protected_blocks(text)
    assert [h.title for h in parse(new).headings] == [h.title for h in parse(text).headings]
    if text.startswith("---\n"):
        assert new.startswith("---\ntitle: t\n---\n")
    new_key = normalize(new)
    for change in out.changes:
        assert change.action in ("removed", "merged")
        for line in (change.old or "").splitlines():
            assert normalize(line) in new_key, line
    # the kept lines are the original lines, in order (nothing rewritten)
    it = iter(text.splitlines())
    assert all(any(line == old for old in it) for line in new.splitlines())


@settings(max_examples=100, deadline=None)
@given(document)
def test_dedupe_is_idempotent(text):
    once = consolidate(text, None, "2026-01-01").text
    assert consolidate(once, None, "2026-01-01").text == once


LOG_FACTS = FACTS + ["The connection pool limit is 200 (was 100).", "The connection pool limit is 100.", "新的事实：部署在周五。"]
daily_log = st.lists(st.sampled_from(LOG_FACTS), max_size=6).map(
    lambda facts: "# day\n\n## Facts\n" + "".join(f"- {f}\n" for f in facts))


@settings(max_examples=150, deadline=None)
@given(document, daily_log)
def test_promoting_the_same_log_twice_changes_nothing_the_second_time(text, log):
    once = consolidate(text, log, "2026-01-01")
    assert consolidate(once.text, log, "2026-01-01").text == once.text
    promoted = normalize(once.text)
    for change in once.changes:
        if change.action in ("added", "replaced", "merged") and change.new:
            assert normalize(change.new) in promoted
