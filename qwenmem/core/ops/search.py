"""`search`: hybrid full-text + vector search over the memory files, the index brought up to date first."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from qwenmem.core.errors import UsageError
from qwenmem.core.events import recording
from qwenmem.core.index.vocabulary import Fusion as Fusion  # re-exported: the options name their words
from qwenmem.core.index.vocabulary import SearchMode
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

Mode = SearchMode  # the words of --mode and --fusion, defined with the search itself
#: how much of each hit's text the result holds: the snippet only, the whole chunk, or N lines around the best one
Context = Literal["snippet", "full"] | int
#: fields of SearchResult that are not in the document: core's hits, which people's view is drawn from
OMITTED_FIELDS = frozenset({"found"})
MAX_CONTEXT_LINES = 10_000


def parse_context(value: str) -> Context:
    """--context as typed: snippet, full or a number of lines."""
    v = value.strip().lower()
    if v == "full":
        return "full"
    if v == "snippet":
        return "snippet"
    if v.isdigit() and int(v) <= MAX_CONTEXT_LINES:
        return int(v)
    raise UsageError(f"bad --context {value!r}: use snippet, full or a number of lines")


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem search` but the output's (--format, --quiet, --json), with the CLI's defaults.
    `context` defaults to the whole chunk, as with --json (the CLI shows people the snippet)."""

    query: str
    max_results: int = 5
    min_score: float = 0.0
    mode: Mode = "hybrid"
    fusion: Fusion = "weighted"
    vector_weight: float = 0.5
    since: str | None = None
    until: str | None = None
    tags: tuple[str, ...] = ()
    no_reindex: bool = False
    context: Context = "full"

    def __post_init__(self) -> None:
        if isinstance(self.context, int) and not 0 <= self.context <= MAX_CONTEXT_LINES:
            raise UsageError(f"bad --context {self.context!r}: use snippet, full or a number of lines")


@dataclass
class SearchHit:
    path: str
    start_line: int
    end_line: int
    score: float  # the ranking key: never rises down the list (--min-score cuts a tail)
    match_score: float  # this hit's own absolute match (w·calibrated cosine + (1-w)·text score in hybrid)
    text_score: float | None
    vector_score: float | None
    snippet: str
    highlights: list[Any]
    text: str | None  # the whole chunk (--context full, the default with --json); None with --context snippet
    match_line: int
    kind: str | None  # QwenPaw 2.x memory: core (MEMORY.md), note, day_index, daily_log, digest; null for 1.x


@dataclass
class SearchResult:
    """`search --json` result."""

    query: str
    mode: SearchMode
    fusion: Fusion
    embedder: str | None
    count: int
    hits: list[SearchHit]
    found: Any = field(default=None, repr=False)  # qwenmem.core.index.search.SearchResult (not in the document)


def run(ws: Workspace, options: Options,
        progress: Callable[[str, int, int], None] | None = None) -> Outcome[SearchResult]:
    """Like grep, nothing found is problems (exit 1), so `search X && ...` can branch on it; the result is still
    the (empty) list of hits, not an error. `progress` hears the reindex that comes first."""
    from qwenmem.core.index.search import search
    from qwenmem.core.settings import load_settings

    with recording() as log:
        result = search(ws, load_settings(ws), options.query, mode=options.mode, fusion=options.fusion,
                        max_results=options.max_results, min_score=options.min_score, since=options.since,
                        until=options.until, tags=list(options.tags) or None, vector_weight=options.vector_weight,
                        auto_reindex=not options.no_reindex, progress=progress)
    hits = [SearchHit(h.path, h.start_line, h.end_line, h.score, h.match_score, h.text_score, h.vector_score,
                      h.snippet, h.highlights, _text(h, options.context), h.match_line, h.kind) for h in result.hits]
    data = SearchResult(result.query, result.mode, result.fusion, result.embedder, len(hits), hits, result)
    warnings = [*result.notices, *([] if hits else [f"no results for {options.query!r}"])]
    return Outcome("ok" if hits else "problems", data, tuple(warnings), events=log.events)


def _text(hit: Any, shown: Context) -> str | None:
    from qwenmem.core.index.search import context_lines

    if shown == "snippet":
        return None
    if shown == "full":
        return str(hit.text)
    return "\n".join(line for _, line in context_lines(hit, shown))
