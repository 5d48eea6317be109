"""`qwenmem search`: hybrid full-text + vector search over the memory files (the library operation:
qwenmem/core/ops/search.py; `reindex` is commands/reindex.py)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Optional, cast

import typer

from qwenmem.cli import output
from qwenmem.cli.choices import Fusion, SearchFormat, SearchMode
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import AgentOpt, JsonFlag, QuietFlag, WorkspaceOpt
from qwenmem.cli.progress import progress_callback
from qwenmem.cli.result import CommandResult, document_of
from qwenmem.cli.runner import command
from qwenmem.core.ops import search as search_op
from qwenmem.core.ops.search import SearchHit, SearchResult  # noqa: F401 - the results the JSON contract pins

def register(app: typer.Typer) -> None:
    command(app, "search")(search_cmd)


def search_cmd(
    ctx: typer.Context,
    words: Annotated[list[str], typer.Argument(metavar="QUERY…", help="What to look for: every word left after the "
                                               "options is the query (Berlin hotel, 小红书 运营, an identifier); "
                                               "`--` before a query that starts with a dash.")],
    max_results: Annotated[int, typer.Option("--max-results", "-n", min=1, max=1000, help="Show at most N results.")] = 5,
    min_score: Annotated[float, typer.Option("--min-score", min=0.0, max=1.0,
                                             help="Drop results whose score is below this (absolute, 0-1: the same scale for every query; scores fall down the list, so this cuts a tail).")] = 0.0,
    mode: Annotated[SearchMode, typer.Option("--mode", help="hybrid, text (BM25 only) or vector (embeddings only).")
                    ] = SearchMode.HYBRID,
    fusion: Annotated[Fusion, typer.Option("--fusion", help="weighted (normalised scores), rrf (reciprocal rank) or "
                                           "reme (ReMe 0.4's own fusion, for comparison).")] = Fusion.WEIGHTED,
    vector_weight: Annotated[float, typer.Option("--vector-weight", min=0.0, max=1.0,
                                                 help="Weight of the vector side in weighted fusion (the assistant "
                                                 "uses 0.7; 0.5 measured better on LoCoMo).")] = 0.5,
    since: Annotated[Optional[str], typer.Option("--since", help="Only daily logs and notes dated on/after: 2026-05-01 "
                                                 "or 7d (a 2.x note's date: its front matter, else its folder).")] = None,
    until: Annotated[Optional[str], typer.Option("--until", help="Only daily logs and notes dated on/before: 2026-05-31 "
                                                 "or 2w.")] = None,
    tags: Annotated[Optional[list[str]], typer.Option("--tag", help="Only notes with this front-matter tag "
                                                      "(QwenPaw 2.x; repeatable: any of them).")] = None,
    search_format: Annotated[SearchFormat, typer.Option("--format", help="text (for people) or reme (ReMe 0.4's "
                                                        "memory_search blocks, as the assistant reads them).")
                             ] = SearchFormat.TEXT,
    no_reindex: Annotated[bool, typer.Option("--no-reindex", help="Search the index as it is, even if stale.")] = False,
    context: Annotated[Optional[str], typer.Option(
        "--context", "-C", help="How much of each hit to show: snippet, full (the whole chunk), or a number of lines "
        "around the best line. Default: snippet on the terminal, full with --json.")] = None,
    json_out: JsonFlag = False,
    quiet: QuietFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """Search the memory files (MEMORY.md, memory/*.md, and whatever `reindex --sources` added).

    A stale index is brought up to date incrementally first (only changed files are re-read and re-embedded);
    --no-reindex searches it as it is, with a warning. Daily-log dates come from the file name.

    Examples:

      qwenmem search connection timeout

      qwenmem search 小红书 运营

      qwenmem search 数据库 --mode text -n 10

      qwenmem search ECONNREFUSED --since 7d --json | jq '.result.hits[0]'
    """
    shown = search_op.parse_context(context) if context is not None else "full" if json_out else "snippet"
    options = search_op.Options(" ".join(words), max_results, min_score, cast(search_op.Mode, mode.value),
                                cast(search_op.Fusion, fusion.value), vector_weight, since, until, tuple(tags or ()),
                                no_reindex, shown)
    ws = open_workspace(ctx, workspace, agent)
    with progress_callback(quiet or json_out) as progress:
        outcome = search_op.run(ws, options, progress)
    found = outcome.data.found
    document = outcome.with_data(document_of(outcome.data, search_op.OMITTED_FIELDS))
    # nothing found: "no results" is the last warning, which people read as a note (unless --quiet); ReMe's blocks
    # are what the assistant reads, and say nothing of it
    if search_format == SearchFormat.REME and not json_out and not found.hits:
        document = dataclasses.replace(document, warnings=document.warnings[:-1])
    return CommandResult.of(document, warnings_as_notes=True, warnings_first=True, quiet=quiet,
                            render=lambda: _render_reme(ws, found) if search_format == SearchFormat.REME else
                            _render(found, shown))


def _render_reme(ws: Any, result: Any) -> None:
    """ReMe 0.4's memory_search text on stdout (workspace-relative paths, whole chunks, wikilink neighbours)."""
    from qwenmem.core.index import store
    from qwenmem.core.reme_index import RemeHit, format_memory_search

    gen = store.current_generation(ws)
    manifest = store.Manifest.load(gen) if gen else None
    both = result.mode == "hybrid"
    hits = [RemeHit(h.path, h.start_line, h.end_line, h.score, h.vector_score if both else None,
                    h.text_score if both else None, h.text) for h in result.hits]
    import sys

    sys.stdout.write(format_memory_search(hits, manifest.files if manifest else None) + "\n")


def _render(result: Any, shown: search_op.Context = "snippet") -> None:
    console = output.out()
    for h in result.hits:
        parts = [f"{result.mode} {h.score:.3f}"]
        if h.text_score is not None and result.mode == "hybrid":
            parts.append(f"text {h.text_score:.2f}")
        if h.vector_score is not None and result.mode == "hybrid":
            parts.append(f"vector {h.vector_score:.2f}")
        from qwenmem.core.reme_index import KIND_LABELS

        label = f"  [magenta]{KIND_LABELS[h.kind]}[/]" if h.kind in KIND_LABELS else ""
        console.print(f"[bold cyan]{output.escape(h.path)}[/]:{h.start_line}-{h.end_line}{label}  "
                      f"[dim]{' · '.join(parts)}[/]")
        if shown == "snippet":
            output.para("  " + _highlight(h.snippet, h.highlights), "  ")
            continue
        from qwenmem.core.index.search import context_lines

        lines = context_lines(h, 10**9) if shown == "full" else context_lines(h, int(shown))
        for number, line in lines:
            marker = ">" if number == h.match_line else " "
            console.print(f"  [dim]{number:>5}{marker}[/] {output.escape(line)}")


def _highlight(snippet: str, marks: list[tuple[int, int]]) -> str:
    out, at = [], 0
    for start, end in marks:
        out.append(output.escape(snippet[at:start]))
        out.append(f"[bold yellow]{output.escape(snippet[start:end])}[/]")
        at = end
    out.append(output.escape(snippet[at:]))
    return "".join(out)
