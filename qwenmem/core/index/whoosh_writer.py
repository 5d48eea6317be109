"""A faster Whoosh segment writer that writes the same index (same terms, postings, stored fields, lengths).

Whoosh is pure Python, and for a full build of 10k chunks most of its time went to bookkeeping, not to the index:
its posting pool pickles every posting to a temporary run file and merges the runs back through heapq (~40% of
the build), every posting's field length is read back through a column reader, and each document's text goes
through Token objects. Here:
  * postings are grouped per term in memory and handed to the field writer in Whoosh's own order (field, term,
    document), so the external sort is gone;
  * field lengths are read once per document from the new segment, not once per posting;
  * the text field's postings come straight from analysis.spans, with the positions CJKIdentifierTokenizer gives
    and the bytes Whoosh's Positions format writes (tests/core/index/test_index_fulltext_writer.py compares every posting,
    stored field and length with Whoosh's own writer, and the ranking of queries);
  * posting blocks are not zlib-compressed (the level is recorded per block, so readers of either kind agree):
    compression cost more time than it saved in reading them back.
Only the full-text schema of fulltext.py is handled this way; any other field goes through Whoosh's own path.
"""

from __future__ import annotations

from array import array
from pickle import dumps
from typing import Any, Iterator

from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC, W3Codec, W3TermInfo
from whoosh.system import pack_int, pack_long, pack_uint, pack_ushort
from whoosh.util.numeric import length_to_byte
from whoosh.util.numlists import delta_encode
from whoosh.util.text import utf8encode
from whoosh.writing import SegmentWriter

from qwenmem.core.index.analysis import IS_CJK, RUN, spans

FAST_FIELD = "text"
POSTING_COMPRESSION = 0  # zlib level of posting blocks (Whoosh's default is 3)


def codec() -> W3Codec:
    return W3Codec(compression=POSTING_COMPRESSION)


class MemoryPool:
    """Whoosh's posting pool interface (add, iter_postings, cleanup, fieldnames), held in memory by term."""

    def __init__(self) -> None:
        self.fieldnames: set[str] = set()
        self._terms: dict[tuple[str, bytes], list[tuple[int, float, bytes | None]]] = {}
        self._unordered: set[tuple[str, bytes]] = set()

    def add(self, item: tuple[str, bytes, int, float, bytes | None]) -> None:
        fieldname, tbytes, docnum, weight, vbytes = item
        self.fieldnames.add(fieldname)
        self.add_term(fieldname, tbytes, docnum, weight, vbytes)

    def add_term(self, fieldname: str, tbytes: bytes, docnum: int, weight: float, vbytes: bytes | None) -> None:
        key = (fieldname, tbytes)
        postings = self._terms.get(key)
        if postings is None:
            self._terms[key] = [(docnum, weight, vbytes)]
            return
        if postings[-1][0] >= docnum:  # merged segments may arrive out of document order
            self._unordered.add(key)
        postings.append((docnum, weight, vbytes))

    def iter_postings(self) -> Iterator[tuple[str, bytes, int, float, bytes | None]]:
        """Sorted as Whoosh's pool sorts its tuples: by field, term, then document (never two of one term)."""
        for (fieldname, tbytes), postings in self.terms():
            for docnum, weight, vbytes in postings:
                yield fieldname, tbytes, docnum, weight, vbytes

    def terms(self) -> Iterator[tuple[tuple[str, bytes], list[tuple[int, float, bytes | None]]]]:
        terms = self._terms
        for key in sorted(terms):
            postings = terms[key]
            if key in self._unordered:
                postings.sort(key=lambda p: p[0])
            yield key, postings

    def cleanup(self) -> None:
        self._terms = {}


def _length_table(reader: Any, fieldnames: set[str], doc_count: int) -> dict[str, list[Any]]:
    """doc_field_length per field and document, read once (the per-document reader decodes a cell per call)."""
    return {name: [reader.doc_field_length(d, name) for d in range(doc_count)] for name in fieldnames}


def write_postings(fieldwriter: Any, schema: Any, lengths: dict[str, list[Any]] | None, pool: MemoryPool) -> None:
    """W3FieldWriter.add_postings over the pool, one whole term at a time (see _write_term)."""
    lastfn = None
    table: list[Any] = []
    fixed: int | None = None
    for (fieldname, btext), postings in pool.terms():
        if fieldname != lastfn:
            if lastfn is not None:
                fieldwriter.finish_field()
            fieldwriter.start_field(fieldname, schema[fieldname])
            table = lengths.get(fieldname, []) if lengths is not None else []
            fixed = schema[fieldname].format.fixed_value_size()
            lastfn = fieldname
        _write_term(fieldwriter, btext, postings, table, fixed)
    if lastfn is not None:
        fieldwriter.finish_field()


