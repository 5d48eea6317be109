"""Incremental, crash-safe (re)indexing. See store.py for the layout and the generation switch."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from qwenmem.core.fsio import as_domain_error, exclusive_lock
from qwenmem.core.index import fulltext, piecing, store
from qwenmem.core.index.chunking import Chunk, ChunkSpec, chunk_text
from qwenmem.core.index.embedders import EmbedderChoice, chosen_by_default, load_embedder, rank
from qwenmem.core.index.sources import SkippedSource, discover, parse_sources, read_source

Progress = Callable[[str, int, int], None]


@dataclass
class ReindexResult:
    generation: str | None
    up_to_date: bool
    full: bool
    reason: str
    files_total: int = 0
    files_added: list[str] = field(default_factory=list)
    files_changed: list[str] = field(default_factory=list)
    files_removed: list[str] = field(default_factory=list)
    files_skipped: list[str] = field(default_factory=list)  # too large, binary or unreadable (reasons in notices)
    chunks_total: int = 0
    chunks_new: int = 0
    pieces_embedded: int = 0
    pieces_reused: int = 0
    chunks_without_vectors: int = 0  # the embedder failed (endpoint down): full text only until the next reindex
    embedding_error: str | None = None
    embed_seconds: float = 0.0
    embedder: str | None = None
    # The runtime that embedded this run's pieces, e.g. "ort-int8" (issue 29; core/index/e5_kernel.py), or None
    embedding_kernel: str | None = None
    sources: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    dry_run: bool = False
    seconds: float = 0.0


@dataclass
class _Plan:
    previous: store.Manifest | None
    prev_gen: Path | None
    sources: list[str]
    recursive: bool
    choice: EmbedderChoice
    embedder_spec: dict[str, Any]
    reuse_text: bool
    reuse_vectors: bool
    reason: str

    @property
    def prev_dir(self) -> Path:
        """The previous generation, where the plan reuses it (only then is it asked for)."""
        assert self.prev_gen is not None, "internal: no previous generation"
        return self.prev_gen


MAX_SKIP_NOTICES = 5


def _skip_notice(result: ReindexResult, text: str) -> None:
    """One notice per skipped file, up to a few; then a count (a linked-away memory/ would skip every file)."""
    if len(result.files_skipped) <= MAX_SKIP_NOTICES:
        result.notices.append(text)
    elif len(result.files_skipped) == MAX_SKIP_NOTICES + 1:
        result.notices.append("more files skipped: `files_skipped` in `qwenmem reindex --json` lists them all")


def chunk_id(c: Chunk) -> str:
    return hashlib.sha256(f"{c.path}:{c.start_line}:{c.end_line}:{c.hash}".encode()).hexdigest()[:24]


def _choose_embedder(ws: Any, settings: Any, previous: store.Manifest | None, backend: str | None,
                     model: str | None) -> EmbedderChoice:
    """The embedder asked for; else the index's own, unless the default chose that one and a better one is
    available now (an index built before a model was installed gets vectors once one is)."""
    if backend is None and model is None and previous is not None and previous.embedder.get("backend"):
        spec = previous.embedder
        recorded = load_embedder(ws, settings, backend=spec.get("backend"), model=spec.get("model"))
        if chosen_by_default(spec):
            best = load_embedder(ws, settings)
            if rank(best) > rank(recorded):
                return best
            recorded.spec["default"] = True  # still the default's pick
        return recorded
    return load_embedder(ws, settings, backend=backend, model=model)


def _plan(ws: Any, settings: Any, full: bool, sources: Any, recursive: bool | None, backend: str | None,
          model: str | None, spec: ChunkSpec) -> _Plan:
    prev_gen = store.current_generation(ws)
    recorded = store.Manifest.load(prev_gen) if prev_gen else None
    # A damaged generation is rebuilt from the files, never patched; its settings are still honoured.
    previous = recorded if prev_gen is not None and recorded is not None and store.usable(prev_gen, recorded) else None
    chosen_sources = parse_sources(sources) if sources is not None else (recorded.sources if recorded else ["memory"])
    rec = recursive if recursive is not None else (recorded.recursive if recorded else settings.recursive_file_watcher)
    choice = _choose_embedder(ws, settings, recorded, backend, model)
    emb = choice.embedder
    embedder_spec = dict(choice.spec, model_id=emb.model_id if emb else None)
    old_model = previous.embedder.get("model_id") if previous else None
    reuse_text = previous is not None and not full and previous.chunker == spec.id
    reuse_vectors = reuse_text and emb is not None and old_model == emb.model_id
    if previous is None:
        reason = "first build" if prev_gen is None and not store.index_dir(ws).exists() else "no usable index"
    elif full:
        reason = "--full"
    elif previous.chunker != spec.id:
        reason = f"chunker changed ({previous.chunker} -> {spec.id}): re-chunking everything"
    else:
        reason = "incremental"
    if previous is not None and not full and emb is not None and old_model != emb.model_id:
        if old_model:
            choice.notices.append(f"embedding model changed from {old_model} to {emb.model_id}: re-embedding every chunk")
        else:
            choice.notices.append(f"the index has no vectors yet: adding them with {emb.model_id} (embedding every chunk)")
    return _Plan(previous, prev_gen, chosen_sources, rec, choice, embedder_spec, reuse_text, reuse_vectors, reason)


def run_reindex(ws: Any, settings: Any, *, full: bool = False, sources: Any = None, progress: Progress | None = None,
                recursive: bool | None = None, backend: str | None = None, model: str | None = None,
                chunk_spec: ChunkSpec | None = None, dry_run: bool = False,
                embed_seconds: float | None = None, verify: bool = False) -> ReindexResult:
    """`embed_seconds`: stop embedding after about that long and leave the rest for the next reindex (search uses it
    so it never waits long for a model: the full-text side is always complete). `verify`: re-hash every file, not
    only those whose size or mtime changed or whose mtime was too close to the index's own time (racy)."""
    started = time.perf_counter()
    spec = chunk_spec or ChunkSpec()
    with exclusive_lock(store.lock_path(ws), "index"):
        plan = _plan(ws, settings, full, sources, recursive, backend, model, spec)
        result = _run(ws, plan, spec, progress, dry_run, embed_seconds, verify)
    if result.chunks_without_vectors and result.embedding_error is None:
        result.notices.append(
            f"{result.chunks_without_vectors} of {result.chunks_total} chunk(s) are not embedded yet (found by full "
            "text only); run `qwenmem reindex` to embed them")
    elif result.chunks_without_vectors:
        result.notices.append(
            f"{result.embedding_error}: {result.chunks_without_vectors} of {result.chunks_total} chunk(s) have no "
            "vectors yet (full-text search finds them); run `qwenmem reindex` again once the embedder answers")
    result.seconds = round(time.perf_counter() - started, 3)
    return result


