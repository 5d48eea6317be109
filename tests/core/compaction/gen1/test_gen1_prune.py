"""Tier 1: tool-result truncation, compatible with QwenPaw's notice and re-truncation (spec §4.6)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

from hypothesis import given, settings as hsettings, strategies as st

from compact_fixtures import call, result, say, user
from qwenmem.core.compaction.gen1.prune import MARKER, PruneLimits, cut_utf8, prune_tool_results

# QwenPaw's own re-truncation regexes (agents/tools/utils.py _legacy_truncation_metadata)
QWENPAW_PATTERNS = {
    "total_lines": r"contains (\d+) lines in total",
    "start_line": r"starts at line (\d+)",
    "max_bytes": r"covers the next (\d+) bytes",
    "read_from": r"start_line=(\d+) to read more",
}


def _numbers(text: str) -> dict:
    notice = text.split(MARKER, 1)[1]
    return {k: int(re.search(p, notice).group(1)) for k, p in QWENPAW_PATTERNS.items()}


def _lines(n: int, width: int = 99) -> str:
    return "\n".join(f"{i:05d} " + "y" * (width - 6) for i in range(n))


def _conversation(old_output: str, recent_output: str = "short"):
    return [user(), call("old"), result(("old", old_output)), say(), call("new"), result(("new", recent_output))]


def test_old_output_is_cut_to_3000_bytes_with_qwenpaw_notice(tmp_path):
    text = _lines(200)  # 100 bytes per line incl. newline, 19,999 bytes
    msgs = _conversation(text)
    res = prune_tool_results(msgs, PruneLimits(), tmp_path)
    out = msgs[2]["content"][0]["output"][0]["text"]
    head = out.split(MARKER)[0]
    assert head == text.encode()[:3000].decode()
    nums = _numbers(out)
    assert nums == {"total_lines": 200, "start_line": 1, "max_bytes": 3000, "read_from": 31}
    assert len(res.offloads) == 1 and res.offloads[0].text == text
    path = re.search(r"file_path=(.*?) start_line=", out).group(1)
    assert path == str(tmp_path / "tool_results" / res.offloads[0].path.name)
    assert re.fullmatch(r"[0-9a-f]{32}\.txt", res.offloads[0].path.name)
    assert msgs[5]["content"][0]["output"][0]["text"] == "short"


def test_recent_outputs_get_the_50000_byte_limit(tmp_path):
    text = _lines(400)  # 39,999 bytes: over 3000, under 50000
    msgs = _conversation("small", text)
    prune_tool_results(msgs, PruneLimits(), tmp_path)
    assert msgs[5]["content"][0]["output"][0]["text"] == text


def test_slack_of_100_bytes_is_left_alone(tmp_path):
    text = "z" * 3100
    msgs = _conversation(text)
    assert not prune_tool_results(msgs, PruneLimits(), tmp_path).changes
    msgs = _conversation(text + "z")
    assert len(prune_tool_results(msgs, PruneLimits(), tmp_path).changes) == 1


def test_cut_never_splits_a_utf8_character(tmp_path):
    text = "\n".join("记忆压缩测试" * 20 for _ in range(50))  # 3-byte characters
    msgs = _conversation(text)
    prune_tool_results(msgs, PruneLimits(), tmp_path)
    head = msgs[2]["content"][0]["output"][0]["text"].split(MARKER)[0]
    assert 2997 <= len(head.encode("utf-8")) <= 3000 and text.startswith(head)


def test_string_outputs_and_every_text_block_are_cut(tmp_path):
    msgs = [user(), call("s"), result(("s", _lines(100)), as_list=False)]
    msgs.append(say())
    msgs.append(say())
    multi = result(("m", "x"))
    multi["content"][0]["output"] = [{"type": "text", "text": _lines(60)}, {"type": "image", "source": {"type": "url", "url": "u"}},
                                     {"type": "text", "text": _lines(70)}]
    msgs = [user(), call("m"), multi] + msgs
    res = prune_tool_results(msgs, PruneLimits(), tmp_path)
    assert len(res.changes) == 3
    assert MARKER in msgs[5]["content"][0]["output"]
    assert msgs[2]["content"][0]["output"][1] == {"type": "image", "source": {"type": "url", "url": "u"}}


def test_md_reads_and_chat_with_agent_are_exempt(tmp_path):
    text = _lines(300)  # 29,999 bytes
    md = call("md", name="read_file", raw_input='{"file_path": "notes/PLAN.MD"}')
    py = call("py", name="read_file", raw_input='{"file_path": "main.py"}')
    agent = call("ag", name="chat_with_agent")
    msgs = [user(), md, result(("md", text), name="read_file"), py, result(("py", text), name="read_file"),
            agent, result(("ag", text), name="chat_with_agent"), say(), say(), say()]
    prune_tool_results(msgs, PruneLimits(), tmp_path)
    assert msgs[2]["content"][0]["output"][0]["text"] == text
    assert MARKER in msgs[4]["content"][0]["output"][0]["text"]
    assert msgs[6]["content"][0]["output"][0]["text"] == text


def test_single_line_output_always_gets_a_notice(tmp_path):
    # QwenPaw cuts this silently and orphans the offload file; we say where the rest is
    text = "q" * 10000
    msgs = _conversation(text)
    res = prune_tool_results(msgs, PruneLimits(), tmp_path)
    out = msgs[2]["content"][0]["output"][0]["text"]
    assert out.startswith("q" * 3000 + MARKER)
    assert _numbers(out)["total_lines"] == 1 and str(res.offloads[0].path) in out


def test_second_run_changes_nothing(tmp_path):
    msgs = _conversation(_lines(200), _lines(700))
    first = prune_tool_results(msgs, PruneLimits(), tmp_path)
    assert len(first.changes) == 2
    again = copy.deepcopy(msgs)
    second = prune_tool_results(again, PruneLimits(), tmp_path)
    assert not second.changes and not second.offloads and again == msgs


def test_a_recent_output_that_becomes_old_is_recut_without_a_new_file(tmp_path):
    msgs = _conversation("small", _lines(700))  # 69,999 bytes: cut to 50,000 while recent
    first = prune_tool_results(msgs, PruneLimits(), tmp_path)
    path = str(first.offloads[0].path)
    msgs += [say(), user(), say()]  # now it is old
    second = prune_tool_results(msgs, PruneLimits(), tmp_path)
    out = msgs[5]["content"][0]["output"][0]["text"]
    assert [c.kind for c in second.changes] == ["re-truncated"] and not second.offloads
    assert _numbers(out) == {"total_lines": 700, "start_line": 1, "max_bytes": 3000, "read_from": 31}
    assert path in out and len(out.split(MARKER)[0].encode()) == 3000


def test_trailing_run_of_tool_results_widens_the_recent_window(tmp_path):
    text = _lines(100)
    msgs = [user(), call("a", "b", "c"), result(("a", text)), result(("b", text)), result(("c", text))]
    assert not prune_tool_results(msgs, PruneLimits(recent_n=1), tmp_path).changes


@hsettings(max_examples=150, deadline=None)
@given(st.text(min_size=0, max_size=400), st.integers(1, 300))
def test_cut_is_the_longest_valid_prefix(text, limit):
    text = text.encode("utf-8", "ignore").decode("utf-8", "ignore") if text else text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return
    cut = cut_utf8(text, limit)
    assert text.startswith(cut) and len(cut.encode()) <= limit
    if len(cut) < len(text):
        assert len(text[: len(cut) + 1].encode()) > limit


@hsettings(max_examples=80, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=120), min_size=1, max_size=80),
       st.integers(100, 1500))
def test_any_output_is_cut_once_consistently(lines, old_max):
    import tempfile

    text = "\n".join(lines)
    with tempfile.TemporaryDirectory() as tmp:
        limits = PruneLimits(old_max_bytes=old_max)
        msgs = _conversation(text)
        res = prune_tool_results(msgs, limits, Path(tmp))
        out = msgs[2]["content"][0]["output"][0]["text"]
        if len(text.encode()) <= old_max + 100 or MARKER in text:
            assert out == text or MARKER in text
            return
        head = out.split(MARKER, 1)[0]
        assert text.startswith(head) and len(head.encode()) <= old_max
        nums = _numbers(out)
        assert nums["total_lines"] == text.count("\n") + 1 and nums["max_bytes"] == old_max
        assert 1 <= nums["read_from"] <= nums["total_lines"]
        assert res.offloads[0].text == text
        again = copy.deepcopy(msgs)
        assert not prune_tool_results(again, limits, Path(tmp)).changes and again == msgs
