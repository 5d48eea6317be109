"""The Whoosh (whoosh-reloaded) full-text side: BM25F over a CJK-bigram / identifier-preserving analyzer."""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path
from typing import Any, Callable

from qwenmem.core.index.analysis import IS_CJK, query_terms


def schema() -> Any:
    from whoosh.fields import ID, STORED, TEXT, Schema

    from qwenmem.core.index.whoosh_tokenizer import CJKIdentifierTokenizer

    return Schema(chunk_id=ID(stored=True, unique=True), path=ID(stored=True), lines=STORED,
                  text=TEXT(analyzer=CJKIdentifierTokenizer(), stored=True, phrase=True))


def create(directory: Path) -> Any:
    from qwenmem.core.index.whoosh_storage import create_index

    return create_index(directory, schema())


def clone(previous: Path, directory: Path) -> Any:
    """Start the new generation from the old one's files. Whoosh never rewrites a file it has written (new
    segments and a new TOC are added, old files are unlinked), so hard links are safe and cost nothing."""
    from qwenmem.core.fsio import fsync_all, fsync_dir, make_dirs
    from qwenmem.core.index.whoosh_storage import open_index

    make_dirs(directory)
    copied = []
    for f in previous.iterdir():
        if f.is_file() and not f.name.endswith("_LOCK"):
            try:
                os.link(f, directory / f.name)
            except OSError:
                shutil.copy2(f, directory / f.name)
                copied.append(directory / f.name)
    fsync_all(copied)
    fsync_dir(directory)
    return open_index(directory)


def write(ix: Any, remove_paths: set[str], add: list[dict[str, Any]], progress: Callable[[int], None] | None = None
          ) -> None:
    """Our writer (whoosh_writer.py: the same index, ~3x faster); QWENMEM_FULLTEXT_WRITER=whoosh uses Whoosh's
    own, for bench/speed/fulltext_build.py's side-by-side run."""
    if os.environ.get("QWENMEM_FULLTEXT_WRITER", "").strip().lower() == "whoosh":
        _whoosh_write(ix, remove_paths, add, progress)
        return
    from qwenmem.core.index.whoosh_writer import write_documents

    write_documents(ix, remove_paths, add, progress)


def _whoosh_write(ix: Any, remove_paths: set[str], add: list[dict[str, Any]],
                  progress: Callable[[int], None] | None = None) -> None:
    writer = ix.writer(limitmb=128)
    try:
        for path in sorted(remove_paths):
            writer.delete_by_term("path", path)
        for i, doc in enumerate(add):
            writer.add_document(**doc)
            if progress and i % 200 == 0:
                progress(i)
        writer.commit()
    except BaseException:
        writer.cancel()
        raise


def build_query(text: str) -> Any:
    """OR of every query term (BM25 ranks chunks that hold more of them higher) plus, for each CJK run, a
    boosted phrase of its bigrams so the exact substring wins. No query syntax: user text is never parsed as
    operators, so `foo(` or `AND` cannot fail."""
    from whoosh.query import Or, Phrase, Term, Wildcard

    terms, phrases = query_terms(text)
    if not terms:
        return None
    # A lone CJK character is often a word of its own (猫, 药, 池), but text indexes CJK runs as bigrams: it also
    # matches every bigram that holds it.
    singles = [Wildcard("text", pattern, constantscore=False)
               for t in terms if len(t) == 1 and IS_CJK.match(t) for pattern in (t + "?", "?" + t)]
    return Or([Term("text", t) for t in terms] + singles + [Phrase("text", p, boost=2.0) for p in phrases])


def _open(directory: Path) -> Any:
    return _open_index(str(directory))


# A cache, not state: a generation directory is immutable once published, so its open index is a pure function of
# the path; bounded, so a fleet worker that searches workspace after workspace keeps only the last few open.
@functools.lru_cache(maxsize=8)
def _open_index(directory: str) -> Any:
    """One open index per generation directory per process."""
    from whoosh.filedb.filestore import FileStorage

    # Without mmap: Whoosh's mmap path copies each sub-file of the compound segment into a BytesIO on
    # open (~130 ms for a 10k-chunk index); plain seeks read only what the query touches.
    return FileStorage(directory, supports_mmap=False).open_index()


def search(directory: Path, text: str, limit: int, paths: set[str] | None = None) -> list[tuple[str, float]]:
    """(chunk_id, bm25 score), best first."""
    from whoosh.query import Or, Term

    q = build_query(text)
    if q is None:
        return []
    ix = _open(directory)
    with ix.searcher() as searcher:
        filt = Or([Term("path", p) for p in sorted(paths)]) if paths is not None else None
        if paths is not None and not paths:
            return []
        hits = searcher.search(q, limit=limit, filter=filt)
        return [(hit["chunk_id"], float(hit.score)) for hit in hits]


def stored_texts(directory: Path, chunk_ids: list[str]) -> dict[str, str]:
    ix = _open(directory)
    out: dict[str, str] = {}
    with ix.searcher() as searcher:
        for cid in chunk_ids:
            doc = searcher.document(chunk_id=cid)
            if doc is not None:
                out[cid] = doc.get("text", "")
    return out


def stored_docs(directory: Path, chunk_ids: list[str]) -> dict[str, tuple[str, tuple[int, int], str]]:
    """{chunk_id: (path, (start_line, end_line), text)} for the given hits."""
    ix = _open(directory)
    out: dict[str, tuple[str, tuple[int, int], str]] = {}
    with ix.searcher() as searcher:
        for cid in chunk_ids:
            doc = searcher.document(chunk_id=cid)
            if doc is not None:
                start, end = doc.get("lines") or (0, 0)
                out[cid] = (doc.get("path", ""), (int(start), int(end)), doc.get("text", ""))
    return out
