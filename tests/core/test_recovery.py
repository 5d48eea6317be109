"""The tolerant reading layer: counting decoder, surrogate fixing, document splitting, salvage after damage."""

from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from bench.generators.corruption import item_spans
from qwenmem.core import recovery
from qwenmem.core.salvage_documents import split_documents
from qwenmem.core.repair.encoding import decode_counting, replace_surrogates
from qwenmem.core.repair.diagnose import diagnose
from qwenmem.core.session_model.tolerant_json import tolerant_parse
from repair_fixtures import TRUNCATED_BACKUP, WIKI


def test_decoder_counts_every_replacement_and_keeps_bom_apart():
    decoded = decode_counting(b"\xef\xbb\xbf" + b'ab\xffcd\xc3')
    assert decoded.bom
    assert decoded.text == "ab\ufffdcd\ufffd"
    assert decoded.invalid_offsets == [5, 8]  # offsets in the file, BOM included


def test_encoded_lone_surrogate_is_read_like_surrogatepass():
    decoded = decode_counting('"x'.encode() + b"\xed\xa0\x80" + b'y"')
    assert decoded.text == '"x\ud800y"' and decoded.invalid_count == 0 and decoded.encoded_surrogates == 1


def test_surrogates_replaced_in_values_and_keys_and_pairs_joined():
    fixed = replace_surrogates({"k\udc00": ["a\ud83d", "\ud83d\ude00", {"n": 1}]})
    assert fixed.value == {"k\ufffd": ["a\ufffd", "😀", {"n": 1}]}
    assert (fixed.lone, fixed.joined) == (2, 1)
    clean = {"a": ["b"]}
    assert replace_surrogates(clean).value is clean


def test_a_cut_document_never_swallows_the_next_one():
    whole = WIKI.read_text(encoding="utf-8")
    cut = whole[: len(whole) // 2]  # cut inside some string: its quote would otherwise pair with the next doc's
    split = split_documents(cut + whole)
    assert [d.complete for d in split.docs] == [False, True]
    assert split.docs[1].start == len(cut) and split.docs[1].end == len(cut) + len(whole)
    assert json.loads(whole) == split.docs[1].value


def test_real_truncated_backup_yields_its_183_complete_messages():
    d = diagnose(TRUNCATED_BACKUP.read_bytes())
    assert d.classes == ["truncated"]
    msgs = d.session.messages()
    assert len(msgs) == 183  # user 61 / assistant 91 / system 31, all marked "compressed"
    assert [sum(m["role"] == r for m in msgs) for r in ("user", "assistant", "system")] == [61, 91, 31]
    assert all(marks == ["compressed"] for _, marks in d.session.content)


def test_salvage_text_keeps_working_for_sessions_show():
    text = TRUNCATED_BACKUP.read_text(encoding="utf-8", errors="surrogatepass")
    salvage = recovery.salvage_text(text)
    assert salvage.session is not None and salvage.messages_recovered == 183


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20)


@given(json_values, st.integers(min_value=0, max_value=400))
@settings(max_examples=200, deadline=None)
def test_tolerant_parse_never_raises_and_returns_whole_values_intact(value, cut):
    text = json.dumps(value, ensure_ascii=False)
    parsed = tolerant_parse(text[:cut])
    if cut >= len(text):
        assert parsed.complete and parsed.value == value


_WIKI_BYTES = WIKI.read_bytes()
_WIKI_DOC = json.loads(_WIKI_BYTES)
_WIKI_SPANS = item_spans(_WIKI_BYTES, _WIKI_DOC)


@given(st.integers(min_value=1, max_value=len(_WIKI_BYTES) - 1))
@settings(max_examples=60, deadline=None)
def test_truncation_anywhere_keeps_exactly_the_complete_messages(cut):
    d = diagnose(_WIKI_BYTES[:cut])
    expected = [item for item, (_, end) in zip(_WIKI_DOC["agent"]["memory"]["content"], _WIKI_SPANS) if end <= cut]
    got = d.session.content if d.session is not None else []
    assert got == expected
