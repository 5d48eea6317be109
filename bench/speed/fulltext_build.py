"""Text-only full index: Whoosh's own writer against qwenmem's (core/index/whoosh_writer.py), side by side.

    /work/main/.venv/bin/python bench/speed/fulltext_build.py --ws /tmp/qm-speed-ws --runs 3 --convs 2

Speed: cold `qwenmem reindex --full --embedder none` processes on the 10k-chunk workspace of bench/speed/search_speed.py,
alternating old (QWENMEM_FULLTEXT_WRITER=whoosh) and new, --runs each. Ranking: both writers index the same
LoCoMo conversations (bench/generators/locomo_workspace.py) and the 10k workspace; every LoCoMo question and every speed
query is searched in text mode on both, and the hit lists (path, lines, score) must be identical.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

REPO = Path(__file__).resolve().parents[2]
WRITERS = {"old (Whoosh's writer)": {"QWENMEM_FULLTEXT_WRITER": "whoosh"}, "new (qwenmem's writer)": {}}


def cold_build(ws: Path, extra: dict) -> tuple[float, int]:
    env = {k: v for k, v in os.environ.items() if k != "QWENMEM_FULLTEXT_WRITER"}
    env.update(PYTHONPATH=str(REPO), **extra)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "qwenmem", "reindex", "-w", str(ws), "--full", "--embedder", "none",
                           "--json"], capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return elapsed, json.loads(proc.stdout)["result"]["chunks_total"]


def hits(ws_path: Path, queries: list[str], writer_env: dict) -> list:
    from qwenmem.core.index import fulltext
    from qwenmem.core.index.reindexing import run_reindex
    from qwenmem.core.index.search import search
    from qwenmem.core.settings import load_settings
    from qwenmem.core.workspace import discover_workspace

    os.environ.pop("QWENMEM_FULLTEXT_WRITER", None)
    os.environ.update(writer_env)
    ws = discover_workspace(ws_path)
    settings = load_settings(ws)
    run_reindex(ws, settings, full=True, backend="none")
    fulltext._OPEN.clear()
    out = [[(h.path, h.start_line, h.end_line, h.score) for h in
            search(ws, settings, q, mode="text", max_results=10, auto_reindex=False).hits] for q in queries]
    os.environ.pop("QWENMEM_FULLTEXT_WRITER", None)
    return out


def sampled_queries(ws: Path, n: int = 190, seed: int = 18) -> list[str]:
    """Two to four consecutive words (or a CJK run) taken from random lines of the workspace."""
    import random

    rng = random.Random(seed)
    lines = [line.lstrip("-# ").strip() for p in sorted((ws / "memory").glob("*.md"))[::10]
             for line in p.read_text(encoding="utf-8").split("\n") if len(line) > 12]
    out = []
    for line in rng.sample(lines, n):
        words = line.split()
        if len(words) < 2:
            out.append(line[: rng.randint(2, 6)])
        else:
            k = rng.randint(2, min(4, len(words)))
            start = rng.randint(0, len(words) - k)
            out.append(" ".join(words[start:start + k]))
    return out


def ranking(convs: int, ws: Path | None) -> list[str]:
    from bench.generators import locomo_workspace as lw
    from bench.speed.search_speed import QUERIES

    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        sets = []
        for conv in lw.load()[:convs]:
            path = lw.build(conv, Path(tmp) / conv["sample_id"])
            sets.append((conv["sample_id"], path, [qa["question"] for qa in lw.questions(conv)]))
        if ws is not None:
            copy = Path(tmp) / "speed-ws"
            shutil.copytree(ws, copy, ignore=shutil.ignore_patterns(".qwenmem"))
            sets.append((ws.name, copy, QUERIES + sampled_queries(ws)))
        for name, path, queries in sets:
            old, new = (hits(path, queries, env) for env in WRITERS.values())
            same = sum(a == b for a, b in zip(old, new))
            lines.append(f"- {name}: {same} of {len(queries)} queries return identical hits (path, lines, score) "
                         f"with both writers")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ws", type=Path, help="the 10k-chunk workspace (bench/speed/search_speed.py --keep)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--convs", type=int, default=2)
    ap.add_argument("--ranking-only", action="store_true", help="skip the timed builds")
    ap.add_argument("--no-ranking", action="store_true", help="only the timed builds")
    ap.add_argument("--only", choices=["old", "new"], help="time one writer only")
    args = ap.parse_args()
    out = []
    if args.ws and not args.ranking_only:
        writers = {k: v for k, v in WRITERS.items() if args.only is None or k.startswith(args.only)}
        times: dict[str, list[float]] = {name: [] for name in writers}
        loads: list[float] = []
        chunks = 0
        for _ in range(args.runs):
            for name, env in writers.items():
                loads.append(os.getloadavg()[0])
                secs, chunks = cold_build(args.ws, env)
                times[name].append(secs)
                print(name, f"{secs:.1f} s", file=sys.stderr, flush=True)
        out += [f"Cold `qwenmem reindex --full --embedder none`, {chunks:,} chunks, {args.runs} runs each, alternating; "
                f"load average (1 min) {min(loads):.2f}–{max(loads):.2f} at the starts.", "",
                "| writer | median | min | max | chunks/s (median) |", "|---|---|---|---|---|"]
        for name, values in times.items():
            med = statistics.median(values)
            out.append(f"| {name} | {med:.1f} s | {min(values):.1f} s | {max(values):.1f} s | {chunks / med:,.0f} |")
        out.append("")
    if not args.no_ranking and (args.convs or args.ws):
        out += ["Ranking:"] + ranking(args.convs, args.ws)
    print("\n".join(out))


if __name__ == "__main__":
    main()