def _write_term(fw: Any, btext: bytes, postings: list[tuple[int, float, bytes | None]], table: list[Any],
                fixed: int | None) -> None:
    """What W3FieldWriter.start_term, add (per posting) and finish_term write, computed a block at a time: the
    posting blocks (header magic, then per block its length, info tuple and data tuple, pickled, the last block's
    length negative; compression recorded as 0) and the term info row (W3TermInfo.to_bytes)."""
    postfile = fw._postfile
    limit = fw._postwriter._blocklimit if fw._postwriter is not None else fw._codec._blocklimit
    startoffset = postfile.tell()
    out = [WHOOSH3_HEADER_MAGIC]
    weight_total: float = 0
    minlength: Any = None
    maxlength: Any = 0
    maxweight: Any = 0
    count = len(postings)
    for start in range(0, count, limit):
        block = postings[start:start + limit]
        ids = [d for d, _, _ in block]
        weights = array("f", [w for _, w, _ in block])
        found = [n for d in ids if (n := table[d] if table else 0)]
        block_min = min(found) if found else None
        block_max = max(found) if found else 0
        block_maxweight = max(0, max(w for _, w, _ in block))
        # TermInfo.add_block
        weight_total += sum(weights)
        minlength = block_min if minlength is None else min(minlength, block_min)
        maxlength = max(maxlength, block_max)
        maxweight = max(maxweight, block_maxweight)
        # W3PostingsWriter._write_block
        if all(w == 1.0 for w in weights):
            mini_weights: Any = None
        elif all(w == weights[0] for w in weights):
            mini_weights = weights[0]
        else:
            mini_weights = tuple(weights)
        values = [v for _, _, v in block if v]
        if fixed is None or fixed < 0:
            mini_values: Any = tuple(values)
        elif fixed == 0:
            mini_values = None
        else:
            mini_values = b"".join(values)
        databytes = dumps((tuple(delta_encode(ids)), mini_weights, mini_values), 2)
        infobytes = dumps((len(ids), ids[-1], block_maxweight, 0, length_to_byte(block_min),
                           length_to_byte(block_max)), 2)
        blocklength = len(infobytes) + len(databytes)
        if start + limit >= count:
            blocklength = -blocklength
        out.append(pack_int(blocklength))
        out.append(infobytes)
        out.append(databytes)
    postfile.write(b"".join(out))
    extent = postfile.tell() - startoffset
    info = W3TermInfo._struct.pack(False, weight_total, count, 0 if minlength is None else length_to_byte(minlength),
                                   length_to_byte(maxlength), maxweight, postings[0][0], postings[-1][0])
    fw._tindex.add(pack_ushort(fw._fieldid) + btext, info + pack_long(startoffset) + pack_int(extent))


# memo tables of pure functions of their key (capped: a cache, not state; nothing else reads them)
_ENCODED: dict[tuple[int, ...], bytes] = {}


def _encode_positions(deltas: tuple[int, ...]) -> bytes:
    """Whoosh's Positions.encode of the position deltas (most terms occur once, at one of few positions: cached)."""
    value = _ENCODED.get(deltas)
    if value is None:
        value = pack_uint(len(deltas)) + dumps(list(deltas), 2)
        if len(_ENCODED) < 200_000:
            _ENCODED[deltas] = value
    return value


_WORD_TERMS: dict[str, tuple[str, ...]] = {}
MAX_CACHED_WORDS = 500_000


def _word_terms(run: str) -> tuple[str, ...]:
    """The terms spans() gives for one non-CJK word (the word, its stem, its parts), all at the word's position."""
    terms = _WORD_TERMS.get(run)
    if terms is None:
        terms = tuple(term for term, _, _, _ in spans(run))
        if len(_WORD_TERMS) < MAX_CACHED_WORDS:
            _WORD_TERMS[run] = terms
    return terms


def text_postings(value: str) -> tuple[list[tuple[bytes, int, float, bytes]], int]:
    """(btext, frequency, weight, encoded positions) per distinct term, and the field length (token count), as
    TEXT(analyzer=CJKIdentifierTokenizer(), phrase=True).index(value) gives them: a CJK run is one position per
    bigram (or its lone character); a word is one position shared by its parts and stem; every boost is 1."""
    positions: dict[str, list[int]] = {}
    pos = 0
    for run in RUN.findall(value):
        if IS_CJK.match(run):
            grams = [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]
            for gram in grams:
                found = positions.get(gram)
                if found is None:
                    positions[gram] = [pos]
                else:
                    found.append(pos)
                pos += 1
            continue
        for term in _word_terms(run):
            found = positions.get(term)
            if found is None:
                positions[term] = [pos]
            else:
                found.append(pos)
        pos += 1
    items = []
    length = 0
    for term, plist in positions.items():
        freq = len(plist)
        length += freq
        if freq == 1:
            deltas: tuple[int, ...] = (plist[0],)
        else:
            deltas = (plist[0], *[b - a for a, b in zip(plist, plist[1:])])
        items.append((utf8encode(term)[0], freq, float(freq), _encode_positions(deltas)))
    return items, length


