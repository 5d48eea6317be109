"""Threshold math and kept-suffix search against the spec's formulas (qwenpaw-workspace.md §4.3-4.4, §7)."""

from __future__ import annotations

import json

from hypothesis import given, settings as hsettings, strategies as st

from compact_fixtures import call, result, say, user
from qwenmem.core.compaction.gen1.threshold import (compute_budget, keep_count_current, keep_indices_legacy,
                                               legacy_fallback_keep, plan_compaction, tool_ids_aligned)
from qwenmem.core.tokens import get_counter, message_tokens

EST = get_counter("estimate", 4)


def test_current_defaults_match_the_spec_numbers():
    b = compute_budget("current", 131072, 0.8, 0.1, "", "", EST)
    assert (b.threshold, b.reserve, b.left) == (104857, 13107, 104857)


def test_legacy_default_threshold_is_98304():
    b = compute_budget("legacy", 131072, 0.75, 0.1, "", "", EST)
    assert (b.threshold, b.reserve) == (98304, 13107)


def test_current_counts_prompt_and_summary_separately_legacy_counts_them_together():
    # "a" and "b" are 1 byte each: int(0.25 + 0.5) = 0 apiece, but "ab" is int(0.5 + 0.5) = 1
    current = compute_budget("current", 1000, 0.8, 0.1, "a", "b", EST)
    legacy = compute_budget("legacy", 1000, 0.8, 0.1, "a", "b", EST)
    assert (current.fixed_tokens, current.left) == (0, 800)
    assert (legacy.fixed_tokens, legacy.left) == (1, 799)


def test_compaction_starts_exactly_at_the_left_threshold():
    budget = compute_budget("current", 1000, 0.8, 0.1, "", "", EST)  # L = 800, R = 100
    msgs = [user(), say()]
    assert not plan_compaction(msgs, [400, 399], budget).would_compact
    plan = plan_compaction(msgs, [400, 400], budget)
    assert plan.would_compact and plan.room == 0


def test_no_compaction_when_prompt_and_summary_fill_the_threshold():
    budget = compute_budget("current", 100, 0.8, 0.1, "y" * 400, "", EST)  # S = 100 > T = 80
    assert budget.left <= 0 and budget.blocked
    assert not plan_compaction([user(), say()], [500, 500], budget).would_compact


def test_legacy_never_compacts_when_left_threshold_is_not_above_reserve():
    budget = compute_budget("legacy", 1000, 0.75, 0.3, "y" * 1800, "", EST)  # S=450, L=300, R=300
    assert budget.left == 300 and budget.blocked
    assert not plan_compaction([user(), say()], [500, 500], budget).would_compact
    forced = plan_compaction([user(), say()], [500, 500], budget, force=True)
    assert forced.would_compact


# ---- the five test_as_msg_handler.py context_check cases (spec §7)

def _split(msgs, reserve):
    tokens = [message_tokens(m, EST) for m in msgs]
    k = keep_count_current(msgs, tokens, reserve)
    kept = msgs[len(msgs) - k:] if k else []
    assert tool_ids_aligned(kept)
    return k, kept


def test_a_pair_that_fits_is_kept_together():
    msgs = [user(5000), call("t1"), result(("t1", "x" * 400)), say(50)]
    k, kept = _split(msgs, 2000)
    assert k == 3 and kept[0] is msgs[1]


def test_a_result_too_large_for_the_reserve_excludes_both_halves():
    # the bug report: threshold 14000, reserve 2000, one result of 12592 tokens
    msgs = [user(1500), call("t1"), result(("t1", "x" * (12592 * 4)))]
    tokens = [message_tokens(m, EST) for m in msgs]
    assert tokens[2] == 12592
    budget = compute_budget("current", 17500, 0.8, 2000 / 17500, "", "", EST)
    assert (budget.left, budget.reserve) == (14000, 2000)
    plan = plan_compaction(msgs, tokens, budget)
    assert plan.would_compact and plan.keep == [] and plan.remove == [0, 1, 2]


def test_a_result_that_fits_pulls_its_tool_use_into_the_suffix():
    msgs = [user(3000), say(10), call("t9"), result(("t9", "ok" * 100))]
    k, kept = _split(msgs, 300)
    assert k == 3 and [m["id"] for m in kept] == [m["id"] for m in msgs[1:]]


