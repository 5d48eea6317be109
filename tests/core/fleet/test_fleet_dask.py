"""`qwenmem fleet --engine dask` on a real cluster of separate processes: a `dask scheduler` and `dask worker`s
started here on 127.0.0.1 (ports the OS picks), in a working directory of their own, as an operator runs them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import REPO, SAMPLE, run_cli
from qwenmem.core.repair.quarantine import list_runs, originals_in_run
from qwenmem.core.workspace import discover_workspace

pytestmark = pytest.mark.slow
pytest.importorskip("distributed")

HANG_FIXTURE = REPO / "tests" / "fixtures" / "fleet_hang"
SITE_PACKAGES = Path(pytest.importorskip("distributed").__file__).parents[1]


class Cluster:
    """A scheduler and its workers, each its own process; the workers' cwd is not the driver's."""

    def __init__(self, base: Path, workers: int = 2, env: dict[str, str] | None = None) -> None:
        base.mkdir(parents=True, exist_ok=True)
        self.base, self.procs = base, []
        self.scheduler_file = base / "scheduler.json"
        self.worker_cwd = base / "worker-cwd"
        self.worker_cwd.mkdir(exist_ok=True)
        self.env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
        try:
            self._start(workers)
        except BaseException:
            self.close()  # no scheduler left behind by a cluster that did not come up
            raise

    def _start(self, workers: int) -> None:
        self._spawn([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                     "--no-dashboard", "--scheduler-file", str(self.scheduler_file)], self.env)
        deadline = time.monotonic() + 60
        while not self.scheduler_file.exists():
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.2)
        self.address = json.loads(self.scheduler_file.read_text())["address"]
        for _ in range(workers):
            self.add_worker()
        if workers:
            self.wait_for_workers(workers)

    def _spawn(self, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        proc = subprocess.Popen(argv, cwd=self.worker_cwd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(proc)
        return proc

    def add_worker(self, python_flags: tuple[str, ...] = (), env: dict[str, str] | None = None,
                   args: tuple[str, ...] = ()) -> None:
        self._spawn([sys.executable, *python_flags, "-m", "distributed.cli.dask_worker", self.address,
                     "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1", *args], env or self.env)

    def wait_for_workers(self, n: int) -> None:
        from distributed import Client

        with Client(self.address, set_as_default=False, timeout="30s") as client:
            client.wait_for_workers(n, timeout=90)

    def worker_pids(self) -> list[int]:
        from distributed import Client

        with Client(self.address, set_as_default=False, timeout="30s") as client:
            return list(client.run(os.getpid).values())

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


HANG_S = 20.0  # the hung task's sleep: far past its timeout, short enough to see whether it writes afterwards


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    hang_env = {"PYTHONPATH": os.pathsep.join((str(HANG_FIXTURE), str(REPO))), "QWENMEM_TEST_HANG_S": str(HANG_S)}
    c = Cluster(tmp_path_factory.mktemp("dask"), env=hang_env)
    yield c
    c.close()


def _records(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def _files(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*")) if p.is_file()}


def test_a_hung_task_times_out_and_writes_nothing_afterwards(cluster, tmp_path):
    """The task runs in a child of its worker, killed at the timeout: with a thread, the hung repair woke up after
    the run had reported it `timeout` and repaired the workspace anyway."""
    fleet = tmp_path / "fleet"
    for name in ("ws0", "hang", "ws1"):
        shutil.copytree(SAMPLE, fleet / name)
    before = _files(fleet / "hang")
    start = time.monotonic()
    run = run_cli("fleet", str(fleet), "--engine", "dask", "--scheduler", cluster.address, "--timeout", "8",
                  "--", "sessions", "repair", "--all", timeout=180)
    by_ws = {Path(r["workspace"]).name: r for r in _records(run.stdout)}
    assert set(by_ws) == {"ws0", "hang", "ws1"}, run.stderr
    assert by_ws["hang"]["status"] == "timeout" and by_ws["hang"]["error"]["code"] == "timeout"
    assert by_ws["ws0"]["status"] == by_ws["ws1"]["status"] == "ok"  # nothing else timed out
    assert by_ws["ws0"]["result"]["quarantine"]  # the sample's damaged session was repaired
    time.sleep(max(0.0, start + HANG_S + 5 - time.monotonic()))  # past the moment the hung repair would wake
    assert _files(fleet / "hang") == before
    assert run.code == 1


def test_a_fifo_workspace_reports_on_dask_as_locally_and_relative_paths_name_the_drivers_workspace(cluster,
                                                                                                     tmp_path):
    """The reported case: `fleet DIR --engine dask --timeout 20 -- doctor` over workspaces and one whose agent.json
    is a FIFO. DIR is relative, and the workers' cwd holds a same-named decoy (a healthy workspace): before, a
    worker resolved the path against its own cwd and reported on the decoy."""
    driver_cwd = tmp_path / "driver"
    for name in ("ws0", "fifo"):
        shutil.copytree(SAMPLE, driver_cwd / "fleet" / name)
    os.unlink(driver_cwd / "fleet" / "fifo" / "agent.json")
    os.mkfifo(driver_cwd / "fleet" / "fifo" / "agent.json")
    decoy = cluster.worker_cwd / "fleet" / "fifo"
    shutil.rmtree(decoy, ignore_errors=True)
    shutil.copytree(SAMPLE, decoy)
    local = run_cli("fleet", "fleet", "-j", "2", "--timeout", "20", "--", "doctor", cwd=driver_cwd)
    dask = run_cli("fleet", "fleet", "--engine", "dask", "--scheduler", cluster.address, "--timeout", "20",
                   "--", "doctor", cwd=driver_cwd, timeout=180)

    def comparable(run):
        out = {}
        for r in _records(run.stdout):
            assert r["status"] != "timeout", r
            r["result"].pop("elapsed_ms")
            out[r["workspace"]] = (r["status"], r["exit_code"], r["result"])
        return out

    got_local, got_dask = comparable(local), comparable(dask)
    assert set(got_dask) == {"fleet/ws0", "fleet/fifo"}
    assert got_dask == got_local
    assert got_dask["fleet/fifo"][2]["root"] == str(driver_cwd / "fleet" / "fifo")


def _other_qwenmem(dest: Path) -> Path:
    """A copy of this qwenmem that says it is another version, as a worker upgraded apart from the driver has."""
    shutil.copytree(REPO / "qwenmem", dest / "qwenmem", ignore=shutil.ignore_patterns("__pycache__", "sample"))
    init = dest / "qwenmem" / "__init__.py"
    init.write_text(init.read_text().replace('__version__ = "', '__version__ = "9.9.9-other-'))
    return dest


def test_workers_without_qwenmem_or_with_another_are_named_before_any_task(tmp_path):
    cluster = Cluster(tmp_path / "dask", workers=1)
    try:
        # no site (so no editable install of qwenmem), the venv's packages on the path: dask, but no qwenmem
        cluster.add_worker(("-S",), dict(os.environ, PYTHONPATH=str(SITE_PACKAGES)))
        cluster.add_worker(env=dict(os.environ, PYTHONPATH=str(_other_qwenmem(tmp_path / "other"))))
        cluster.wait_for_workers(3)
        shutil.copytree(SAMPLE, tmp_path / "fleet" / "ws0")
        before = _files(tmp_path / "fleet" / "ws0")
        start = time.monotonic()
        run = run_cli("fleet", str(tmp_path / "fleet"), "--engine", "dask", "--scheduler", cluster.address,
                      "--", "sessions", "repair", "--all", timeout=120)
        assert run.code == 2 and run.stdout == "" and "Traceback" not in run.stderr, run.stderr
        assert time.monotonic() - start < 60
        assert "2 of 3 Dask worker(s) cannot run this fleet" in run.stderr
        assert "qwenmem is not importable by" in run.stderr and "No module named 'qwenmem'" in run.stderr
        assert "qwenmem 9.9.9-other-" in run.stderr and str(tmp_path / "other" / "qwenmem") in run.stderr
        assert run.stderr.count("tcp://127.0.0.1:") >= 2  # each worker named by its address
        assert _files(tmp_path / "fleet" / "ws0") == before  # no task ran
    finally:
        cluster.close()


def test_a_scheduler_without_workers_is_refused(tmp_path):
    cluster = Cluster(tmp_path / "dask", workers=0)
    try:
        shutil.copytree(SAMPLE, tmp_path / "fleet" / "ws0")
        run = run_cli("fleet", str(tmp_path / "fleet"), "--engine", "dask", "--scheduler", cluster.address,
                      "--", "doctor", timeout=120)
        assert run.code == 2 and "has no workers" in run.stderr and "dask worker" in run.stderr, run.stderr
    finally:
        cluster.close()


def test_engine_dask_without_a_scheduler_starts_a_local_cluster(tmp_path):
    for i in range(3):
        shutil.copytree(SAMPLE, tmp_path / "fleet" / f"ws{i}")
    run = run_cli("fleet", str(tmp_path / "fleet"), "--engine", "dask", "-j", "2", "--", "sessions", "repair",
                  "--check", timeout=180)
    assert "started a local Dask cluster of 2 worker process(es)" in run.stderr, run.stderr
    records = _records(run.stdout)
    assert len(records) == 3 and {r["status"] for r in records} == {"problems"}
    assert "fleet (dask)" in run.stderr and run.code == 1
    quiet = run_cli("fleet", str(tmp_path / "fleet"), "--engine", "dask", "-j", "1", "--quiet", "--",
                    "sessions", "repair", "--check", timeout=180)
    assert "local Dask cluster" not in quiet.stderr


def test_jobs_with_an_existing_scheduler_is_a_usage_error(tmp_path):
    run = run_cli("fleet", str(tmp_path), "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9", "-j", "2",
                  "--", "doctor")
    assert run.code == 2 and "--jobs is for the local engine" in run.stderr


def _finish(driver: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """The rest of a driver's stdout and its stderr once it has exited, read through the same file objects that
    readline() used: Popen.communicate reads the pipes' descriptors, and would drop what readline() buffered."""
    import threading

    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda s=s, into=into: into.append(s.read()), daemon=True)
               for s, into in ((driver.stdout, out), (driver.stderr, err))]
    for reader in readers:
        reader.start()
    try:
        driver.wait(timeout)
    except subprocess.TimeoutExpired:
        driver.kill()
        driver.wait()
        for reader in readers:
            reader.join(10)
        pytest.fail(f"the driver did not end within {timeout:g} s; its stderr:\n{''.join(err)}")
    for reader in readers:
        reader.join(30)
    return "".join(out), "".join(err)