@dataclass
class _Scan:
    """What the scan of the source files found: their manifest entries and the chunk rows of the new index."""
    manifest_files: dict[str, dict[str, Any]] = field(default_factory=dict)
    new_chunks: list[Chunk] = field(default_factory=list)
    kept_rows: dict[str, list[store.ChunkRow]] = field(default_factory=dict)
    new_rows: dict[str, list[tuple[store.ChunkRow, Chunk]]] = field(default_factory=dict)


def _run(ws: Any, plan: _Plan, spec: ChunkSpec, progress: Progress | None, dry_run: bool,
         embed_seconds: float | None = None, verify: bool = False) -> ReindexResult:
    emb = plan.choice.embedder
    prev = plan.previous if plan.reuse_text else None
    files = discover(ws, plan.sources, plan.recursive)
    prev_files = prev.files if prev else {}
    result = ReindexResult(None, False, plan.previous is None or not plan.reuse_text, plan.reason,
                           files_total=len(files), embedder=emb.model_id if emb else None, sources=plan.sources,
                           notices=list(plan.choice.notices), dry_run=dry_run)
    scan = _scan(files, prev_files, store.load_chunks(plan.prev_dir) if prev else [], result, spec, progress, verify)
    scanned_ns = time.time_ns()
    for rel, entry in scan.manifest_files.items():
        if "sha256" in entry:
            scan.manifest_files[rel] = mark_racy(entry, scanned_ns)
    current = {f.rel for f in files}
    result.files_removed = sorted(p for p in prev_files if p not in current)
    result.chunks_new = len(scan.new_chunks)
    changed_paths = set(result.files_changed) | set(result.files_removed)
    ordered: list[tuple[store.ChunkRow, Chunk | None]] = []
    for rel in sorted(scan.manifest_files):
        if rel in scan.new_rows:
            ordered.extend(scan.new_rows[rel])
        else:
            ordered.extend((r, None) for r in scan.kept_rows.get(rel, []))
    result.chunks_total = len(ordered)
    if prev is not None and _up_to_date(plan, scan, prev_files, changed_paths):
        result.up_to_date = True
        result.generation = plan.prev_dir.name
        return result
    if dry_run:
        return result
    result.generation = _write_generation(ws, plan, spec, ordered, changed_paths, scan.manifest_files, result,
                                          progress, embed_seconds)
    return result


