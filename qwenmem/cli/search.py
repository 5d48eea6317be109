"""`qwenmem search` and `qwenmem reindex`: hybrid full-text + vector search over the memory files."""

from __future__ import annotations

import contextlib
from typing import Annotated, Optional

import typer

from qwenmem.cli import output
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import AgentOpt, DryRunFlag, JsonFlag, QuietFlag, WorkspaceOpt

EmbedderOpt = Annotated[Optional[str], typer.Option(
    "--embedder", help="auto (QwenPaw's embedding endpoint if configured, else a local model), local, openai or none. "
    "Default: whatever the index was built with.")]
ModelOpt = Annotated[Optional[str], typer.Option(
    "--model", help="Embedding model: a local directory, a cached Hugging Face name, or the openai model name.")]


def register(app: typer.Typer) -> None:
    app.command("search")(search_cmd)
    app.command("reindex")(reindex_cmd)


@contextlib.contextmanager
def _progress_callback(quiet: bool):
    """A Rich progress bar on stderr driven by core's (stage, done, total) callbacks, created on first use so a
    search that needs no indexing does not pay for importing rich.progress."""
    state: dict = {"prog": None, "tasks": {}}

    def callback(stage: str, done: int, total: int) -> None:
        if quiet:
            return
        if state["prog"] is None:
            state["prog"], _, _ = output.progress("indexing", None, quiet)
            state["prog"].start()
        tasks = state["tasks"]
        if stage not in tasks:
            tasks[stage] = state["prog"].add_task(stage, total=total)
        state["prog"].update(tasks[stage], completed=done, total=total)

    try:
        yield callback
    finally:
        if state["prog"] is not None:
            state["prog"].stop()


