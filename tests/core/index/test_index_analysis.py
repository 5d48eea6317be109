"""The analyzer, through a real Whoosh index: CJK substrings, exact identifiers, no query syntax errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qwenmem.core.index import fulltext
from qwenmem.core.index.analysis import spans, stem

DOCS = {
    "c1": "生产环境的数据库连接超时，导致订单服务无法写入。",
    "c2": "Deploy failed with ECONNREFUSED on replica-3; see handleWebSocketReconnect in ws_client.py",
    "c3": "The user prefers short answers and researching adoption agencies.",
    "c4": "向量检索召回率下降，需要重新评估 embedding 模型。",
    "c5": "max_batch_size was raised to 64 for the nightly job",
}


@pytest.fixture(scope="module")
def ix_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("ft") / "fulltext"
    ix = fulltext.create(d)
    fulltext.write(ix, set(), [{"chunk_id": k, "path": f"memory/{k}.md", "lines": (1, 1), "text": v}
                               for k, v in DOCS.items()])
    return d


def found(ix_dir, query):
    return [cid for cid, _ in fulltext.search(ix_dir, query, 10)]


@pytest.mark.parametrize("query, expected", [
    ("数据库", "c1"),            # environment.md: the default analyzer cannot find this inside 数据库连接超时
    ("超时", "c1"),              # 2-character words (FTS5 trigram misses these)
    ("数据库连接超时", "c1"),
    ("召回率", "c4"),
    ("ECONNREFUSED", "c2"),
    ("econnrefused", "c2"),
    ("handleWebSocketReconnect", "c2"),
    ("reconnect", "c2"),        # a camelCase part
    ("max_batch_size", "c5"),
    ("batch", "c5"),            # a snake_case part
    ("research", "c3"),          # stem of "researching"
    ("embedding 模型", "c4"),    # mixed Chinese and English
])
def test_finds_expected_chunk_first(ix_dir, query, expected):
    assert found(ix_dir, query)[:1] == [expected]


def test_exact_identifier_does_not_match_unrelated_docs(ix_dir):
    assert found(ix_dir, "handleWebSocketReconnect") == ["c2"]
    assert found(ix_dir, "ECONNREFUSED") == ["c2"]


def test_unrelated_cjk_not_found(ix_dir):
    assert found(ix_dir, "天气预报") == []


@pytest.mark.parametrize("query", ["foo(", "AND", "OR NOT", "\"unclosed", "title:x", "*", "a:b:c", "((", "-", "，。"])
def test_query_syntax_characters_never_fail(ix_dir, query):
    fulltext.search(ix_dir, query, 10)  # must not raise


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "Zs")), max_size=80))
def test_spans_point_at_the_text_they_name(text):
    for term, start, end, is_part in spans(text):
        assert 0 <= start < end <= len(text)
        piece = text[start:end]
        if not is_part:
            assert piece.lower() == term
        else:  # an identifier part, or the Porter stem of the whole word
            assert term in (piece.lower(), stem(piece.lower()))
