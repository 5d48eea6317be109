"""What the Dask engine's window (tasks in flight per worker thread, `Engine.window`) does to `fleet -- doctor`
throughput (issue 27): the same deployment (bench/generators/fleet_deployment.py) on a real Dask cluster (a `dask
scheduler` and `dask worker` processes of one thread each, started here, as fleet_throughput.py does) with 2 tasks
per thread (the window before `Engine.window`), 4, 8 (the Dask engine's default) and 16, and on the local pool
(2 per worker) for reference.

    python bench/speed/fleet_window.py [--size 1000] [--rounds 3] [--jobs 2] [--windows 2,4,8,16] [--no-record]

Each run is `run_fleet` in this process from the engine's start to its close (the cluster itself is started once,
before the rounds, and not timed: an existing cluster). The runs are interleaved, round after round, with the
1-minute load average before and after each; every run must give one record per workspace, and the same exit code
per workspace as the local pool.
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
sys.path.insert(0, str(HERE))
from bench._results import update_section  # noqa: E402
from bench.generators.fleet_deployment import generate  # noqa: E402
from fleet_throughput import DaskCluster  # noqa: E402


def one_run(deployment: Path, engine: str, jobs: int, address: str, per_thread: int | None) -> tuple[float, dict]:
    """(seconds, exit code per workspace) of one run_fleet over the deployment."""
    from qwenmem.cli.app import fleet_command
    from qwenmem.cli.commands.fleet import record_exit_code
    from qwenmem.core.fleet import discover, run_fleet
    from qwenmem.core.fleet.dask_engine import DaskEngine
    from qwenmem.core.fleet.engines import LocalEngine

    command = fleet_command(["doctor"])
    codes: dict[str, int] = {}
    start = time.perf_counter()
    if engine == "local":
        pool = LocalEngine(jobs, None, command.name)
        window = None
    else:
        pool = DaskEngine(address, None, warm_for=command.name)
        window = None if per_thread is None else per_thread * pool.workers
    run_fleet(discover([deployment]), command, pool,
              lambda target, record, attempts: codes.__setitem__(target.label, record_exit_code(record)),
              window=window)
    return time.perf_counter() - start, codes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--windows", default="2,4,8,16", help="tasks in flight per Dask worker thread, each a run")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/qm-fleet-window"))
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    windows = [int(w) for w in args.windows.split(",")]
    deployment = args.dir / f"deployment-{args.size}"
    kinds = generate(deployment, args.size)
    modes = [("local", None), *(("dask", w) for w in windows)]
    runs: dict[tuple[str, int | None], list[tuple[float, float, float]]] = {m: [] for m in modes}
    cluster = DaskCluster(args.jobs)
    try:
        for r in range(args.rounds):
            for engine, per_thread in modes:
                before = os.getloadavg()[0]
                seconds, codes = one_run(deployment, engine, args.jobs, cluster.address, per_thread)
                after = os.getloadavg()[0]
                assert len(codes) == args.size, f"{engine} {per_thread}: {len(codes)} records"
                if engine == "local":
                    local_codes = codes
                assert codes == local_codes, f"exit codes differ: {engine} {per_thread}"
                runs[(engine, per_thread)].append((seconds, before, after))
                print(f"round {r + 1} {engine:5} window {per_thread or 2}/thread: {seconds:6.1f} s load "
                      f"{before:.2f} → {after:.2f}", file=sys.stderr, flush=True)
    finally:
        cluster.close()
    local_median = statistics.median(s for s, _, _ in runs[("local", None)])
    rows = ["| engine | tasks in flight per thread | seconds per round (load before → after) | median | workspaces/s "
            "| time vs local |", "|---|---:|---|---:|---:|---:|"]
    for engine, per_thread in modes:
        seconds = [s for s, _, _ in runs[(engine, per_thread)]]
        median = statistics.median(seconds)
        rounds = ", ".join(f"{s:.1f} ({a:.1f} → {b:.1f})" for s, a, b in runs[(engine, per_thread)])
        name = f"local pool (-j {args.jobs})" if engine == "local" else f"Dask ({args.jobs} workers × 1 thread)"
        rows.append(f"| {name} | {per_thread or 2} | {rounds} | {median:.1f} s | {args.size / median:.1f} | "
                    f"{median / local_median:.2f}× |")
    command = (f"python bench/speed/fleet_window.py --size {args.size} --rounds {args.rounds} --jobs {args.jobs} "
               f"--windows {args.windows}")
    text = "\n".join([f"`{command}`: `fleet -- doctor` over {args.size:,} workspaces ("
                      + ", ".join(f"{v} {k}" for k, v in kinds.items()) + "), interleaved rounds.", "", *rows])
    print(text)
    if not args.no_record:
        update_section("fleet-window", text)


if __name__ == "__main__":
    main()