def _task_children_of(pid: int) -> list[int]:
    import psutil

    return [p.pid for p in psutil.process_iter(["cmdline"])
            if "qwenmem.core.fleet.task_child" in (p.info["cmdline"] or []) and p.info["cmdline"][-1] == str(pid)]


@pytest.mark.parametrize("timeout", [None, "60"], ids=["in-thread", "in-child"])
def test_killing_a_worker_mid_run_gives_one_record_per_workspace_and_tears_no_file(tmp_path, timeout):
    """SIGKILL one `dask worker` process while tasks run: the scheduler reruns its tasks on the other (or they are
    `crashed`), every workspace has exactly one record, every session file is its bytes before or parses, and a
    killed worker's task child does not outlive it."""
    count = 60
    fleet = tmp_path / "fleet"
    for i in range(count):
        shutil.copytree(SAMPLE, fleet / f"ws{i:02d}")
    originals = {p: p.read_bytes() for p in fleet.rglob("sessions/**/*.json")}
    cluster = Cluster(tmp_path / "dask", workers=2)
    try:
        victim = cluster.worker_pids()[0]
        argv = [sys.executable, "-m", "qwenmem", "fleet", str(fleet), "--engine", "dask", "--scheduler",
                cluster.address, *(("--timeout", timeout) if timeout else ()), "--", "sessions", "repair", "--all"]
        driver = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=dict(os.environ, PYTHONPATH=str(REPO)))
        assert driver.stdout is not None
        lines = [driver.stdout.readline() for _ in range(3)]  # three workspaces done: the run is under way
        children = _task_children_of(victim)
        os.kill(victim, signal.SIGKILL)
        rest, err = _finish(driver, 600)
        records = _records("".join(lines) + rest)
    finally:
        cluster.close()
    assert sorted(Path(r["workspace"]).name for r in records) == [f"ws{i:02d}" for i in range(count)], err
    assert {r["status"] for r in records} <= {"ok", "crashed"}, err
    for path, before in originals.items():
        now = path.read_bytes()
        if now != before:
            json.loads(now)  # replaced whole: the new version parses, never a torn one
    for r in records:
        if r["status"] == "ok":
            # Repaired by this record's run, or by a killed worker's run whose record was lost (the rerun then found
            # nothing left to repair). A run killed between copying an original aside and recording it leaves a
            # quarantine without a manifest (entry), and a rerun may make a second: what must hold is that every
            # changed file's original bytes are kept in a quarantine that `sessions restore` lists.
            ws = discover_workspace(Path(r["workspace"]), env={})
            kept = [f.read_bytes() for run in list_runs(ws)
                    for f in originals_in_run(ws.data_dir / "quarantine" / run.run_id).values()]
            for path, before in originals.items():
                if path.is_relative_to(ws.path) and path.read_bytes() != before:
                    assert before in kept, path
            assert r["result"]["quarantine"] in (None, *(run.path for run in list_runs(ws)))
    if timeout:
        assert children, "the worker ran its tasks in a child"
        time.sleep(2)
        import psutil

        assert not [pid for pid in children if psutil.pid_exists(pid)
                    and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]