def _scan(files: list[Any], prev_files: dict[str, dict[str, Any]], prev_rows: list[store.ChunkRow], result: ReindexResult,
          spec: ChunkSpec, progress: Progress | None, verify: bool) -> _Scan:
    """Read and chunk every file that is new or changed; keep the entries and rows of the others."""
    rows_by_path: dict[str, list[store.ChunkRow]] = {}
    for r in prev_rows:
        rows_by_path.setdefault(r.path, []).append(r)
    scan = _Scan()
    for i, src in enumerate(files):
        old = prev_files.get(src.rel)
        # a file whose generation changed (a 1.x tree became 2.x) is re-read: its front matter turns into metadata;
        # a racy one (modified too close to the last scan) or any under --verify is re-hashed
        if old and old.get("size") == src.size and old.get("mtime_ns") == src.mtime_ns and ("meta" in old) == src.gen2 \
                and not (verify or (old.get("racy") and not old.get("skipped"))):
            scan.manifest_files[src.rel] = old
            scan.kept_rows[src.rel] = rows_by_path.get(src.rel, [])
            if old.get("skipped"):
                result.files_skipped.append(src.rel)
                _skip_notice(result, old["skipped"])
            continue
        try:
            digest, text = read_source(src)
        except SkippedSource as skipped:
            scan.manifest_files[src.rel] = {"size": src.size, "mtime_ns": src.mtime_ns, "kind": src.kind,
                                            "chunks": 0, "skipped": str(skipped), **({"meta": {}} if src.gen2 else {})}
            result.files_skipped.append(src.rel)
            _skip_notice(result, str(skipped))
            if old:  # whatever it held before drops out of the index
                result.files_changed.append(src.rel)
                scan.new_rows[src.rel] = []
            continue
        entry = {"sha256": digest, "size": src.size, "mtime_ns": src.mtime_ns, "kind": src.kind}
        if src.gen2:  # title, date, tags, kind, links: for --tag/--since, labels and --format reme
            entry["meta"] = src.meta or {}
        if old and old.get("sha256") == digest and ("meta" in old) == src.gen2:
            scan.manifest_files[src.rel] = dict(entry, chunks=old.get("chunks", 0))
            scan.kept_rows[src.rel] = rows_by_path.get(src.rel, [])
            continue
        chunks = chunk_text(src.rel, text, spec)
        entry["chunks"] = len(chunks)
        scan.manifest_files[src.rel] = entry
        (result.files_changed if old else result.files_added).append(src.rel)
        scan.new_rows[src.rel] = [(store.ChunkRow(chunk_id(c), c.path, c.start_line, c.end_line, c.hash), c)
                                  for c in chunks]
        scan.new_chunks.extend(chunks)
        if progress and i % 50 == 0:
            progress("scanning", i + 1, len(files))
    return scan


def _up_to_date(plan: _Plan, scan: _Scan, prev_files: dict[str, dict[str, Any]], changed_paths: set[str]) -> bool:
    """Nothing to write: no new chunks or removed files, the same model, sources and manifest. The manifest must
    also be unchanged: a new empty or skipped file, or a touched one, adds no chunks but would look stale to every
    later search (which would then rescan it each time) if its entry were not recorded."""
    emb = plan.choice.embedder
    previous = plan.previous
    assert previous is not None
    model_changed = emb is not None and not plan.reuse_vectors
    meta_changed = previous.sources != plan.sources or previous.recursive != plan.recursive
    return (not scan.new_chunks and not changed_paths and not model_changed and not meta_changed
            and _without_racy(scan.manifest_files) == _without_racy(prev_files)
            and not (emb is not None and previous.vectors_missing)
            and previous.embedder.get("model_id") == (emb.model_id if emb else None))


