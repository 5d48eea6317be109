"""Reindex with a runtime that schedules the bulk job itself (Embedder.embed_bulk, e5_ort.passage_stream): each
block's rows land on their own pieces, in the runtime's order, the progress moves, and an embedder that fails
mid-stream leaves the pieces after it not done (the full-text side is still built) and the stream closed."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from qwenmem.core.errors import LLMError
from qwenmem.core.index.embedders import Embedder
from qwenmem.core.index.reindexing import ReindexResult, embed_pieces


def vector(text: str) -> np.ndarray:
    """A text's own unit vector (from its digest): a row put on another piece would not match."""
    raw = np.frombuffer(hashlib.sha256(text.encode()).digest()[:16], dtype=np.uint8).astype(np.float32) - 127.5
    return raw / np.linalg.norm(raw)


class Streaming(Embedder):
    """Blocks of 3 rows with an empty block between each (as passage_stream yields when a long text is not done)."""

    dim = 16
    model_id = "test:stream"

    def __init__(self, fail_after: int | None = None) -> None:
        self.fail_after = fail_after
        self.closed = False
        self.order: list[str] = []

    def embed_raw(self, texts: list[str]) -> np.ndarray:
        raise AssertionError("a streaming runtime is not called batch by batch")

    def bulk_order(self, texts: list[str]) -> list[int]:
        return sorted(range(len(texts)), key=lambda i: texts[i][::-1])  # not the texts' own order

    def embed_bulk(self, texts):  # type: ignore[no-untyped-def]
        self.order = list(texts)
        return self._blocks(texts)

    def _blocks(self, texts):  # type: ignore[no-untyped-def]
        try:
            for at in range(0, len(texts), 3):
                if self.fail_after is not None and at >= self.fail_after:
                    raise LLMError("the runtime gave up")
                yield np.stack([vector(t) for t in texts[at:at + 3]])
                yield np.zeros((0, self.dim), dtype=np.float32)
        finally:
            self.closed = True


def result() -> ReindexResult:
    return ReindexResult(generation="gen-test", up_to_date=False, full=True, reason="test")


def test_rows_land_on_their_pieces_and_the_progress_moves():
    texts = [f"piece {i} about the garden" for i in range(20)]
    emb, out, steps = Streaming(), result(), []
    vecs, done = embed_pieces(emb, texts, out, lambda what, at, total: steps.append((what, at, total)), np)
    assert emb.order == [texts[i] for i in emb.bulk_order(texts)] != texts  # the runtime got the bulk order
    assert done.all() and out.pieces_embedded == 20 and out.embedding_error is None
    assert all(np.allclose(vecs[i], vector(t)) for i, t in enumerate(texts))
    ats = [at for _, at, _ in steps]
    assert ats == sorted(ats) and ats[-1] == 20 and len(set(ats)) == 7 and {s[2] for s in steps} == {20}
    assert emb.closed


def test_a_runtime_failing_mid_stream_leaves_the_rest_not_done():
    texts = [f"note {i}" for i in range(10)]
    emb, out = Streaming(fail_after=6), result()
    vecs, done = embed_pieces(emb, texts, out, None, np)
    order = emb.bulk_order(texts)
    assert out.embedding_error == "the runtime gave up" and out.pieces_embedded == 6
    assert done[order[:6]].all() and not done[order[6:]].any()
    assert all(np.allclose(vecs[i], vector(texts[i])) for i in order[:6])
    assert not vecs[order[6:]].any()
    assert emb.closed


@pytest.mark.parametrize("seconds", [5.0])
def test_a_search_within_a_time_budget_never_streams(seconds):
    """Search embeds what it can within its budget, call by call (it stops at the deadline): no stream."""

    class Budgeted(Streaming):
        def embed_raw(self, texts: list[str]) -> np.ndarray:
            return np.stack([vector(t) for t in texts])

    emb, out = Budgeted(), result()
    vecs, done = embed_pieces(emb, ["one", "two"], out, None, np, seconds=seconds)
    assert done.all() and emb.order == [] and np.allclose(vecs[1], vector("two"))