def _gate_holders(address: str) -> dict[str, float]:
    """The workers holding a fleet run's resource (they passed its gate), from the scheduler."""
    from distributed import Client

    def holders(dask_scheduler):
        return {w: q for name, by_worker in dask_scheduler.resources.items() if name.startswith("qwenmem-fleet-")
                for w, q in by_worker.items() if q > 0}

    with Client(address, set_as_default=False, timeout="30s") as client:
        return client.run_on_scheduler(holders)


def _pid_of_new_worker(cluster: Cluster, known: set[int], n: int) -> int:
    cluster.wait_for_workers(n)
    (pid,) = set(cluster.worker_pids()) - known
    return pid


@pytest.mark.parametrize("timeout", [None, "60"], ids=["in-thread", "in-child"])
def test_late_workers_pass_the_gate_or_get_no_task_and_are_named(tmp_path, timeout):
    """Workers that join a running fleet: one without qwenmem and one with another are refused (no task, one
    notice each on stderr naming it); a good one is checked, warmed and then gets tasks."""
    count = 40
    fleet = tmp_path / "fleet"
    for i in range(count):
        shutil.copytree(SAMPLE, fleet / f"ws{i:02d}")
    hold = tmp_path / "hold"
    hold.touch()  # every repair waits while it exists: the run stays under way while the workers join
    marked = {"PYTHONPATH": os.pathsep.join((str(HANG_FIXTURE), str(REPO))), "QWENMEM_TEST_HOLD": str(hold),
              "QWENMEM_TEST_MARK": "1"}
    cluster = Cluster(tmp_path / "dask", workers=1, env=marked)
    try:
        known = set(cluster.worker_pids())
        argv = [sys.executable, "-m", "qwenmem", "fleet", str(fleet), "--engine", "dask", "--scheduler",
                cluster.address, *(("--timeout", timeout) if timeout else ()), "--", "sessions", "repair", "--all"]
        driver = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=dict(os.environ, PYTHONPATH=str(REPO)))
        deadline = time.monotonic() + 120
        while not _gate_holders(cluster.address):  # the driver's gate is on the first worker: the run has begun
            assert time.monotonic() < deadline and driver.poll() is None, "the run did not start"
            time.sleep(0.5)
        cluster.add_worker(("-S",), dict(os.environ, PYTHONPATH=str(SITE_PACKAGES)))  # dask, no qwenmem
        known.add(_pid_of_new_worker(cluster, known, 2))
        other = _other_qwenmem(tmp_path / "other")
        cluster.add_worker(env={**os.environ, **marked,
                                "PYTHONPATH": os.pathsep.join((str(HANG_FIXTURE), str(other)))})
        known.add(_pid_of_new_worker(cluster, known, 3))
        cluster.add_worker(env=dict(os.environ, **marked))
        late = _pid_of_new_worker(cluster, known, 4)
        while len(_gate_holders(cluster.address)) < 2:  # the late good worker passed the gate, warm
            assert time.monotonic() < deadline + 180, "the late good worker did not pass the gate"
            time.sleep(0.5)
        hold.unlink()
        out, err = _finish(driver, 300)
    finally:
        cluster.close()
    records = _records(out)
    assert sorted(Path(r["workspace"]).name for r in records) == [f"ws{i:02d}" for i in range(count)], err
    assert {r["status"] for r in records} == {"ok"}, err
    ran_by = [line.split() for i in range(count) for line in (fleet / f"ws{i:02d}" / ".ran-by").read_text().splitlines()]
    assert {version for _, _, version in ran_by} == {_version()}, "only this qwenmem ran tasks"
    assert any(late in (int(pid), int(ppid)) for pid, ppid, _ in ran_by), "the late good worker got tasks"
    refused = [line for line in err.splitlines() if "cannot run this fleet joined; it gets no task" in line]
    assert len(refused) == 2, err
    assert any("qwenmem is not importable by" in line for line in refused), err
    assert any("qwenmem 9.9.9-other-" in line for line in refused), err
    assert all("tcp://127.0.0.1:" in line for line in refused), err
    assert driver.returncode == 0, err


