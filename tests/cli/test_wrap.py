"""Wrapping for people (qwenmem/cli/wrap.py): by display width, CJK between characters, kinsoku, hanging indents.
Properties over random CJK/ASCII mixes, and the real Chinese corpus files at 80 columns."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import CORPUS_REAL, corpus_params
from qwenmem.cli.wrap import CLOSING, OPENING, list_hang, wrap, width_of

CJK = "数据库连接超时用户在上讨论了订单服务无法写入的问题小红书运营日本語のテキストかなカナ한국어"
PUNCT_CLOSE = "。，、）」』】！？：；"
PUNCT_OPEN = "（「『【"
WORDS = ["pgbouncer", "ECONNREFUSED", "Berlin", "hotel", "a", "max_connections", "10.0.3.7:5432", "v2.py"]


def _token():
    return st.one_of(st.sampled_from(list(CJK)), st.sampled_from(WORDS), st.sampled_from([" ", " ", "  "]),
                     st.sampled_from(list(PUNCT_CLOSE)).map(lambda p: "字" + p),
                     st.sampled_from(list(PUNCT_OPEN)).map(lambda p: p + "字"))


mixes = st.lists(_token(), min_size=0, max_size=120).map("".join)


CJK_CLOSING = {ch for ch in CLOSING if ord(ch) > 0x7F}  # ".txt" after a space may start a line; "。" never
CJK_OPENING = {ch for ch in OPENING if ord(ch) > 0x7F}


def _violations(lines: list[str], hang: str) -> list[str]:
    bad = []
    for k, line in enumerate(lines):
        body = line[len(hang):] if k else line
        if k and body[:1] in CJK_CLOSING:
            bad.append(f"line {k} starts with {body[:1]!r}: {line!r}")
        if k + 1 < len(lines) and line.rstrip()[-1:] in CJK_OPENING:
            bad.append(f"line {k} ends with {line.rstrip()[-1:]!r}: {line!r}")
    return bad


@settings(max_examples=300, deadline=None)
@given(text=mixes, width=st.integers(min_value=16, max_value=100), hang=st.sampled_from(["", "  ", "      "]))
def test_no_line_too_wide_no_kinsoku_violation_nothing_lost(text, width, hang):
    lines = wrap(text, width, hang=hang)
    assert all(width_of(line) <= width for line in lines), lines
    assert _violations(lines, hang) == []
    assert all(line.startswith(hang) for line in lines[1:])
    # only the spaces at the breaks (and at the end) go: every other character is kept, in order
    body = "".join(line[len(hang):] if k else line for k, line in enumerate(lines))
    assert body.replace(" ", "") == text.replace(" ", "")


@settings(max_examples=150, deadline=None)
@given(text=mixes, width=st.integers(min_value=20, max_value=100))
def test_latin_words_are_never_split_when_they_fit(text, width):
    lines = wrap(text, width)
    joined = " ".join(lines)
    for word in WORDS:
        if word in text.split():  # a word standing alone between spaces stays whole
            assert word in joined.split() or any(word in line for line in lines), (word, lines)


def test_text_stays_beside_a_checkbox_and_a_stop_never_starts_a_line():
    item = ("- [x] 根据用户提供的示例，明确了正确的市场结构划分逻辑：忽略短期波动，关注关键峰谷点。"
            "创建了新版市场结构分析器")
    lines = wrap(item, 40, lists=True)
    assert lines[0].startswith("- [x] 根据") and all(line.startswith("      ") for line in lines[1:]), lines
    assert _violations(lines, "      ") == []
    assert list_hang("  1. 第一") == "     " and list_hang("text") == ""


def test_a_warning_breaks_between_words_with_a_hanging_indent():
    text = ("warning: 1 damaged backup copy(ies), which `repair --all` leaves alone; name one to check it: "
            "`qwenmem sessions repair main_main.json.backup_20260316_203609 --check`")
    lines = wrap(text, 60, hang="  ")
    assert all(width_of(line) <= 60 for line in lines)
    assert "--check`" in lines[-1] and not any(line.rstrip().endswith("--c") for line in lines)
    assert " ".join(line.strip() for line in lines) == text


def _chinese_corpus_texts():
    paths = sorted(p for p in CORPUS_REAL.rglob("*.md")) if CORPUS_REAL.is_dir() else []
    return [p for p in paths if any("\u4e00" <= ch <= "\u9fff" for ch in p.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("path", corpus_params(_chinese_corpus_texts(), ids=lambda p: p.parent.parent.name[:20]
                                               + "/" + p.name))
def test_the_real_chinese_corpus_wraps_cleanly_at_80_columns(path):
    text = path.read_text(encoding="utf-8")
    for para in text.splitlines():
        lines = wrap(para, 80, lists=True)
        hang = list_hang(para)
        assert all(width_of(line) <= 80 for line in lines), lines
        assert _violations(lines, hang) == [], lines
        assert "".join(line[len(hang):] if k else line for k, line in enumerate(lines)).replace(" ", "") == \
            para.replace(" ", "")
