"""`qwenmem fleet`: real process pools (pebble) and a real Dask LocalCluster over generated workspaces."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
from helpers import SAMPLE, run_cli

RECORD_KEYS = {"qwenmem_fleet", "workspace", "agent", "command", "status", "exit_code", "attempts", "seconds",
               "result", "warnings", "error"}


def _copy_sample(dest: Path) -> Path:
    shutil.copytree(SAMPLE, dest)
    return dest


def _healthy(dest: Path) -> Path:
    """The sample workspace with its damaged session repaired, so a check finds nothing."""
    from qwenmem.core.repair import REPAIR, run_repair
    from qwenmem.core.sessions import iter_session_refs
    from qwenmem.core.workspace import discover_workspace

    ws = discover_workspace(_copy_sample(dest))
    run = run_repair(ws, list(iter_session_refs(ws)), REPAIR)
    assert not run.needs_attention
    return dest


def _records(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


@pytest.fixture
def fleet_dir(tmp_path) -> Path:
    """A QwenPaw root with two agents, plus a directory holding three more workspaces."""
    root = tmp_path / "root"
    (root / "workspaces").mkdir(parents=True)
    for agent in ("alpha", "beta"):
        _copy_sample(root / "workspaces" / agent)
    (root / "config.json").write_text(json.dumps({"agents": {"active_agent": "alpha", "profiles": {"alpha": {}}}}))
    many = tmp_path / "many"
    many.mkdir()
    for i in range(3):
        _copy_sample(many / f"ws{i}")
    return tmp_path


def test_one_record_per_workspace_with_the_pinned_format(fleet_dir):
    run = run_cli("fleet", str(fleet_dir / "root"), str(fleet_dir / "many"), "-j", "2", "--",
                  "sessions", "repair", "--check")
    records = _records(run.stdout)
    assert {(r["workspace"], r["agent"]) for r in records} == {
        (str(fleet_dir / "root"), "alpha"), (str(fleet_dir / "root"), "beta"),
        *((str(fleet_dir / "many" / f"ws{i}"), None) for i in range(3))}
    for r in records:
        assert set(r) == RECORD_KEYS
        assert r["qwenmem_fleet"] == 1 and r["command"] == "sessions repair --check"
        # the sample holds one damaged session: each workspace needs attention, as `sessions repair --check` says
        assert (r["status"], r["exit_code"], r["attempts"]) == ("problems", 1, 1)
        assert r["result"]["mode"] == "check" and r["result"]["statuses"].get("needs_repair") == 1
    assert run.code == 1
    assert "5 workspace(s)" in run.stderr and "5 problems" in run.stderr


def test_healthy_fleet_exits_0_and_matches_the_single_command(tmp_path):
    for i in range(3):
        _healthy(tmp_path / f"ws{i}")
    run = run_cli("fleet", str(tmp_path), "--", "compact", "--check")
    assert run.code == 0, run.stderr
    records = _records(run.stdout)
    assert len(records) == 3 and {r["status"] for r in records} == {"ok"}
    single = run_cli("-w", str(tmp_path / "ws0"), "compact", "--check", "--json").json()["result"]
    fleet_ws0 = next(r for r in records if r["workspace"].endswith("ws0"))["result"]
    assert fleet_ws0 == json.loads(json.dumps(single))


def test_a_failing_workspace_never_stops_the_rest(fleet_dir):
    bad = fleet_dir / "many" / "ws1" / "agent.json"
    bad.write_text("{not json")
    missing = fleet_dir / "nowhere"
    run = run_cli("fleet", str(fleet_dir / "many"), str(missing), "--", "compact", "--check")
    by_ws = {Path(r["workspace"]).name: r for r in _records(run.stdout)}
    assert set(by_ws) == {"ws0", "ws1", "ws2", "nowhere"}
    assert by_ws["ws1"]["status"] == "error" and by_ws["ws1"]["exit_code"] == 3
    assert by_ws["ws1"]["error"]["code"] == "config_invalid" and "agent.json" in by_ws["ws1"]["error"]["message"]
    assert by_ws["nowhere"]["status"] == "error" and by_ws["nowhere"]["error"]["code"] == "workspace_unavailable"
    assert by_ws["ws0"]["result"] is not None and by_ws["ws2"]["result"] is not None
    assert run.code == 1


def test_a_locked_workspace_is_retried_then_reported(tmp_path):
    from qwenmem.core.fsio import exclusive_lock

    for i in range(2):
        _copy_sample(tmp_path / f"ws{i}")
    locked = tmp_path / "ws1"
    with exclusive_lock(locked / ".qwenmem" / "lock"):
        run = run_cli("fleet", str(tmp_path), "--retries", "2", "--backoff", "0.05", "--",
                      "sessions", "repair", "--all")
    by_ws = {Path(r["workspace"]).name: r for r in _records(run.stdout)}
    assert by_ws["ws1"]["status"] == "busy" and by_ws["ws1"]["exit_code"] == 4
    assert by_ws["ws1"]["attempts"] == 3  # the first try and two retries
    assert by_ws["ws1"]["error"]["code"] == "busy"
    assert by_ws["ws0"]["status"] == "ok" and by_ws["ws0"]["result"]["mode"] == "repair"
    assert "1 workspace(s) were busy and retried (2 retries)" in run.stderr
    assert run.code == 1


def test_a_lock_released_during_backoff_succeeds_on_retry(tmp_path):
    from qwenmem.cli.app import fleet_command as parse_command
    from qwenmem.core.fleet import RetryPolicy, run_fleet
    from qwenmem.core.fleet.engines import LocalEngine
    from qwenmem.core.fleet.targets import discover
    from qwenmem.core.fsio import exclusive_lock

    ws = _copy_sample(tmp_path / "ws0")
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with exclusive_lock(ws / ".qwenmem" / "lock"):
            holding.set()
            release.wait(30)

    class ReleasingAfterFirstBusy(LocalEngine):
        def outcome(self, future):
            record = super().outcome(future)
            if record["status"] == "busy":
                release.set()  # the other process lets go during the backoff
                holder.join()
            return record

    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait(10)
    command = parse_command(["sessions", "repair", "--all"])
    got = []
    run_fleet(discover([ws]), command, ReleasingAfterFirstBusy(1, None),
              lambda t, rec, attempts: got.append((rec, attempts)), policy=RetryPolicy(retries=3, backoff=0.1))
    release.set()
    [(record, attempts)] = got
    assert (record["status"], attempts) == ("ok", 2)
    assert record["result"]["quarantine"]  # the retry did the repair


def test_resume_skips_what_a_previous_run_recorded(fleet_dir):
    first = run_cli("fleet", str(fleet_dir / "many"), "--", "sessions", "repair", "--check")
    previous = fleet_dir / "first.jsonl"
    # a run killed mid-write leaves a partial last line: that workspace is run again
    lines = first.stdout.splitlines()
    previous.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])
    run = run_cli("fleet", str(fleet_dir / "many"), "--resume", str(previous), "--", "sessions", "repair", "--check")
    done_before = {json.loads(line)["workspace"] for line in lines[:2]}
    records = _records(run.stdout)
    assert len(records) == 1 and records[0]["workspace"] not in done_before
    assert "2 skipped" in run.stderr
    other_command = run_cli("fleet", str(fleet_dir / "many"), "--resume", str(previous), "--", "compact", "--check")
    assert len(_records(other_command.stdout)) == 3  # the resume file recorded another command


def test_dry_run_lists_and_runs_nothing(fleet_dir):
    before = {p: p.read_bytes() for p in fleet_dir.rglob("*") if p.is_file()}
    run = run_cli("fleet", str(fleet_dir / "root"), str(fleet_dir / "many"), "--dry-run", "--",
                  "sessions", "repair", "--all")
    assert run.code == 0
    records = _records(run.stdout)
    assert len(records) == 5 and {r["status"] for r in records} == {"dry-run"}
    assert "would run `sessions repair --all` on 5 workspace(s)" in run.stderr
    after = {p: p.read_bytes() for p in fleet_dir.rglob("*") if p.is_file()}
    assert after == before


def test_from_stdin_and_usage_errors(fleet_dir):
    import subprocess
    import sys

    from helpers import REPO

    listing = "# workspaces\n" + "\n".join(str(fleet_dir / "many" / f"ws{i}") for i in range(3)) + "\n\n"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "qwenmem", "fleet", "--from", "-", "--", "compact", "--check"],
                          input=listing, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert len(_records(proc.stdout)) == 3
    for args, needle in ((["fleet", str(fleet_dir)], "no command given"),
                         (["fleet", str(fleet_dir), "--", "sessions", "show", "x"], "fleet cannot run"),
                         (["fleet", str(fleet_dir), "--", "sessions", "repair"], "or use --all"),
                         (["fleet", str(fleet_dir), "--", "compact", "--bogus"], "No such option: --bogus"),
                         (["fleet", str(fleet_dir), "--", "compact", "--check", "-w", "x"], "named before `--`"),
                         (["fleet", str(fleet_dir), "--", "compact"], "or pass --all"),
                         (["fleet", str(fleet_dir), "--", "dream", "--restore"], "--restore: not run by"),
                         (["fleet", str(fleet_dir), "--scheduler", "tcp://127.0.0.1:9", "--", "reindex"],
                          "--scheduler is for --engine dask")):
        run = run_cli(*args)
        assert run.code == 2 and needle in run.stderr and "Traceback" not in run.stderr, (args, run.stderr)
        assert run.stdout == ""


def test_local_timeout_stops_a_hung_workspace(fleet_dir, monkeypatch):
    """A workspace whose operation hangs is stopped at --timeout (pebble kills that worker); the rest go on."""
    from qwenmem.cli.app import fleet_command as parse_command
    from qwenmem.core.fleet import operations, run_fleet
    from qwenmem.core.fleet.engines import LocalEngine
    from qwenmem.core.fleet.targets import discover

    real = operations.OPERATIONS["compact"]

    def maybe_hang(ws, ns):
        if ws.path.name == "ws1":
            time.sleep(60)
        return real.run(ws, ns)

    # the pool forks after this, so its workers see the patched operation
    monkeypatch.setitem(operations.OPERATIONS, "compact", operations.Operation(
        real.name, real.usage, maybe_hang))
    command = parse_command(["compact", "--check"])
    got: dict[str, dict] = {}
    start = time.monotonic()
    summary = run_fleet(discover([fleet_dir / "many"]), command, LocalEngine(2, timeout=2.0),
                        lambda t, rec, attempts: got.__setitem__(Path(t.path).name, rec))
    assert time.monotonic() - start < 30
    assert got["ws1"]["status"] == "timeout"
    # the sample's damaged session makes compact --check warn, and exit 0, as `qwenmem compact --check` does
    assert got["ws0"]["status"] == got["ws2"]["status"] == "ok" and got["ws0"]["warnings"]
    assert got["ws0"]["result"]["sessions"] and got["ws2"]["result"]["sessions"]
    assert summary.statuses == {"ok": 2, "timeout": 1}


def test_a_crashing_worker_costs_only_its_workspace(fleet_dir, monkeypatch):
    from qwenmem.cli.app import fleet_command as parse_command
    from qwenmem.core.fleet import operations, run_fleet
    from qwenmem.core.fleet.engines import LocalEngine
    from qwenmem.core.fleet.targets import discover

    real = operations.OPERATIONS["compact"]

    def maybe_die(ws, ns):
        if ws.path.name == "ws1":
            os.kill(os.getpid(), signal.SIGKILL)
        return real.run(ws, ns)

    monkeypatch.setitem(operations.OPERATIONS, "compact", operations.Operation(
        real.name, real.usage, maybe_die))
    command = parse_command(["compact", "--check"])
    got: dict[str, dict] = {}
    run_fleet(discover([fleet_dir / "many"]), command, LocalEngine(2, timeout=None),
              lambda t, rec, attempts: got.__setitem__(Path(t.path).name, rec))
    assert got["ws1"]["status"] == "crashed" and got["ws1"]["error"]["type"] == "worker_died"
    assert got["ws0"]["status"] == got["ws2"]["status"] == "ok"
    assert got["ws0"]["result"]["sessions"] and got["ws2"]["result"]["sessions"]


# --- Dask: a real LocalCluster with two worker processes -------------------------------------------------------

@pytest.fixture(scope="module")
def cluster():
    try:
        from distributed import LocalCluster
    except ImportError:  # the fleet extra: scripts/_setup.sh installs it, so CI (which requires everything) fails
        if os.environ.get("QWENMEM_REQUIRE_SHARED"):
            raise
        pytest.skip("the fleet extra (dask distributed) is not installed")

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=40) as c:
        yield c


def _session_bytes(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("sessions/**/*.json")}


@pytest.mark.slow
def test_dask_run_gives_one_record_per_workspace(cluster, fleet_dir):
    run = run_cli("fleet", str(fleet_dir / "root"), str(fleet_dir / "many"), "--engine", "dask",
                  "--scheduler", cluster.scheduler_address, "--", "sessions", "repair", "--check")
    records = _records(run.stdout)
    assert len(records) == 5 and {r["status"] for r in records} == {"problems"}
    assert "fleet (dask)" in run.stderr
    assert run.code == 1


@pytest.mark.slow
def test_dask_locked_workspace_is_retried_then_reported(cluster, tmp_path):
    from qwenmem.core.fsio import exclusive_lock

    for i in range(2):
        _copy_sample(tmp_path / f"ws{i}")
    with exclusive_lock(tmp_path / "ws0" / ".qwenmem" / "lock"):
        run = run_cli("fleet", str(tmp_path), "--engine", "dask", "--scheduler", cluster.scheduler_address,
                      "--retries", "1", "--backoff", "0.05", "--", "sessions", "repair", "--all")
    by_ws = {Path(r["workspace"]).name: r for r in _records(run.stdout)}
    assert (by_ws["ws0"]["status"], by_ws["ws0"]["attempts"], by_ws["ws0"]["exit_code"]) == ("busy", 2, 4)
    assert by_ws["ws1"]["status"] == "ok"


@pytest.mark.slow
def test_dask_killing_a_worker_mid_run_loses_no_workspace_and_tears_no_file(cluster, tmp_path):
    from distributed import Client

    from qwenmem.cli.app import fleet_command as parse_command
    from qwenmem.core.fleet import run_fleet
    from qwenmem.core.fleet.dask_engine import DaskEngine
    from qwenmem.core.fleet.targets import discover

    count = 40
    for i in range(count):
        _copy_sample(tmp_path / f"ws{i:02d}")
    originals = _session_bytes(tmp_path)
    with Client(cluster.scheduler_address, set_as_default=False) as client:
        pids = list(client.run(os.getpid).values())
    command = parse_command(["sessions", "repair", "--all"])
    records: dict[str, dict] = {}
    killed = threading.Event()

    def on_record(target, record, attempts):
        records[target.path] = record
        if len(records) == 3 and not killed.is_set():
            os.kill(pids[0], signal.SIGKILL)  # a worker dies while others of its tasks are queued or running
            killed.set()

    run_fleet(discover([tmp_path]), command, DaskEngine(cluster.scheduler_address, None), on_record)
    assert killed.is_set()
    assert len(records) == count  # no workspace lost: the scheduler reran the dead worker's tasks
    assert {r["status"] for r in records.values()} <= {"ok", "crashed"}
    for path, before in originals.items():
        now = path.read_bytes()
        if now != before:
            json.loads(now)  # replaced atomically: the new version parses, never a torn one
    # every workspace the fleet says it repaired has its original in the quarantine
    for ws, record in records.items():
        if record["status"] == "ok" and record["result"]["quarantine"]:
            assert any((Path(ws) / record["result"]["quarantine"]).iterdir())


def test_readme_documents_the_record_format():
    import re

    from helpers import REPO

    from qwenmem.cli.commands.fleet import RECORD_KEYS as CLI_KEYS

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- fleet-record[^>]*-->\s*```json\n(.*?)\n```", readme, re.DOTALL)
    assert block, "README: the fleet record example is missing"
    example = json.loads(block.group(1))
    assert list(example) == list(CLI_KEYS) and set(CLI_KEYS) == RECORD_KEYS


def test_doctor_over_a_fleet_matches_the_single_command(tmp_path):
    for i in range(2):
        _healthy(tmp_path / f"ws{i}")
    run = run_cli("fleet", str(tmp_path), "--", "doctor")
    records = _records(run.stdout)
    assert len(records) == 2
    single = run_cli("-w", str(tmp_path / "ws0"), "doctor", "--json").json()
    fleet_ws0 = next(r for r in records if r["workspace"].endswith("ws0"))
    assert fleet_ws0["exit_code"] == (0 if single["status"] == "ok" else 1)
    assert set(fleet_ws0["result"]) == set(single["result"])
    assert [a["workspace"] for a in fleet_ws0["result"]["agents"]] == [a["workspace"] for a in single["result"]["agents"]]
    assert [a["findings"] for a in fleet_ws0["result"]["agents"]] == [a["findings"] for a in single["result"]["agents"]]
