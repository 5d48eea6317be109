"""`qwenmem reindex`: build or refresh the search index in <workspace>/.qwenmem/index/ (the library operation:
qwenmem/core/ops/reindex.py)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Optional, cast

import typer

from qwenmem.cli import output
from qwenmem.cli.choices import Embedder
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import AgentOpt, DryRunFlag, JsonFlag, QuietFlag, WorkspaceOpt
from qwenmem.cli.progress import progress_callback
from qwenmem.cli.errors import ExitCode
from qwenmem.cli.result import CommandResult, document_of
from qwenmem.cli.runner import command
from qwenmem.core.ops import reindex as reindex_op

EmbedderOpt = Annotated[Optional[Embedder], typer.Option(
    "--embedder", help="auto (QwenPaw's embedding endpoint if configured, else a local model), local, openai or none. "
    "Default: whatever the index was built with.")]
ModelOpt = Annotated[Optional[str], typer.Option(
    "--model", help="Embedding model: a local directory, a cached Hugging Face name, or the openai model name.")]

#: parameters of the command function that are not options of the operation
NOT_OPTIONS = frozenset({"ctx", "quiet", "json_out", "workspace", "agent"})


def register(app: typer.Typer) -> None:
    command(app, "reindex")(reindex_cmd)


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
    verify: Annotated[bool, typer.Option("--verify", help="Re-read and hash every file, also those whose size and "
                                         "mtime look unchanged (catches an edit that restored the mtime).")] = False,
    dry_run: DryRunFlag = False,
    json_out: JsonFlag = False,
    quiet: QuietFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """Build or update the search index in <workspace>/.qwenmem/index/ (never QwenPaw's file_store/).

    Incremental: unchanged files are skipped, unchanged chunks keep their vectors, deleted files drop out, and a
    changed embedding model re-embeds everything (with a notice). A crash leaves the previous index in use.

    Examples:

      qwenmem reindex

      qwenmem reindex --sources memory,dialog --recursive

      qwenmem reindex --embedder none --full --json
    """
    options = options_from(dict(locals()))
    from qwenmem.core.index import index_exists

    ws = open_workspace(ctx, workspace, agent)
    had_index = index_exists(ws)
    try:
        with progress_callback(quiet or json_out) as progress:
            outcome = reindex_op.run(ws, options, progress)
    except KeyboardInterrupt as exc:  # the new generation is already removed; say what the user still has
        from qwenmem.cli import signals

        raise typer.Exit(ExitCode(signals.report(exc, "the index was not changed; the previous index is still in "
                                                 "use" if had_index else "no index was written"))) from None
    result = outcome.data
    # a partial success (chunks left without vectors): under --quiet still the one line that says why
    partial = outcome.status == "problems"
    warnings = outcome.warnings if not (quiet and partial) else outcome.warnings[-1:]
    document = dataclasses.replace(outcome.with_data(document_of(result, reindex_op.OMITTED_FIELDS)),
                                   warnings=warnings)
    return CommandResult.of(document, warnings_as_notes=True, warnings_first=True, quiet=quiet and not partial,
                            render=None if quiet else lambda: _render(result, options.dry_run))


def options_from(params: dict[str, Any]) -> reindex_op.Options:
    """The parsed flags (as the command function receives them, for fleet too) as the operation's options."""
    words = {k: v for k, v in params.items() if k not in NOT_OPTIONS}
    embedder = words.pop("embedder")
    return reindex_op.Options(**words, embedder=cast(reindex_op.Embedder, embedder.value) if embedder else None)


def _render(result: Any, dry_run: bool) -> None:
    changes = (f"{len(result.files_added)} added, {len(result.files_changed)} changed, "
               f"{len(result.files_removed)} removed of {result.files_total} file(s)"
               + (f", {len(result.files_skipped)} skipped" if result.files_skipped else ""))
    if result.up_to_date:
        output.out().print(f"index is up to date ({result.files_total} file(s), {result.chunks_total} chunks)")
        return
    verb = "would index" if dry_run else "indexed"
    output.para(output.escape(f"{verb}: {changes}; {result.chunks_total} chunks ({result.chunks_new} new); "
                              f"{result.pieces_embedded} piece(s) embedded, {result.pieces_reused} reused; "
                              f"embedder {result.embedder or 'none'}; {result.reason}; {result.seconds:.1f} s"),
                hang="  ")