def test_several_pairs_in_one_message_stay_aligned():
    msgs = [user(3000), call("a", "b", "c"), result(("a", "1"), ("b", "2")), result(("c", "3")), say(5)]
    k, kept = _split(msgs, 500)
    assert k == 4


def test_reverse_dependency_a_result_whose_use_does_not_fit_is_left_out():
    # keeping the result without its (too large) tool_use would orphan it; only the last message fits
    big_call = call("z1")
    big_call["content"][0]["input"] = {"command": "x" * 4000}
    msgs = [user(10), big_call, result(("z1", "done")), say(20)]
    k, kept = _split(msgs, 200)
    assert k == 1 and kept[0] is msgs[-1]


@st.composite
def conversations(draw):
    msgs, tokens = [], []
    for i in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["user", "say", "pair", "orphan_use"]))
        if kind == "pair":
            msgs += [call(f"p{i}"), result((f"p{i}", "r"))]
            tokens += [draw(st.integers(0, 60)), draw(st.integers(0, 60))]
        elif kind == "orphan_use":
            msgs.append(call(f"o{i}"))
            tokens.append(draw(st.integers(0, 60)))
        else:
            msgs.append(user() if kind == "user" else say())
            tokens.append(draw(st.integers(0, 60)))
    return msgs, tokens, draw(st.integers(0, 300))


@hsettings(max_examples=200, deadline=None)
@given(conversations())
def test_kept_suffix_is_the_largest_aligned_suffix_within_the_reserve(case):
    msgs, tokens, reserve = case
    k = keep_count_current(msgs, tokens, reserve)
    if k:
        assert sum(tokens[-k:]) <= reserve and tool_ids_aligned(msgs[-k:])
    for longer in range(k + 1, len(msgs) + 1):
        if sum(tokens[-longer:]) > reserve:
            break
        assert not tool_ids_aligned(msgs[-longer:])


# ---- legacy (Q@PRE / ReMe 0.3.1.8) split

def test_legacy_greedy_keep_pulls_in_tool_use_dependencies():
    msgs = [user(), call("t1"), result(("t1", "r")), say()]
    tokens = [500, 10, 10, 10]
    keep, aligned = keep_indices_legacy(msgs, tokens, 100)
    assert keep == [1, 2, 3] and aligned


def test_legacy_stops_at_the_first_message_that_does_not_fit():
    msgs = [user(), say(), user(), say()]
    keep, aligned = keep_indices_legacy(msgs, [10, 500, 10, 10], 100)
    assert keep == [2, 3] and aligned


def test_legacy_falls_back_to_the_last_aligned_tail():
    msgs = [user(), call("t1"), result(("t1", "r")), call("t2")]  # the newest call has no result
    assert legacy_fallback_keep(msgs) == 0
    msgs2 = [call("t3"), result(("t3", "r")), say(), say()]  # the last 3 would orphan t3's result
    assert legacy_fallback_keep(msgs2) == 2


def test_legacy_plan_uses_the_fallback_when_the_greedy_set_is_misaligned():
    msgs = [user(), say(), user(), call("t2")]
    budget = compute_budget("legacy", 1000, 0.75, 0.2, "", "", EST)  # L=750, R=200
    plan = plan_compaction(msgs, [300, 300, 100, 50], budget)
    assert plan.would_compact and plan.fallback and plan.keep == []


def test_compressed_marked_legacy_messages_are_not_counted(tmp_path):
    from qwenmem.core.compaction.gen1.check import check_session
    from qwenmem.core.compaction.options import CompactOptions
    from qwenmem.core.sessions import iter_session_refs
    from qwenmem.core.settings import load_settings
    from qwenmem.core.workspace import discover_workspace
    from compact_fixtures import session_doc

    doc = session_doc([user(300), say(300), user(5), say(5)])
    doc["agent"]["memory"]["content"][0][1] = ["compressed"]
    doc["agent"]["memory"]["content"][1][1] = ["compressed"]
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "s.json").write_text(json.dumps(doc), encoding="utf-8")
    ws = discover_workspace(tmp_path)
    report = check_session(ws, next(iter_session_refs(ws)), load_settings(ws), CompactOptions())
    assert report.tokens.messages == 10 and report.legacy_compressed == 2 and report.message_count == 2