def _version() -> str:
    import qwenmem

    return qwenmem.__version__


def _quick_patience():
    from qwenmem.core.fleet.dask_engine import Patience

    return Patience(start_s=5, grace_s=5, probe_every_s=2, no_worker_s=60, gather_s=5)


def test_a_worker_that_stops_answering_costs_its_tasks_not_the_run(tmp_path):
    """SIGSTOP one worker mid-run (alive to the kernel, so its connections stay open, and the scheduler waits its
    worker-ttl, 5 minutes, before it gives up on it): with --timeout, the driver asks the scheduler about the tasks
    that do not answer and gives up on the ones on the silent worker (`crashed`, no_answer) once they are past
    --timeout and the start's patience; the run ends with one record per workspace instead of waiting on it."""
    from qwenmem.cli.app import fleet_command
    from qwenmem.core.fleet import run_fleet
    from qwenmem.core.fleet.dask_engine import DaskEngine
    from qwenmem.core.fleet.targets import discover

    count = 30
    fleet = tmp_path / "fleet"
    for i in range(count):
        shutil.copytree(SAMPLE, fleet / f"ws{i:02d}")
    cluster = Cluster(tmp_path / "dask", workers=2)
    stopped: list[int] = []
    records: dict[str, dict] = {}
    try:
        victim = cluster.worker_pids()[0]

        def on_record(target, record, attempts):
            records[Path(target.path).name] = record
            if len(records) == 3 and not stopped:
                os.kill(victim, signal.SIGSTOP)
                stopped.append(victim)

        engine = DaskEngine(cluster.address, 5.0, warm_for="sessions repair", patience=_quick_patience())
        start = time.monotonic()
        run_fleet(discover([fleet]), fleet_command(["sessions", "repair", "--all"]), engine, on_record)
        took = time.monotonic() - start
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        cluster.close()
    assert stopped and sorted(records) == [f"ws{i:02d}" for i in range(count)]
    given_up = {name for name, r in records.items() if r["status"] == "crashed"}
    assert given_up, "the stopped worker held tasks"
    assert all(records[name]["error"]["type"] == "no_answer" for name in given_up), records
    assert {r["status"] for name, r in records.items() if name not in given_up} == {"ok"}
    assert took < 150  # the scheduler alone would wait its worker-ttl (300 s) for the stopped worker


