"""A numpy forward pass for BERT-family sentence-transformers models (MiniLM and friends).

Why: `import sentence_transformers` alone costs ~5 s in a cold process (environment.md §3), which would
blow the 3 s budget of a hybrid query. A query is a handful of tokens, so numpy + the Rust `tokenizers`
package + safetensors answer it in well under a second with the same weights. tests/core/index/test_index_embedders.py
checks the vectors against sentence-transformers itself.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


def _erf(x: Any) -> Any:
    """Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf and scipy costs another import."""
    import numpy as np

    sign = np.sign(x)
    ax = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * ax)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-ax * ax))


class NumpyBert:
    def __init__(self, model_dir: Path) -> None:
        import numpy as np
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        self.config = json.loads((model_dir / "config.json").read_text())
        if self.config.get("model_type") != "bert" or self.config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"{model_dir}: not a BERT model with gelu activation")
        st_config_path = model_dir / "sentence_bert_config.json"
        st_config = json.loads(st_config_path.read_text()) if st_config_path.exists() else {}
        self.max_seq_length = int(st_config.get("max_seq_length", 256))
        pooling_path = model_dir / "1_Pooling" / "config.json"
        pooling = json.loads(pooling_path.read_text()) if pooling_path.exists() else {"pooling_mode_mean_tokens": True}
        if not pooling.get("pooling_mode_mean_tokens"):
            raise ValueError(f"{model_dir}: only mean pooling is supported by the numpy runtime")
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_seq_length)
        weights = load_file(str(model_dir / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v.astype(np.float32, copy=False) for k, v in weights.items()}
        self.heads = int(self.config["num_attention_heads"])
        self.eps = float(self.config.get("layer_norm_eps", 1e-12))
        self.layers = int(self.config["num_hidden_layers"])

    def _layer_norm(self, x: Any, prefix: str) -> Any:
        import numpy as np

        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[prefix + ".weight"] + self.w[prefix + ".bias"]

    def _dense(self, x: Any, prefix: str) -> Any:
        return x @ self.w[prefix + ".weight"].T + self.w[prefix + ".bias"]

    def encode(self, texts: list[str]) -> Any:
        """Mean-pooled, L2-normalised float32 rows, like SentenceTransformer.encode(normalize_embeddings=True)."""
        import numpy as np

        encodings = self.tokenizer.encode_batch(list(texts))
        out = np.zeros((len(texts), int(self.config["hidden_size"])), dtype=np.float32)
        # Batch texts of similar length together so padding stays small.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), 16):
            batch = order[start:start + 16]
            length = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), length), dtype=np.int64)
            mask = np.zeros((len(batch), length), dtype=np.float32)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1.0
            out[batch] = self._forward(ids, mask)
        return out

    def _forward(self, ids: Any, mask: Any) -> Any:
        import numpy as np

        w = self.w
        b, n = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = self._layer_norm(x, "embeddings.LayerNorm")
        head_dim = x.shape[-1] // self.heads
        bias = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(t: Any) -> Any:
                return t.reshape(b, n, self.heads, head_dim).transpose(0, 2, 1, 3)

            q = split(self._dense(x, p + ".attention.self.query"))
            k = split(self._dense(x, p + ".attention.self.key"))
            v = split(self._dense(x, p + ".attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(head_dim)) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(b, n, -1)
            x = self._layer_norm(x + self._dense(ctx, p + ".attention.output.dense"), p + ".attention.output.LayerNorm")
            h = self._dense(x, p + ".intermediate.dense")
            h = 0.5 * h * (1.0 + _erf(h / np.float32(math.sqrt(2.0))))
            x = self._layer_norm(x + self._dense(h, p + ".output.dense"), p + ".output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
