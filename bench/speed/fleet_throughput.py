"""`qwenmem fleet -- doctor` throughput (issue 27): the local pool, a real Dask cluster (a `dask scheduler` and two
`dask worker` processes of one thread each, started here, as an operator's existing cluster), and a shell loop of
the single command (`for ws in …; do qwenmem -w $ws doctor --json; done`), over the same deployments of 200 and
1,000 workspaces (bench/generators/fleet_deployment.py: mixed 1.x/2.x, some damaged).

    python bench/speed/fleet_throughput.py [--sizes 200,1000] [--rounds 3] [--jobs 2] [--loop-full-up-to 200]
                                           [--loop-sample 100]

The three run interleaved (round after round, each size, each engine), each with the 1-minute load average
(`uptime`) before and after it. The shell loop runs on every workspace of a deployment up to --loop-full-up-to,
and on a seeded random sample of --loop-sample above that, its time extrapolated (it is per workspace). The Dask cluster is
started once, before the rounds, and not timed: an existing cluster. Every run is checked: one record per
workspace, and the fleet's exit code per workspace equals the shell loop's for the workspaces both ran.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
from bench._results import update_section  # noqa: E402
from bench.generators.fleet_deployment import generate  # noqa: E402

ENV = dict(os.environ, PYTHONPATH=str(REPO))


def load() -> float:
    return os.getloadavg()[0]


@dataclass
class Runs:
    seconds: list[float] = field(default_factory=list)  # for the whole deployment (extrapolated for a sample)
    loads: list[tuple[float, float]] = field(default_factory=list)
    measured_on: int = 0


def fleet(deployment: Path, engine_args: list[str]) -> tuple[float, dict[str, int]]:
    """(seconds, exit code per workspace) of one `qwenmem fleet DEPLOYMENT … -- doctor` process."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "qwenmem", "fleet", str(deployment), *engine_args, "--", "doctor"],
                          capture_output=True, text=True, env=ENV, check=False)
    seconds = time.perf_counter() - start
    codes = {}
    for line in proc.stdout.splitlines():
        record = json.loads(line)
        codes[record["workspace"]] = record["exit_code"]
    assert proc.returncode in (0, 1), proc.stderr
    return seconds, codes


LOOP = 'for ws in "$@"; do "$PY" -m qwenmem -w "$ws" doctor --json >/dev/null; echo "$? $ws"; done'


def shell_loop(workspaces: list[str]) -> tuple[float, dict[str, int]]:
    start = time.perf_counter()
    proc = subprocess.run(["bash", "-c", LOOP, "loop", *workspaces], capture_output=True, text=True,
                          env=dict(ENV, PY=sys.executable), check=True)
    seconds = time.perf_counter() - start
    codes = {}
    for line in proc.stdout.splitlines():
        code, ws = line.split(" ", 1)
        codes[ws] = int(code)
    return seconds, codes