def test_a_result_lost_with_its_worker_does_not_hold_the_driver(tmp_path):
    """A worker dies holding finished results that the driver has not fetched yet. distributed.wait counts such
    a "lost" future as done, and its result() waits until Dask has computed it again, here behind a 20 s task on
    the only worker left: before, the driver blocked in result() that long (with no worker at all, for ever). Now
    wait() hands over what has come, the lost ones come back when computed again, and all get their record."""
    from distributed import wait

    from qwenmem.cli.app import fleet_command
    from qwenmem.core.fleet.dask_engine import DaskEngine
    from qwenmem.core.fleet.targets import Target

    for name in ("hang", *(f"ws{i}" for i in range(8))):
        shutil.copytree(SAMPLE, tmp_path / "fleet" / name)
    hang_env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(HANG_FIXTURE), str(REPO))),
                "QWENMEM_TEST_HANG_S": "20"}
    cluster = Cluster(tmp_path / "dask", workers=0)
    try:
        cluster.add_worker(env=hang_env, args=("--no-nanny",))  # no nanny: once killed, it stays dead
        cluster.add_worker(env=hang_env)
        cluster.wait_for_workers(2)
        engine = DaskEngine(cluster.address, None, warm_for="sessions repair")
        command = fleet_command(["sessions", "repair", "--check"])
        futures = [engine.submit(Target(str(tmp_path / "fleet" / f"ws{i}")), command) for i in range(8)]
        with engine._client.as_current():
            wait(futures, timeout=120)  # every result is on a worker, none fetched
        hang = engine.submit(Target(str(tmp_path / "fleet" / "hang")), command)  # 20 s on one worker
        deadline = time.monotonic() + 60
        while not (busy := [w for w, keys in engine._client.processing().items() if hang.key in keys]):
            assert time.monotonic() < deadline, "the hung task did not start"
            time.sleep(0.2)
        time.sleep(2)  # it runs there now: a task computed again waits behind it on that worker's one thread
        who_has = engine._client.who_has(futures)
        holder = next(w for w in engine._client.nthreads() if w not in busy)
        lost = [f for f in futures if list(who_has[f.key]) == [holder]]
        assert lost, who_has
        os.kill(engine._client.run(os.getpid)[holder], signal.SIGKILL)
        futures.append(hang)
        deadline = time.monotonic() + 10
        while not all(f.status in ("lost", "pending") for f in lost):
            assert time.monotonic() < deadline, "the scheduler did not say the results were lost"
            time.sleep(0.1)
        start = time.monotonic()
        answered = engine.wait(futures, 1.0)
        records = {f: engine.outcome(f) for f in answered}
        assert time.monotonic() - start < 8  # not the 20 s behind which the lost ones are computed again
        assert not set(answered) & set(lost)
        deadline = time.monotonic() + 120
        while len(records) < len(futures):
            assert time.monotonic() < deadline
            for f in engine.wait([f for f in futures if f not in records], 1.0):
                records[f] = engine.outcome(f)
        engine.close()
    finally:
        cluster.close()
    assert {r["status"] for r in records.values()} == {"problems"}  # each one's own answer, the lost ones too
