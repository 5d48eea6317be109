"""Hybrid search over the index: BM25F full text + exact cosine over piece vectors, fused.

Scores are put on one scale before fusing, so the weights mean what they say:
  text_score   = bm25 / best bm25 of this query                     (1.0 for the best text match)
  vector_score = (cos - mean cos over the index) / (best cos - mean) clipped to [0, 1]
                 (1.0 for the best vector match, ~0 for an unrelated chunk: raw cosines of unrelated text sit
                 at 0.3-0.6 for many models, which made the assistant's fusion drown BM25; reme-index.md §3)
  score        = w * vector_score + (1 - w) * text_score            (weighted; w = 0.7 like the assistant)
             or  sum of 1 / (60 + rank) over both lists               (--fusion rrf)
A chunk a side did not retrieve gets 0 from that side. A query the model cannot read (CJK text and an
English-only model) is answered from full text alone, with a notice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta

from qwenmem.core.errors import BusyError, UsageError
from qwenmem.core.index import fulltext, store
from qwenmem.core.index.analysis import IS_CJK, query_groups, spans
from qwenmem.core.index.sources import discover, file_date

MODES = ("hybrid", "text", "vector")
FUSIONS = ("weighted", "rrf")
RRF_K = 60


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


@dataclass
class SearchResult:
    query: str
    mode: str
    fusion: str
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
        return ((today or date.today()) - timedelta(days=days)).isoformat()
    try:
        return date.fromisoformat(v).isoformat()
    except ValueError:
        raise UsageError(f"bad date {value!r}: use YYYY-MM-DD or a relative 7d / 2w") from None


def stale_files(ws, manifest: store.Manifest) -> list[str]:
    """Files added, changed (size or mtime) or removed since the index was built."""
    files = discover(ws, manifest.sources, manifest.recursive)
    out = [f.rel for f in files if (m := manifest.files.get(f.rel)) is None
           or m.get("size") != f.size or m.get("mtime_ns") != f.mtime_ns]
    current = {f.rel for f in files}
    return out + [p for p in manifest.files if p not in current]


def search(ws, settings, query: str, *, mode: str = "hybrid", fusion: str = "weighted", max_results: int = 5,
           min_score: float = 0.0, since: str | None = None, until: str | None = None, vector_weight: float = 0.7,
           candidates: int | None = None, auto_reindex: bool = True, progress=None) -> SearchResult:
    if not query or not query.strip():
        raise UsageError("empty query")
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}; choose {', '.join(MODES)}")
    if fusion not in FUSIONS:
        raise UsageError(f"unknown fusion {fusion!r}; choose {', '.join(FUSIONS)}")
    if not 0.0 <= vector_weight <= 1.0:
        raise UsageError("--vector-weight must be between 0 and 1")
    max_results = max(1, min(int(max_results), 1000))
    notices: list[str] = []
    reindexed = _ensure_fresh(ws, settings, auto_reindex, notices, progress)
    gen = store.current_generation(ws)
    if gen is None:
        return SearchResult(query, mode, fusion, [], None, None, notices + ["the index is empty"], reindexed)
    manifest = store.Manifest.load(gen)
    rows = store.load_chunks(gen)
    since_d, until_d = parse_day(since), parse_day(until)
    allowed_paths = None
    if since_d or until_d:
        allowed_paths = {p for p in manifest.files if (d := file_date(p)) and (not since_d or d >= since_d)
                         and (not until_d or d <= until_d)}
    pool = candidates or max(50, max_results * 10)

    text_scores: dict[str, float] = {}
    if mode in ("hybrid", "text"):
        for cid, score in fulltext.search(gen / "fulltext", query, pool, allowed_paths):
            text_scores[cid] = score
        if text_scores:
            top = max(text_scores.values()) or 1.0
            text_scores = {k: v / top for k, v in text_scores.items()}

    vector_scores: dict[str, float] = {}
    embedder_id = None
    if mode in ("hybrid", "vector"):
        embedder_id, vector_scores = _vector_side(ws, settings, manifest, gen, rows, query, pool, allowed_paths,
                                                  notices, mode)
        if mode == "hybrid" and embedder_id is None:
            mode = "text"

    fused = _fuse(mode, fusion, text_scores, vector_scores, vector_weight)
    by_id = {r.id: r for r in rows}
    ranked = [(cid, s) for cid, s in sorted(fused.items(), key=lambda kv: (-kv[1], kv[0])) if cid in by_id]
    # A zero score means neither side found anything beyond background: not a result.
    ranked = [(cid, s) for cid, s in ranked if s > 0.0 and s >= min_score][:max_results]
    texts = fulltext.stored_texts(gen / "fulltext", [cid for cid, _ in ranked])
    terms = {t for g in query_groups(query) for t in g}
    hits = []
    for cid, score in ranked:
        r = by_id[cid]
        snippet, marks = make_snippet(texts.get(cid, ""), terms)
        hits.append(SearchHit(r.path, r.start_line, r.end_line, round(score, 4),
                              round(text_scores[cid], 4) if cid in text_scores else (0.0 if mode != "vector" else None),
                              round(vector_scores[cid], 4) if cid in vector_scores else
                              (0.0 if mode in ("hybrid", "vector") else None),
                              snippet, marks))
    return SearchResult(query, mode, fusion, hits, embedder_id, gen.name, notices, reindexed)


def _ensure_fresh(ws, settings, auto_reindex: bool, notices: list[str], progress):
    """Stale index policy: bring it up to date incrementally before searching (cheap: only changed files are
    re-chunked and re-embedded). With auto_reindex off, or when another process is reindexing, search the
    index as it is and say so."""
    from qwenmem.core.index.reindex import run_reindex

    gen = store.current_generation(ws)
    manifest = store.Manifest.load(gen) if gen else None
    if manifest is not None:
        stale = stale_files(ws, manifest)
        if not stale:
            return None
        if not auto_reindex:
            notices.append(f"index is stale ({len(stale)} file(s) changed since it was built); run `qwenmem reindex`")
            return None
    elif not auto_reindex:
        notices.append("no index yet; run `qwenmem reindex`")
        return None
    try:
        result = run_reindex(ws, settings, progress=progress)
    except BusyError:
        notices.append("another process is updating the index; searching the previous index")
        return None
    notices.extend(result.notices)
    return result


def _vector_side(ws, settings, manifest, gen, rows, query, pool, allowed_paths, notices, mode):
    import numpy as np

    from qwenmem.core.index.embedders import load_embedder

    spec = manifest.embedder or {}
    if not spec.get("model_id"):
        notices.append("the index has no vectors (embedder none): full-text search only")
        return None, {}
    loaded = store.load_vectors(gen)
    if loaded is None:
        notices.append("the index has no vectors: full-text search only")
        return None, {}
    try:
        choice = load_embedder(ws, settings, backend=spec.get("backend"), model=spec.get("model"))
    except Exception as exc:  # a missing model or package must never stop a search
        notices.append(f"embedding model unavailable ({exc}): full-text search only")
        return None, {}
    emb = choice.embedder
    if emb is None or emb.model_id != spec.get("model_id"):
        notices.append(f"embedding model {spec.get('model_id')} is not available: full-text search only")
        return None, {}
    if mode == "hybrid" and emb.english_only and IS_CJK.search(query):
        notices.append(f"{emb.model_id} cannot read Chinese/Japanese/Korean: this query uses full text only")
        return None, {}
    from qwenmem.core.errors import LLMError

    try:
        q = emb.embed([query])[0]
    except LLMError as exc:
        notices.append(f"{exc}: full-text search only")
        return None, {}
    vectors, owners = loaded
    sims = np.asarray(vectors, dtype=np.float32) @ q.astype(np.float32)
    best = np.full(len(rows), -2.0, dtype=np.float32)
    np.maximum.at(best, owners, sims)
    if allowed_paths is not None:
        mask = np.array([r.path in allowed_paths for r in rows], dtype=bool)
        best[~mask] = -2.0
    valid = best > -2.0
    if not valid.any():
        return emb.model_id, {}
    background = float(best[valid].mean())
    top_k = np.argsort(-best)[:pool]
    top = float(best[top_k[0]])
    span = max(top - background, 1e-6)
    out = {}
    for i in top_k:
        if best[i] <= -2.0:
            break
        out[rows[i].id] = float(np.clip((best[i] - background) / span, 0.0, 1.0))
    return emb.model_id, out


def _fuse(mode, fusion, text_scores, vector_scores, w):
    if mode == "text":
        return dict(text_scores)
    if mode == "vector":
        return dict(vector_scores)
    if fusion == "rrf":
        fused: dict[str, float] = {}
        for scores in (text_scores, vector_scores):
            for rank, cid in enumerate(sorted(scores, key=lambda k: -scores[k])):
                fused[cid] = fused.get(cid, 0.0) + 1.0 / (RRF_K + rank + 1)
        top = max(fused.values(), default=1.0)
        return {k: v / top for k, v in fused.items()}
    ids = set(text_scores) | set(vector_scores)
    return {cid: w * vector_scores.get(cid, 0.0) + (1 - w) * text_scores.get(cid, 0.0) for cid in ids}


def make_snippet(text: str, terms: set[str], max_chars: int = 240) -> tuple[str, list[tuple[int, int]]]:
    """The densest window of lines around the query terms, with the matched spans marked."""
    lines = text.split("\n")
    best_i, best_hits = 0, -1
    for i, line in enumerate(lines):
        hits = sum(1 for t, _, _, _ in spans(line) if t in terms)
        if hits > best_hits:
            best_i, best_hits = i, hits
    start = best_i
    out = lines[best_i].strip()
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
    for t, s, e, _ in spans(out):
        if t in terms:
            if marks and s <= marks[-1][1]:
                marks[-1] = (marks[-1][0], max(marks[-1][1], e))
            else:
                marks.append((s, e))
    return out, marks
