"""ReMe 0.4 compatibility for the search index (qwenpaw2-workspace.md §5.2, §5.5; reme-index.md Appendix A).

* `index_view`: what a 2.x memory file contributes to the index. Front matter is excluded from chunks (its lines
  become empty, so every chunk keeps the file's own line numbers and the chunker trims them off) and kept as
  metadata: kind, title, date, tags, description and the wikilinks, stored with the file in the manifest.
* `reme_fuse`: ReMe's rank fusion, for comparison (`search --fusion reme`): each side cut to
  min(200, max(1, int(limit * 3))) candidates; both non-empty -> sum of w / (60 + rank), w = 0.7 for the vector
  list and 0.3 for the keyword list (rank from 1); one side empty -> that side's raw scores.
* `format_memory_search`: ReMe's `memory_search` answer text, so an agent reading qwenmem's output gets what it
  knows: `========== <path>:<a>-<b> [score=… vector=… keyword=…] ==========`, the chunk, then its wikilink
  neighbours; `(no memory results)` when empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qwenmem.core import reme_notes as notes

REME_VECTOR_WEIGHT = 0.7
REME_RRF_K = 60
REME_CANDIDATE_MULTIPLIER = 3.0  # QwenPaw's setting (ReMe's own default is 5.0)
REME_MAX_FILE_BYTES = 10 * 1024 * 1024  # ReMe 0.4's _MAX_FILE_BYTES: larger files are not indexed
NO_MEMORY_RESULTS = "(no memory results)"
MAX_LINKS_PER_DIRECTION = 10
KIND_LABELS = {notes.CORE: "core memory", notes.NOTE: "note", notes.DAY_INDEX: "day index",
               notes.DAILY_LOG: "daily log", notes.DIGEST: "digest"}


def index_view(rel: str, text: str, daily_dir: str = "memory", digest_dir: str = "digest") -> tuple[str, dict[str, Any]]:
    """(text to chunk, metadata). Line count and line numbers are the file's own."""
    note = notes.parse_note(text)
    meta: dict[str, Any] = {"kind": notes.kind_of(rel, note, daily_dir, digest_dir)}
    for key, value in (("title", note.title), ("date", note.date(rel)), ("description", note.description)):
        if value:
            meta[key] = value
    tags = note.tags
    if tags:
        meta["tags"] = tags
    links = notes.wikilinks(note.body)
    if links:
        meta["links"] = links[:100]
    if not note.front_matter_lines:
        return text, meta
    lines = text.split("\n")
    # every front-matter line becomes empty: same number of lines, nothing of it left to match
    return "\n".join([""] * note.front_matter_lines + lines[note.front_matter_lines:]), meta


def has_tag(meta: dict[str, Any] | None, wanted: list[str]) -> bool:
    """Whether a file's tags include any of `wanted` (case-insensitive, '#' optional)."""
    have = {t.casefold() for t in (meta or {}).get("tags") or []}
    return any(w.lstrip("#").casefold() in have for w in wanted)


def candidates_for(limit: int) -> int:
    return min(200, max(1, int(limit * REME_CANDIDATE_MULTIPLIER)))


def reme_fuse(keyword: dict[str, float], vector: dict[str, float], limit: int,
              vector_weight: float = REME_VECTOR_WEIGHT) -> dict[str, float]:
    """{chunk id: ReMe's score}. `keyword` holds positive BM25 scores, `vector` cosines (any sign)."""
    n = candidates_for(limit)
    kw = sorted(keyword.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    vec = sorted(vector.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    if not kw:
        return dict(vec)
    if not vec:
        return dict(kw)
    fused: dict[str, float] = {}
    for weight, ranking in ((vector_weight, vec), (1.0 - vector_weight, kw)):
        for rank, (cid, _) in enumerate(ranking, 1):
            fused[cid] = fused.get(cid, 0.0) + weight / (REME_RRF_K + rank)
    return fused


@dataclass(frozen=True)
class RemeHit:
    path: str
    start_line: int
    end_line: int
    score: float
    vector_score: float | None
    keyword_score: float | None
    text: str  # the whole chunk, as ReMe prints it


def _header(h: RemeHit) -> str:
    scores = f"score={h.score:.4f}"
    if h.vector_score is not None and h.keyword_score is not None:
        scores += f" vector={h.vector_score:.4f} keyword={h.keyword_score:.4f}"
    return f"========== {h.path}:{h.start_line}-{h.end_line} [{scores}] =========="


def _neighbour(path: str, meta: dict[str, Any] | None) -> str:
    meta = meta or {}
    out = path
    if meta.get("title"):
        out += f'  name="{meta["title"]}"'
    if meta.get("description"):
        out += f'  description="{meta["description"]}"'
    return out


def _resolve(link: str, files: dict[str, dict[str, Any]]) -> str | None:
    """A wikilink target as a workspace-relative path that is indexed (ReMe links are workspace-relative)."""
    target = link.strip().lstrip("/")
    for candidate in (target, target + ".md"):
        if candidate in files:
            return candidate
    return None


def format_memory_search(hits: list[RemeHit], files: dict[str, dict[str, Any]] | None = None, expand_links: bool = True) -> str:
    """ReMe 0.4's `memory_search` text. `files`: the index manifest's files (path -> entry with "meta"), for the
    wikilink neighbours; without it no links are listed."""
    if not hits:
        return NO_MEMORY_RESULTS
    files = files or {}
    inlinks: dict[str, list[str]] = {}
    if expand_links:
        for path, entry in sorted(files.items()):
            for link in ((entry or {}).get("meta") or {}).get("links") or []:
                target = _resolve(link, files)
                if target and target != path:
                    inlinks.setdefault(target, []).append(path)
    blocks = []
    for h in hits:
        lines = [_header(h), h.text]
        if expand_links:
            out = [t for t in (_resolve(link, files) for link in notes.wikilinks(h.text)) if t and t != h.path]
            out = list(dict.fromkeys(out))[:MAX_LINKS_PER_DIRECTION]
            if out:
                lines.append(f"  outlinks ({len(out)}):")
                lines += [f"    → {_neighbour(p, (files.get(p) or {}).get('meta'))}" for p in out]
            came = inlinks.get(h.path, [])[:MAX_LINKS_PER_DIRECTION]
            if came:
                lines.append(f"  inlinks ({len(came)}):")
                lines += [f"    ← {_neighbour(p, (files.get(p) or {}).get('meta'))}" for p in came]
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def label(rel: str, meta: dict[str, Any] | None) -> str | None:
    """How a hit's file is labelled for people: 'core memory' for MEMORY.md, etc.; None for 1.x files (no
    metadata is recorded for them)."""
    return KIND_LABELS.get(str((meta or {}).get("kind")))
