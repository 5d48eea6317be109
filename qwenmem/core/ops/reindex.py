"""`reindex`: build or refresh the search index in <workspace>/.qwenmem/index/ (never QwenPaw's file_store/)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.index.reindexing import ReindexResult

Embedder = Literal["auto", "local", "openai", "none"]  # qwenmem.core.index.embedders.BACKENDS
#: fields of ReindexResult that are not in the document: the notices are the outcome's warnings
OMITTED_FIELDS = frozenset({"notices"})


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem reindex` but the output's (--quiet, --json), with the CLI's defaults."""

    full: bool = False
    sources: str | None = None  # comma list: memory, dialog, sessions, all; None: what the index already covers
    recursive: bool | None = None  # None: QwenPaw's recursive_file_watcher
    embedder: Embedder | None = None  # None: whatever the index was built with
    model: str | None = None
    verify: bool = False
    dry_run: bool = False


def run(ws: Workspace, options: Options,
        progress: Callable[[str, int, int], None] | None = None) -> Outcome[ReindexResult]:
    """Chunks left without vectors (the embedder failed) is a partial success: the full text is indexed and the
    next run embeds them; problems (exit 1)."""
    from qwenmem.core.index import reindex
    from qwenmem.core.settings import load_settings

    with recording() as log:
        result = reindex(ws, load_settings(ws), full=options.full, sources=options.sources, progress=progress,
                         recursive=options.recursive, backend=options.embedder, model=options.model,
                         dry_run=options.dry_run, verify=options.verify)
    return Outcome("problems" if result.chunks_without_vectors else "ok", result, tuple(result.notices),
                   events=log.events)
