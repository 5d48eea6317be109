"""`qwenmem fleet` over many small generated workspaces: workspaces/s for the local pool, for Dask on a
LocalCluster, and for a plain shell loop that starts `qwenmem` once per workspace; the driver's peak memory at
1,000 and at 10,000 workspaces.

    python bench/speed/fleet_bench.py [--count 10000] [--loop-sample 200] [--jobs 2]
Targets (issue 17): the fleet at least 5x faster than the loop; the driver's peak RSS flat from 1,000 to 10,000.
The command is `sessions repair --check` (model-free, read-only), so the runs measure the fleet, not a model.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parents[1]))
from bench._results import update_section  # noqa: E402

SAMPLE = REPO / "qwenmem" / "sample" / "workspace"
COMMAND = ["sessions", "repair", "--check"]


def generate(base: Path, count: int) -> Path:
    """`count` small workspaces: the sample's two healthy sessions, its chats.json and MEMORY.md."""
    marker = base / f".generated-{count}"
    if marker.exists():
        return base
    shutil.rmtree(base, ignore_errors=True)
    files = {rel: (SAMPLE / rel).read_bytes() for rel in (
        "sessions/console/default_1764235442381.json", "sessions/telegram/77_telegram--77.json", "chats.json",
        "MEMORY.md", "agent.json")}
    for i in range(count):
        ws = base / f"ws{i:05d}"
        for rel, data in files.items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_bytes(data)
    marker.touch()
    return base


def listing(base: Path, count: int) -> Path:
    path = base.parent / f"{base.name}-first-{count}.txt"
    names = sorted(p.name for p in base.iterdir() if p.name.startswith("ws"))[:count]
    path.write_text("".join(f"{base / n}\n" for n in names))
    return path


def _peak_rss_mib(pid: int, stop: threading.Event, out: list[float]) -> None:
    """VmHWM is the process's own high-water mark (pool workers are separate processes and not counted)."""
    while not stop.is_set():
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    out.append(int(line.split()[1]) / 1024)
        except OSError:
            return
        stop.wait(0.05)


def run_fleet(args: list[str]) -> tuple[float, int, float]:
    """(seconds, records, driver peak RSS MiB) of one `qwenmem fleet …` process."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "qwenmem", "fleet", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    peaks: list[float] = []
    stop = threading.Event()
    watcher = threading.Thread(target=_peak_rss_mib, args=(proc.pid, stop, peaks))
    watcher.start()
    records = sum(1 for _ in proc.stdout)  # type: ignore[union-attr]
    proc.wait()
    seconds = time.perf_counter() - start
    stop.set()
    watcher.join()
    return seconds, records, max(peaks or [0.0])


def run_loop(base: Path, sample: int) -> tuple[float, int]:
    names = sorted(p.name for p in base.iterdir() if p.name.startswith("ws"))[:sample]
    script = "for ws in \"$@\"; do \"$PY\" -m qwenmem -w \"$ws\" " + " ".join(COMMAND) + " --json >/dev/null; done"
    env = dict(os.environ, PYTHONPATH=str(REPO), PY=sys.executable)
    start = time.perf_counter()
    subprocess.run(["bash", "-c", script, "loop", *[str(base / n) for n in names]], env=env, check=False)
    return time.perf_counter() - start, len(names)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("--loop-sample", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/qm-fleet-bench"))
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()

    t0 = time.perf_counter()
    base = generate(args.dir, args.count)
    print(f"generated {args.count} workspaces in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    small = listing(base, args.small)
    cmd = ["--", *COMMAND]
    rows = []
    s, n, rss_small = run_fleet(["--from", str(small), "-j", str(args.jobs), *cmd])
    rows.append(("local pool", args.small, s, n, rss_small))
    s, n, rss_big = run_fleet([str(base), "-j", str(args.jobs), *cmd])
    local_rate = n / s
    rows.append(("local pool", args.count, s, n, rss_big))

    from distributed import LocalCluster

    with LocalCluster(n_workers=args.jobs, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=40) as cluster:
        s, n, rss_dask = run_fleet([str(base), "--engine", "dask", "--scheduler", cluster.scheduler_address, *cmd])
    rows.append(("dask LocalCluster", args.count, s, n, rss_dask))
    loop_s, loop_n = run_loop(base, args.loop_sample)
    loop_rate = loop_n / loop_s

    table = ["| engine | workspaces | seconds | workspaces/s | driver peak RSS |", "|---|---:|---:|---:|---:|"]
    for name, count, s, n, rss in rows:
        assert n == count, f"{name}: {n} records for {count} workspaces"
        table.append(f"| {name} (-j {args.jobs}) | {count:,} | {s:.1f} | {n / s:.1f} | {rss:.0f} MiB |")
    table.append(f"| shell loop, one `qwenmem` per workspace | {loop_n} (sample) | {loop_s:.1f} | {loop_rate:.1f} | - |")
    text = "\n".join([
        (f"`python bench/speed/fleet_bench.py --count {args.count} --loop-sample {args.loop_sample} --jobs {args.jobs}`: "
        f"`qwenmem fleet DIR -- {' '.join(COMMAND)}` over generated workspaces (two healthy sessions, MEMORY.md each)."),
        "",
        *table,
        "",
        (f"Local pool vs the shell loop: **{local_rate / loop_rate:.1f}×** (goal ≥ 5×). Driver peak RSS "
        f"{rss_small:.0f} MiB at {args.small:,} vs {rss_big:.0f} MiB at {args.count:,} workspaces (workspaces are "
        "read lazily and at most 2×jobs are in flight). The loop rate is measured on a sample: it is per workspace."),
        f"Load average while it ran: {os.getloadavg()[0]:.1f} (another job sharing the 2 cores lowers every rate).",
    ])
    print(text)
    if not args.no_record:
        update_section("fleet", text)


if __name__ == "__main__":
    main()
