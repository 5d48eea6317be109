"""What dream needs of an embedding model: one vector per text. qwenmem.core.index.embedders.Embedder is one; tests
and benches pass their own. numpy is imported for the type only, so a model-free dream never loads it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


class TextEmbedder(Protocol):
    def embed(self, texts: list[str]) -> NDArray[np.float32]:
        """One L2-normalised float32 row per text, in order (a cosine is then a dot product)."""
        ...