class FastSegmentWriter(SegmentWriter):  # type: ignore[misc]  # whoosh has no type hints
    def __init__(self, ix: Any, **kwargs: Any) -> None:
        super().__init__(ix, codec=codec(), **kwargs)
        self.pool = MemoryPool()
        self._fast_field = self.schema[FAST_FIELD] if FAST_FIELD in self.schema else None

    def add_document(self, **fields: Any) -> None:
        """SegmentWriter.add_document for documents without boosts or `_stored_` overrides; the text field's
        postings come from text_postings, every other field from Whoosh."""
        if self._fast_field is None or any(name.startswith("_") for name in fields):
            super().add_document(**fields)
            return
        self._check_state()
        perdocwriter = self.perdocwriter
        schema = self.schema
        docnum = self.docnum
        pool = self.pool
        fieldnames = sorted(fields)
        self._check_fields(schema, fieldnames)
        perdocwriter.start_doc(docnum)
        try:
            for fieldname in fieldnames:
                value = fields[fieldname]
                if value is None:
                    continue
                field = schema[fieldname]
                length = 0
                if field.indexed:
                    if fieldname == FAST_FIELD and isinstance(value, str):
                        items, counted = text_postings(value)
                        length = counted if field.scorable else 0
                        pool.fieldnames.add(fieldname)
                        for tbytes, _freq, weight, vbytes in items:
                            pool.add_term(fieldname, tbytes, docnum, weight, vbytes)
                    else:
                        for tbytes, freq, weight, vbytes in field.index(value):
                            if field.scorable:
                                length += freq
                            pool.add((fieldname, tbytes, docnum, weight * 1.0, vbytes))  # Whoosh applies a 1.0 field boost
                if field.separate_spelling() or field.vector:
                    raise NotImplementedError(f"field {fieldname}: spelling/vectors are not written by this writer")
                perdocwriter.add_field(fieldname, field, value if field.stored else None, length)
                column = field.column_type
                if column:
                    perdocwriter.add_column_value(fieldname, column, field.to_column_value(value))
        except Exception:
            perdocwriter.cancel_doc()
            raise
        perdocwriter.finish_doc()
        self._added = True
        self.docnum += 1

    def _flush_segment(self) -> None:
        self.perdocwriter.close()
        pdr = self.per_document_reader() if self.codec.length_stats else None
        lengths = _length_table(pdr, self.pool.fieldnames, self.docnum) if pdr is not None else None
        write_postings(self.fieldwriter, self.schema, lengths, self.pool)
        self.fieldwriter.close()
        if pdr is not None:
            pdr.close()

    def finish_segments(self) -> list[Any]:
        """The first half of SegmentWriter.commit (default merge policy): merge small segments, write this writer's
        own segment; the segments to list in the new table of contents."""
        self._check_state()
        finalsegments: list[Any] = self._merge_segments(None, None, None)
        if self._added:
            finalsegments.append(self._finalize_segment())
        else:
            self._close_segment()
        return finalsegments

    def commit_segments(self, segments: list[Any]) -> None:
        """The second half: the table of contents naming `segments` (this writer's and other processes'), unlock."""
        self._commit_toc(segments)
        self._finish()


# A full build splits its documents in two segments written by two processes when there are this many (each
# process keeps a core busy; below this the fork costs more than it saves). Ranking is the same: BM25F takes the
# document frequency and average length from the whole index, and documents keep their order.
PARALLEL_MIN_DOCS = 2000


def _child_segment(ix: Any, docs: list[dict[str, Any]], conn: Any) -> None:
    try:
        writer = FastSegmentWriter(ix, _lk=False)
        for doc in docs:
            writer.add_document(**doc)
        conn.send(("ok", writer._finalize_segment()))
    except BaseException as exc:  # the parent raises it; a child never prints a traceback of its own
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def write_documents(ix: Any, remove_paths: set[str], docs: list[dict[str, Any]], progress: Any = None,
                    parallel_min: int = PARALLEL_MIN_DOCS) -> None:
    """Delete every document of `remove_paths`, add `docs` (in order), commit. On an empty index with at least
    `parallel_min` documents and two CPUs, the second half is written by a forked process as its own segment."""
    import multiprocessing
    import os

    writer = FastSegmentWriter(ix)
    child = None
    try:
        for path in sorted(remove_paths):
            writer.delete_by_term("path", path)
        parallel = (len(docs) >= max(2, parallel_min) and not writer.segments and (os.cpu_count() or 1) > 1
                    and "fork" in multiprocessing.get_all_start_methods())
        mine = docs
        if parallel:
            half = len(docs) // 2
            mine = docs[:half]
            receive, send = multiprocessing.get_context("fork").Pipe(duplex=False)
            child = multiprocessing.get_context("fork").Process(target=_child_segment, args=(ix, docs[half:], send),
                                                               daemon=True)
            child.start()
            send.close()
        for i, doc in enumerate(mine):
            writer.add_document(**doc)
            if progress and i % 200 == 0:
                progress(i * len(docs) // max(1, len(mine)))
        segments = writer.finish_segments()  # while the child still writes its half
        if child is not None:
            try:
                status, value = receive.recv()
            except EOFError:
                status, value = "error", f"the writer process ended with code {child.exitcode}"
            child.join()
            child = None
            if status != "ok":
                raise RuntimeError(f"full-text writer process failed: {value}")
            segments.append(value)
        writer.commit_segments(segments)
    except BaseException:
        if child is not None:
            child.terminate()
            child.join()
        writer.cancel()
        raise
