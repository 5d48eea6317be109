"""qwenmem's own search index over the workspace's memory files (`<ws>/.qwenmem/index/`).

The public entry points other modules rely on. Heavy libraries (whoosh, numpy, torch, openai) are imported
inside the functions that need them, so importing this package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover
    from qwenmem.core.index.embedders import Embedder
    from qwenmem.core.index.reindexing import ReindexResult
    from qwenmem.core.settings import Settings
    from qwenmem.core.workspace import Workspace


def reindex(ws: "Workspace", settings: "Settings", *, full: bool = False, sources: str | list[str] | None = None,
            progress: Callable[[str, int, int], None] | None = None, **options: Any) -> "ReindexResult":
    """Bring the index up to date (incremental unless `full`); takes the index lock itself."""
    from qwenmem.core.index.reindexing import run_reindex

    return run_reindex(ws, settings, full=full, sources=sources, progress=progress, **options)


def load_embedder(ws: "Workspace", settings: "Settings", backend: str | None = None,
                  model: str | None = None) -> "Embedder | None":
    """An embedder with `.model_id` and `.embed(texts) -> float32 L2-normalised rows`, or None if none is usable."""
    from qwenmem.core.index.embedders import load_embedder as _load

    return _load(ws, settings, backend=backend, model=model).embedder


def index_embedder(ws: "Workspace", settings: "Settings") -> "Embedder | None":
    """The embedder the current index was built with, or None when there is no index or it has no vectors (built
    with --embedder none). Raises ConfigError when that model cannot be loaded any more."""
    from qwenmem.core.index.embedders import recorded_embedder
    from qwenmem.core.index.store import Manifest, current_generation

    gen = current_generation(ws)
    manifest = Manifest.load(gen) if gen is not None else None
    return recorded_embedder(ws, settings, manifest.embedder or {}) if manifest is not None else None


def index_exists(ws: "Workspace") -> bool:
    from qwenmem.core.index.store import current_generation

    return current_generation(ws) is not None