class DaskCluster:
    """`dask scheduler` plus two `dask worker --nthreads 1` processes on 127.0.0.1, in a cwd of their own."""

    def __init__(self, workers: int) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="qm-fleet-dask-"))
        scheduler_file = self.dir / "scheduler.json"
        self.procs = [self._spawn("distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                                  "--no-dashboard", "--scheduler-file", str(scheduler_file))]
        while not scheduler_file.exists():
            time.sleep(0.2)
        self.address = json.loads(scheduler_file.read_text())["address"]
        self.procs += [self._spawn("distributed.cli.dask_worker", self.address, "--nthreads", "1", "--no-dashboard",
                                   "--host", "127.0.0.1") for _ in range(workers)]
        from distributed import Client

        with Client(self.address, set_as_default=False) as client:
            client.wait_for_workers(workers, timeout=120)

    def _spawn(self, module: str, *args: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", module, *args], cwd=self.dir, env=ENV,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            proc.wait(30)


def measure(sizes: list[int], rounds: int, jobs: int, loop_full: int, loop_sample: int,
            base: Path) -> tuple[dict, dict]:
    deployments = {n: base / f"deployment-{n}" for n in sizes}
    kinds = {n: generate(path, n) for n, path in deployments.items()}
    workspaces = {n: sorted(str(p) for p in path.iterdir() if not p.name.startswith(".")) for n, path in
                  deployments.items()}
    samples = {n: ws if len(ws) <= loop_full else sorted(random.Random(27).sample(ws, loop_sample))
               for n, ws in workspaces.items()}
    runs = {(n, mode): Runs() for n in sizes for mode in ("local", "dask", "shell")}
    cluster = DaskCluster(jobs)
    try:
        for r in range(rounds):
            for n in sizes:
                for mode in ("local", "dask", "shell"):
                    before = load()
                    if mode == "shell":
                        seconds, codes = shell_loop(samples[n])
                        measured = len(samples[n])
                        seconds *= n / measured
                    else:
                        args = ["-j", str(jobs)] if mode == "local" else ["--engine", "dask", "--scheduler",
                                                                          cluster.address]
                        seconds, codes = fleet(deployments[n], args)
                        assert len(codes) == n, f"{mode} at {n}: {len(codes)} records"
                        measured = n
                        if mode == "local":
                            local_codes = codes
                    after = load()
                    if mode == "shell":  # the fleet says for each workspace what the single command says
                        assert {ws: local_codes[ws] for ws in codes} == codes, f"exit codes differ at {n}"
                    run = runs[(n, mode)]
                    run.seconds.append(seconds)
                    run.loads.append((before, after))
                    run.measured_on = measured
                    print(f"round {r + 1} {mode:5} {n:5}: {seconds:7.1f} s (measured on {measured}) load "
                          f"{before:.2f} → {after:.2f}", file=sys.stderr, flush=True)
    finally:
        cluster.close()
    return runs, kinds


def table(runs: dict, kinds: dict, sizes: list[int], jobs: int) -> list[str]:
    rows = ["| workspaces | engine | seconds per round (load before → after) | median | workspaces/s | vs shell loop |",
            "|---:|---|---|---:|---:|---:|"]
    names = {"local": f"fleet, local pool (-j {jobs})", "dask": f"fleet, Dask cluster ({jobs} worker processes × 1 "
             "thread)", "shell": "shell loop of `qwenmem -w WS doctor --json`"}
    for n in sizes:
        shell_median = statistics.median(runs[(n, "shell")].seconds)
        for mode in ("local", "dask", "shell"):
            run = runs[(n, mode)]
            median = statistics.median(run.seconds)
            per_round = ", ".join(f"{s:.1f} ({a:.1f} → {b:.1f})" for s, (a, b) in zip(run.seconds, run.loads))
            name = names[mode] + (f" — sample of {run.measured_on}, extrapolated" if run.measured_on < n else "")
            ratio = "1×" if mode == "shell" else f"**{shell_median / median:.1f}×**"
            rows.append(f"| {n:,} | {name} | {per_round} | {median:.1f} s | {n / median:.1f} | {ratio} |")
    rows.append("")
    rows.append("Deployments: " + "; ".join(f"{n:,}: " + ", ".join(f"{v} {k}" for k, v in kinds[n].items())
                                            for n in sizes) + ".")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="200,1000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--loop-full-up-to", type=int, default=200, help="the shell loop runs on every workspace of "
                    "a deployment this size or smaller")
    ap.add_argument("--loop-sample", type=int, default=100, help="and on a random sample this size above it")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/qm-fleet-throughput"))
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    runs, kinds = measure(sizes, args.rounds, args.jobs, args.loop_full_up_to, args.loop_sample, args.dir)
    command = (f"python bench/speed/fleet_throughput.py --sizes {args.sizes} --rounds {args.rounds} --jobs "
               f"{args.jobs} --loop-full-up-to {args.loop_full_up_to} --loop-sample {args.loop_sample}")
    text = "\n".join([f"`{command}`: `qwenmem fleet DIR -- doctor` against a shell loop of the single command, "
                      "interleaved, the 1-minute load average before → after each run.", "",
                      *table(runs, kinds, sizes, args.jobs)])
    print(text)
    if not args.no_record:
        update_section("fleet-throughput", text)


if __name__ == "__main__":
    main()
