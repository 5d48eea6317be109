"""QwenPaw 2.x reading speed: cold `sessions list` and `sessions show --history` on a generated bench workspace
(1,000 scroll sessions, history.db of 1,000,000 rows, one session of 20,000 rows).

    python bench/speed/qwenpaw2_bench.py [--dest /tmp/qwenpaw2_bench] [--runs 5]
Targets (issue 13): `sessions list` median ≤ 1.5 s; `sessions show --history` of the 20,000-row session ≤ 1 s.
Each run is a fresh `python -m qwenmem` process; the data lives outside the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from bench._results import update_section  # noqa: E402
from bench._timing import run_qwenmem  # noqa: E402
from bench.generators.qwenpaw2_gen import generate  # noqa: E402


def _verdict(medians: dict[str, float]) -> str:
    listed, shown = medians["`sessions list`"], medians["`sessions show console:user0000 --history`"]
    shown_json = medians["`sessions show console:user0000 --history --json`"]
    return (f"Verdict: `sessions list` {listed:.2f} s {'≤' if listed <= 1.5 else '>'} 1.5 s; `show --history` of the "
            f"20,000-row session {shown:.2f} s {'≤' if shown <= 1 else '>'} 1 s (plain output; wall times, so a "
            f"loaded machine can miss a target its CPU times meet). `show --history --json` takes {shown_json:.2f} s, "
            "most of it `json.dumps(indent=2)` of a 10 MB document in `output.print_json` (the pure-Python "
            "encoder); not optimised.")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dest", type=Path, default=Path("/tmp/qwenpaw2_bench"))
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    ws = a.dest / "workspace"
    if not (ws / "history.db").is_file():
        t = time.perf_counter()
        facts = generate(a.dest, 1000, 1_000_000, 20_000)
        print(f"generated {json.dumps(facts)} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    db_mb = (ws / "history.db").stat().st_size / 2**20
    cases = [("`sessions list`", ["sessions", "list"]), ("`sessions list --json`", ["sessions", "list", "--json"]),
             ("`sessions show console:user0000 --history`", ["sessions", "show", "console:user0000", "--history"]),
             ("`sessions show console:user0000 --history --json`",
              ["sessions", "show", "console:user0000", "--history", "--json"])]
    lines = ["| command | median wall | wall range | median CPU (user+sys) | peak RSS |", "|---|---|---|---|---|"]
    medians: dict[str, float] = {}
    loads = [os.getloadavg()[0]]
    for label, args in cases:
        walls, cpus, rss = [], [], []
        for _ in range(a.runs):
            run = run_qwenmem(["-w", str(ws), *args])
            walls.append(run.wall)
            cpus.append(run.cpu)
            rss.append(run.peak_rss_mib)
        med = medians[label] = statistics.median(walls)
        print(f"{label}: median {med:.2f}s ({min(walls):.2f}-{max(walls):.2f}), CPU {statistics.median(cpus):.2f}s, "
              f"peak RSS {max(rss):.0f} MiB", file=sys.stderr)
        lines.append(f"| {label} | {med:.2f} s | {min(walls):.2f}–{max(walls):.2f} s | "
                     f"{statistics.median(cpus):.2f} s | {max(rss):.0f} MiB |")
        loads.append(os.getloadavg()[0])
    text = ("QwenPaw 2.x workspace from `bench/generators/qwenpaw2_gen.py`: 1,000 scroll session files (20-message live tail "
            f"each), `history.db` of 1,000,000 rows ({db_mb:.0f} MiB), one session of 20,000 rows. {a.runs} cold "
            "processes each, output to /dev/null; CPU is user + sys of the process and its children; peak RSS is "
            "qwenmem's own, measured through a small launcher (`bench/_timing.py`). Targets: list ≤ 1.5 s, "
            "show --history ≤ 1 s.\n\n"
            f"1-minute load average during the run: {min(loads):.1f}–{max(loads):.1f} on 2 cores (the machine is "
            "shared; wall times scale with it, CPU times much less).\n\n"
            "Command: `python bench/speed/qwenpaw2_bench.py`\n\n" + "\n".join(lines) + "\n\n" + _verdict(medians))
    update_section("qwenpaw2-read", "## QwenPaw 2.x: sessions list / show --history\n\n" + text)


if __name__ == "__main__":
    main()