def _write_generation(ws: Any, plan: _Plan, spec: ChunkSpec, ordered: list[Any], changed_paths: set[str],
                      manifest_files: dict[str, dict[str, Any]], result: ReindexResult, progress: Progress | None,
                      embed_seconds: float | None) -> str:
    """Build the next generation beside the live one and publish it; on any failure remove it, the live one kept."""
    import numpy as np

    emb = plan.choice.embedder
    gen = store.new_generation_dir(ws)
    try:
        # Full text first: its writer may fork a second process, which is safest before a model starts threads.
        docs = [{"chunk_id": r.id, "path": r.path, "lines": (r.start_line, r.end_line), "text": c.text}
                for r, c in ordered if c is not None]
        if plan.reuse_text:
            ix = fulltext.clone(plan.prev_dir / "fulltext", gen / "fulltext")
            fulltext.write(ix, changed_paths, docs, _sub(progress, "full text", len(docs)))
        else:
            ix = fulltext.create(gen / "fulltext")
            fulltext.write(ix, set(), docs, _sub(progress, "full text", len(docs)))
        vectors, owners = _vectors(plan, emb, ordered, result, progress, np, embed_seconds)
        store.write_chunks(gen, [r for r, _ in ordered])
        if vectors is not None:
            store.write_vectors(gen, vectors, owners)
        dim = int(vectors.shape[1]) if vectors is not None and len(vectors) else (emb.dim if emb else 0)
        manifest = store.Manifest(chunker=spec.id, embedder=dict(plan.embedder_spec, dim=dim),
                                  files=manifest_files, sources=plan.sources, recursive=plan.recursive,
                                  vectors_missing=result.chunks_without_vectors,
                                  built_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        (gen / "manifest.json").write_bytes(manifest.dump())
        store.publish(ws, gen)
    except BaseException as exc:
        import shutil

        shutil.rmtree(gen, ignore_errors=True)
        if isinstance(exc, OSError):  # a full disk while Whoosh writes: one line, the live index untouched
            raise as_domain_error(exc, exc.filename or gen / "fulltext", "the previous index is kept") from None
        raise
    return gen.name


# git's "racy" rule: a file modified this close to the scan may change again within the same mtime tick (or be
# edited by a tool that restores the mtime, as rsync and some editors do), so size + mtime cannot vouch for it. Such
# entries are marked; search and the next reindex compare their content hash too.
RACY_NS = 2_000_000_000


def mark_racy(entry: dict[str, Any], scanned_ns: int) -> dict[str, Any]:
    racy = scanned_ns - int(entry.get("mtime_ns", 0)) < RACY_NS
    if bool(entry.get("racy")) == racy:
        return entry
    out = dict(entry)
    if racy:
        out["racy"] = True
    else:
        out.pop("racy", None)
    return out


def _without_racy(files: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Clearing a racy mark alone is not worth a new generation (it would also make "up to date" depend on timing)."""
    return {rel: {k: v for k, v in entry.items() if k != "racy"} for rel, entry in files.items()}


def _sub(progress: Progress | None, stage: str, total: int) -> Callable[[int], None] | None:
    if progress is None:
        return None
    return lambda done: progress(stage, done, total)


def _vectors(plan: _Plan, emb: Any, ordered: list[Any], result: ReindexResult, progress: Progress | None, np: Any,
             embed_seconds: float | None = None) -> tuple[Any, Any]:
    """Piece vectors in row order: reused from the previous generation by chunk id or by text hash (the
    embedding cache: same text + same model id => same vector), embedded otherwise. A chunk whose pieces could not
    all be embedded (the endpoint went away) gets no piece at all: search finds it by full text, and the next
    reindex embeds it (it has no cached vector)."""
    if emb is None:
        return None, None
    cache_by_id: dict[str, list[int]] = {}
    cache_by_hash: dict[str, list[int]] = {}
    prev_vecs: Any = None
    if plan.reuse_vectors:
        loaded = store.load_vectors(plan.prev_dir)
        if loaded is not None:
            prev_vecs, prev_owners = loaded
            prev_rows = store.load_chunks(plan.prev_dir)
            for piece, owner in enumerate(prev_owners.tolist()):
                row = prev_rows[owner]
                cache_by_id.setdefault(row.id, []).append(piece)
                cache_by_hash.setdefault(row.hash, []).append(piece)
    parts: list[tuple[str, list[int]]] = []  # per chunk: ("old", piece rows in prev_vecs) or ("new", indexes into to_embed)
    cached_of = [cache_by_id.get(row.id) or cache_by_hash.get(row.hash) for row, _ in ordered]
    texts = _texts_to_embed(plan, ordered, cached_of)
    to_embed: list[str] = []
    first_of: dict[str, int] = {}  # identical piece texts (overlaps, repeated lines) are embedded once
    for i, (row, _chunk) in enumerate(ordered):
        cached = cached_of[i]
        if cached is not None:
            parts.append(("old", cached))
            result.pieces_reused += len(cached)
            continue
        text = texts.get(i)
        if text is None:
            raise RuntimeError(f"internal: no text and no cached vector for {row.path}:{row.start_line}")
        same_file = [j if 0 <= j < len(ordered) and ordered[j][0].path == row.path else None for j in (i - 1, i + 1)]
        previous, following = (texts.get(j) if j is not None else None for j in same_file)
        refs = []
        for piece_text in piecing.chunk_pieces(emb, text, previous, following):
            if piece_text not in first_of:
                first_of[piece_text] = len(to_embed)
                to_embed.append(piece_text)
            refs.append(first_of[piece_text])
        parts.append(("new", refs))
    fresh, done = embed_pieces(emb, to_embed, result, progress, np, embed_seconds)
    dim = fresh.shape[1] if fresh.shape[1] else (prev_vecs.shape[1] if prev_vecs is not None else emb.dim or 0)
    kept = [(i, kind, ref) for i, (kind, ref) in enumerate(parts) if kind == "old" or bool(done[ref].all())]
    result.chunks_without_vectors = len(parts) - len(kept)
    total = sum(len(ref) for _, _, ref in kept)
    vectors = np.zeros((total, dim), dtype=np.float16)
    owners = np.zeros(total, dtype=np.int32)
    at = 0
    for chunk_row, kind, ref in kept:
        n = len(ref)
        vectors[at:at + n] = prev_vecs[ref] if kind == "old" else fresh[ref]
        owners[at:at + n] = chunk_row
        at += n
    return vectors, owners


def _texts_to_embed(plan: _Plan, ordered: list[Any], cached_of: list[list[int] | None]) -> dict[int, str]:
    """The text of every row to embed and of its neighbours in the same file (their overlap is split apart, see
    piecing.py): from the new chunks, or for chunks kept from the previous generation (same chunks, new model, or
    vectors still missing) from its full-text store."""
    wanted: set[int] = set()
    for i, cached in enumerate(cached_of):
        if cached is None:
            wanted.update(j for j in (i - 1, i, i + 1)
                          if 0 <= j < len(ordered) and ordered[j][0].path == ordered[i][0].path)
    texts = {i: ordered[i][1].text for i in wanted if ordered[i][1] is not None}
    missing = [i for i in wanted if i not in texts]
    if missing:
        stored = fulltext.stored_texts(plan.prev_dir / "fulltext", [ordered[i][0].id for i in missing])
        texts.update((i, stored[ordered[i][0].id]) for i in missing if ordered[i][0].id in stored)
    return texts


# Each call into the model is sized to take about this long, so Ctrl-C (seen between calls: a C engine cannot be
# interrupted inside one) stops a reindex well within 2 s, and the progress bar moves.
BATCH_SECONDS = 0.25
MAX_BATCH = 256
LIGHT_MAX_BATCH = 48  # LocalEmbedder.NUMPY_MAX_TEXTS: a search's budgeted embedding never loads torch


def embed_pieces(emb: Any, texts: list[str], result: ReindexResult, progress: Progress | None, np: Any,
                 seconds: float | None = None) -> tuple[Any, Any]:
    """(vectors [len(texts), dim], done mask). Pieces the model cannot read get a zero vector and count as done.
    An embedder that fails (endpoint down, refusing, malformed replies) stops the embedding: the pieces left are
    not done, `result.embedding_error` says why, and the caller still builds the full-text side."""
    done = np.zeros(len(texts), dtype=bool)
    if not texts:
        return np.zeros((0, emb.dim or 0), dtype=np.float32), done
    readable = [i for i, t in enumerate(texts) if emb.can_read(t)]
    unreadable = len(texts) - len(readable)
    done[:] = True
    done[readable] = False
    started = time.perf_counter()
    # Within a time budget (search) stay on the light runtime: loading torch alone would take ~5 s.
    emb.begin_bulk(len(readable) if seconds is None else 0)
    result.notices.extend(emb.take_notices())
    if readable:
        result.embedding_kernel = emb.kernel
    try:
        if seconds is None:  # a bulk job: batches of similar lengths waste little on padding (rows keep their order)
            readable = [readable[k] for k in emb.bulk_order([texts[i] for i in readable])]
        rows = _embed_in_batches(emb, texts, readable, done, result, progress, np,
                                 None if seconds is None else started + seconds)
    finally:
        emb.begin_bulk(0)
    dim = rows[0][1].shape[1] if rows else (emb.dim or 0)
    fresh = np.zeros((len(texts), dim), dtype=np.float32)
    for batch, vecs in rows:
        fresh[batch] = vecs
    result.pieces_embedded = sum(len(batch) for batch, _ in rows)
    result.embed_seconds = round(time.perf_counter() - started, 3)
    if unreadable:
        result.notices.append(f"{unreadable} mostly-CJK piece(s) not embedded: "
                              f"{emb.model_id} cannot read them (full text still finds them)")
    return fresh, done


def _embed_in_batches(emb: Any, texts: list[str], readable: list[int], done: Any, result: ReindexResult,
                      progress: Progress | None, np: Any, deadline: float | None) -> list[tuple[list[int], Any]]:
    from qwenmem.core.errors import LLMError

    stream = emb.embed_bulk([texts[i] for i in readable]) if deadline is None else None
    if stream is not None:
        return _embed_streamed(stream, readable, done, result, progress, np)
    rows: list[tuple[list[int], Any]] = []
    size, at, slowest = 4, 0, 0.0
    max_batch = MAX_BATCH if deadline is None else LIGHT_MAX_BATCH
    while at < len(readable):
        if deadline is not None and time.perf_counter() + slowest * size > deadline:
            break  # the rest is embedded by the next reindex
        batch = readable[at:at + size]
        t0 = time.perf_counter()
        try:
            vecs = np.asarray(emb.embed_raw([texts[i] for i in batch]), dtype=np.float32)
        except LLMError as exc:
            result.embedding_error = str(exc)
            break
        rows.append((batch, vecs))
        done[batch] = True
        at += len(batch)
        # The slowest recent rate decides: on a shared machine a batch can suddenly take several times longer.
        slowest = max(slowest * 0.8, (time.perf_counter() - t0) / len(batch))
        size = max(1, min(max_batch, int(BATCH_SECONDS / max(slowest, 1e-6))))
        if progress:
            progress("embedding", at, len(readable))
    return rows


def _embed_streamed(stream: Any, readable: list[int], done: Any, result: ReindexResult, progress: Progress | None,
                    np: Any) -> list[tuple[list[int], Any]]:
    """The rows of a runtime that schedules the bulk job itself (Embedder.embed_bulk), block by block."""
    from qwenmem.core.errors import LLMError

    rows: list[tuple[list[int], Any]] = []
    at = 0
    try:
        for block in stream:
            vecs = np.asarray(block, dtype=np.float32)
            if len(vecs):
                batch = readable[at:at + len(vecs)]
                rows.append((batch, vecs))
                done[batch] = True
                at += len(batch)
            if progress:
                progress("embedding", at, len(readable))
    except LLMError as exc:
        result.embedding_error = str(exc)
    finally:
        stream.close()
    return rows
