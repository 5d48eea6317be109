"""Cold-process `qwenmem sessions list` on a generated 1,000 × 200 workspace: median wall time and peak RSS.

    python bench/speed/sessions_list_bench.py [--runs 5]
Targets (issue 2): median ≤ 2 s, peak memory ≤ 300 MB on the 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from bench._results import update_section  # noqa: E402
from bench._timing import run_qwenmem  # noqa: E402
from bench.generators.gen_workspace import generate  # noqa: E402

WORK = HERE.parent / "_work" / "ws_1000x200"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    if not (WORK / "sessions").is_dir():
        t = time.perf_counter()
        generate(WORK, 1000, 200)
        print(f"generated {WORK} in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    size = sum(p.stat().st_size for p in WORK.rglob("*.json"))
    rows = []
    loads = [os.getloadavg()[0]]
    for label, extra in (("table", []), ("--json", ["--json"])):
        walls, cpus, rss = [], [], []
        for _ in range(a.runs):
            run = run_qwenmem(["-w", str(WORK), "sessions", "list", *extra])
            walls.append(run.wall)
            cpus.append(run.cpu)
            rss.append(run.peak_rss_mib)
        rows.append((label, statistics.median(walls), min(walls), max(walls), statistics.median(cpus), max(rss)))
        print(f"{label}: median {statistics.median(walls):.2f}s (cpu {statistics.median(cpus):.2f}s), "
              f"peak RSS {max(rss):.0f} MiB", file=sys.stderr)
        loads.append(os.getloadavg()[0])
    table = "\n".join(f"| `sessions list {lab}` | {med:.2f} s | {lo:.2f}–{hi:.2f} s | {cpu:.2f} s | {mem:.0f} MiB |"
                      for lab, med, lo, hi, cpu, mem in rows)
    update_section("sessions-list", f"""Command: `python bench/speed/sessions_list_bench.py --runs {a.runs}` (cold process each run,
workspace from `bench/generators/gen_workspace.py`: 1,000 sessions × 200 messages, mixed English/Chinese, tool calls,
{size / 1e6:.0f} MB of JSON; estimate tokenizer; page cache warm; 1-minute load average {min(loads):.1f}–{max(loads):.1f}
on 2 shared cores). Peak RSS is qwenmem's own, measured through a small launcher (`bench/_timing.py`).

| command | median wall | range | median CPU (user+sys, with its worker processes) | peak RSS |
|---|---|---|---|---|
{table}

Targets: median ≤ 2 s, peak ≤ 300 MB. On a shared machine the wall time includes the queue for a core (see the
load average); the CPU time does not. Sessions are parsed one at a time and only a summary row is kept.""")


if __name__ == "__main__":
    main()
