"""`qwenmem fleet`'s discovery and driver: how long finding the workspaces takes (`--dry-run`), how soon the first
task's record arrives, and the driver's peak memory, at 1,000 and 10,000 workspaces.

    python bench/speed/fleet_discovery.py [--sizes 1000 10000] [--rounds 3] [--jobs 2] [--dir /tmp/qm-fleet-deploy]

Deployments from bench/generators/fleet_discovery_deployment.py (30 % 2.x roots, 5 % damaged). Goals (issue 27): the first
task started within 5 s at 10,000 workspaces; the driver's peak RSS flat from 1,000 to 10,000. The first record
is written when the first task has *finished*, so its time is an upper bound of when the first task started.
Peak RSS is the driver's own VmHWM (/proc/PID/status); the pool's workers are other processes and not counted.
The run is `doctor` (read-only, model-free); the deployments' files are hard links, so nothing here writes them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "generators"))
from fleet_discovery_deployment import generate  # noqa: E402

from bench._results import update_section  # noqa: E402


def _watch_hwm(pid: int, stop: threading.Event, out: list[int]) -> None:
    """The last VmHWM read before the process ends is its peak (the kernel keeps the high-water mark)."""
    while not stop.is_set():
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    out.append(int(line.split()[1]))
        except OSError:
            return
        stop.wait(0.02)


def run(args: list[str]) -> dict[str, float]:
    """One `qwenmem fleet …` process: seconds to the end, to its first record, records, the driver's peak KiB."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "qwenmem", "fleet", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    peaks: list[int] = []
    stop = threading.Event()
    watcher = threading.Thread(target=_watch_hwm, args=(proc.pid, stop, peaks))
    watcher.start()
    first = None
    records = 0
    for _ in proc.stdout:  # type: ignore[union-attr]
        records += 1
        if first is None:
            first = time.perf_counter() - start
    proc.wait()
    seconds = time.perf_counter() - start
    stop.set()
    watcher.join()
    return {"seconds": seconds, "first": first or seconds, "records": records, "hwm_mib": max(peaks or [0]) / 1024}


def load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/qm-fleet-deploy"))
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()

    rows = []
    for size in args.sizes:
        base = args.dir.with_name(f"{args.dir.name}-{size}")
        counts = generate(base, size, 0.3, 0.05)
        print(f"{base}: {counts}", file=sys.stderr)
        dry, full = [], []
        for _ in range(args.rounds):  # interleaved: a change of load hits both kinds alike
            dry.append((run([str(base), "--dry-run", "--", "doctor"]), load()))
            full.append((run([str(base), "-j", str(args.jobs), "--", "doctor"]), load()))
            print(f"  {size}: dry {dry[-1][0]} full {full[-1][0]} load {full[-1][1]}", file=sys.stderr)
        assert all(r["records"] == size for r, _ in dry + full), "a run lost workspaces"
        rows.append((size, counts, dry, full))

    def med(results: list, key: str) -> float:
        return statistics.median(r[key] for r, _ in results)

    lines = [f"`python bench/speed/fleet_discovery.py --sizes {' '.join(map(str, args.sizes))} --rounds "
             f"{args.rounds} --jobs {args.jobs}`: deployments from `bench/generators/fleet_discovery_deployment.py` (30 % "
             "2.x roots from the generated 2.2.2 corpus workspace, 70 % the 1.x sample, 5 % damaged). Medians of "
             f"{args.rounds} interleaved rounds; `doctor` with `-j {args.jobs}`.", "",
             "| workspaces | `--dry-run` (whole process) | driver peak RSS, dry-run | first record of `doctor` | "
             "`doctor` run | driver peak RSS, `doctor` | load average (1, 5, 15 min) at the rounds |",
             "|---:|---:|---:|---:|---:|---:|---|"]
    for size, _, dry, full in rows:
        loads = "; ".join(sorted({la for _, la in dry + full}))
        lines.append(f"| {size:,} | {med(dry, 'seconds'):.2f} s | {med(dry, 'hwm_mib'):.0f} MiB | "
                     f"{med(full, 'first'):.2f} s | {med(full, 'seconds'):.1f} s | {med(full, 'hwm_mib'):.0f} MiB | "
                     f"{loads} |")
    lines += ["", "The first record is written when the first task has finished (doctor takes ~10 ms on these "
              "workspaces), so it bounds from above when the first task started: discovery streams, and tasks "
              "start while the rest are being found. Goal ≤ 5 s at 10,000; driver peak RSS flat."]
    text = "\n".join(lines)
    print(text)
    if not args.no_record:
        update_section("fleet-discovery", text)


if __name__ == "__main__":
    main()