def search_cmd(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for (words, a phrase, an identifier, Chinese text).")],
    max_results: Annotated[int, typer.Option("--max-results", "-n", min=1, max=1000, help="Show at most N results.")] = 5,
    min_score: Annotated[float, typer.Option("--min-score", min=0.0, max=1.0,
                                             help="Drop results whose score is below this (absolute, 0-1: the same scale for every query).")] = 0.0,
    mode: Annotated[str, typer.Option("--mode", help="hybrid, text (BM25 only) or vector (embeddings only).")] = "hybrid",
    fusion: Annotated[str, typer.Option("--fusion", help="weighted (normalised scores) or rrf (reciprocal rank).")] = "weighted",
    vector_weight: Annotated[float, typer.Option("--vector-weight", min=0.0, max=1.0,
                                                 help="Weight of the vector side in weighted fusion (the assistant "
                                                 "uses 0.7; 0.5 measured better on LoCoMo).")] = 0.5,
    since: Annotated[Optional[str], typer.Option("--since", help="Only daily logs dated on/after: 2026-05-01 or 7d.")] = None,
    until: Annotated[Optional[str], typer.Option("--until", help="Only daily logs dated on/before: 2026-05-31 or 2w.")] = None,
    no_reindex: Annotated[bool, typer.Option("--no-reindex", help="Search the index as it is, even if stale.")] = False,
    json_out: JsonFlag = False,
    quiet: QuietFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> None:
    """Search the memory files (MEMORY.md, memory/*.md, and whatever `reindex --sources` added).

    A stale index is brought up to date incrementally first (only changed files are re-read and re-embedded);
    --no-reindex searches it as it is, with a warning. Daily-log dates come from the file name.

    Examples:

      qwenmem search "connection timeout"

      qwenmem search 数据库 --mode text -n 10

      qwenmem search ECONNREFUSED --since 7d --json | jq '.result.hits[0]'
    """
    from qwenmem.core.index.search import search
    from qwenmem.core.settings import load_settings

    ws = open_workspace(ctx, workspace, agent)
    settings = load_settings(ws)
    with _progress_callback(quiet or json_out) as progress:
        result = search(ws, settings, query, mode=mode, fusion=fusion, max_results=max_results, min_score=min_score,
                        since=since, until=until, vector_weight=vector_weight, auto_reindex=not no_reindex,
                        progress=progress)
    if json_out:
        if not result.hits:
            result.notices.append(f"no results for {query!r}")
        hits = [{"path": h.path, "start_line": h.start_line, "end_line": h.end_line, "score": h.score,
                 "text_score": h.text_score, "vector_score": h.vector_score, "snippet": h.snippet,
                 "highlights": h.highlights} for h in result.hits]
        output.print_json("search", {"query": result.query, "mode": result.mode, "fusion": result.fusion,
                                     "embedder": result.embedder, "count": len(hits), "hits": hits},
                          warnings=result.notices)
        _exit_if_nothing_found(result)
        return
    if not quiet:
        for n in result.notices:
            output.note(n)
    if not result.hits:
        if not quiet:
            output.note(f"no results for {query!r}")
        _exit_if_nothing_found(result)
        return
    console = output.out()
    for h in result.hits:
        parts = [f"{result.mode} {h.score:.3f}"]
        if h.text_score is not None and result.mode == "hybrid":
            parts.append(f"text {h.text_score:.2f}")
        if h.vector_score is not None and result.mode == "hybrid":
            parts.append(f"vector {h.vector_score:.2f}")
        console.print(f"[bold cyan]{output.escape(h.path)}[/]:{h.start_line}-{h.end_line}  [dim]{' · '.join(parts)}[/]")
        console.print("  " + _highlight(h.snippet, h.highlights))


def _exit_if_nothing_found(result) -> None:
    """Like grep: exit 1 (PROBLEMS) when nothing matched, so `qwenmem search X && ...` works in scripts."""
    if not result.hits:
        from qwenmem.cli.errors import ExitCode

        raise typer.Exit(ExitCode.PROBLEMS)


def _highlight(snippet: str, marks: list[tuple[int, int]]) -> str:
    out, at = [], 0
    for start, end in marks:
        out.append(output.escape(snippet[at:start]))
        out.append(f"[bold yellow]{output.escape(snippet[start:end])}[/]")
        at = end
    out.append(output.escape(snippet[at:]))
    return "".join(out)


def reindex_cmd(
    ctx: typer.Context,
    full: Annotated[bool, typer.Option("--full", help="Rebuild everything (re-chunk and re-embed every file).")] = False,
    sources: Annotated[Optional[str], typer.Option(
        "--sources", help="Comma list: memory (MEMORY.md, memory/*.md), dialog (dialog/*.jsonl), sessions, or all. "
        "Default: what the index already covers (memory at first).")] = None,
    recursive: Annotated[Optional[bool], typer.Option(
        "--recursive/--no-recursive", help="Include memory/**/*.md. Default: QwenPaw's recursive_file_watcher.")] = None,
    embedder: EmbedderOpt = None,
    model: ModelOpt = None,
    dry_run: DryRunFlag = False,
    json_out: JsonFlag = False,
    quiet: QuietFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> None:
    """Build or update the search index in <workspace>/.qwenmem/index/ (never QwenPaw's file_store/).

    Incremental: unchanged files are skipped, unchanged chunks keep their vectors, deleted files drop out, and a
    changed embedding model re-embeds everything (with a notice). A crash leaves the previous index in use.

    Examples:

      qwenmem reindex

      qwenmem reindex --sources memory,dialog --recursive

      qwenmem reindex --embedder none --full --json
    """
    from qwenmem.core.index import reindex
    from qwenmem.core.settings import load_settings

    ws = open_workspace(ctx, workspace, agent)
    settings = load_settings(ws)
    from qwenmem.cli.errors import ExitCode
    from qwenmem.core.index import index_exists

    had_index = index_exists(ws)
    try:
        with _progress_callback(quiet or json_out) as progress:
            result = reindex(ws, settings, full=full, sources=sources, progress=progress, recursive=recursive,
                             backend=embedder, model=model, dry_run=dry_run)
    except KeyboardInterrupt:
        output.err().print("interrupted: the index was not changed; the previous index is still in use" if had_index
                           else "interrupted: no index was written")
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    # Vectors missing (the embedder failed) is a partial success: full text is indexed, the next run adds them.
    partial = ExitCode.PROBLEMS if result.chunks_without_vectors else ExitCode.OK
    if json_out:
        output.print_json("reindex", result, status="problems" if partial else "ok", warnings=result.notices)
        raise typer.Exit(partial)
    if quiet:
        if partial:  # the one line that says why the exit code is 1
            output.note(result.notices[-1])
        raise typer.Exit(partial)
    for n in result.notices:
        output.note(n)
    changes = (f"{len(result.files_added)} added, {len(result.files_changed)} changed, "
               f"{len(result.files_removed)} removed of {result.files_total} file(s)"
               + (f", {len(result.files_skipped)} skipped" if result.files_skipped else ""))
    if result.up_to_date:
        output.out().print(f"index is up to date ({result.files_total} file(s), {result.chunks_total} chunks)")
        return
    verb = "would index" if dry_run else "indexed"
    output.out().print(f"{verb}: {changes}; {result.chunks_total} chunks ({result.chunks_new} new); "
                       f"{result.pieces_embedded} piece(s) embedded, {result.pieces_reused} reused; "
                       f"embedder {result.embedder or 'none'}; {result.reason}; {result.seconds:.1f} s")
    raise typer.Exit(partial)
