"""Issue 10 item 10: a repair must not destroy the save of an assistant writing the file at that moment.

A real second process (tests/stalled_writer.py) saves like QwenPaw 1.x, open("w") then write in two halves 300 ms
apart, reloading the file at each turn; repairs (and compactions) run against it meanwhile. Every turn's message must
survive: in the final file, or (compaction) in the dialog offload."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from qwenmem.core import busy
from qwenmem.core.repair.run import REPAIR, run_repair
from qwenmem.core.sessions import iter_session_refs
from qwenmem.core.workspace import discover_workspace

WRITER = Path(__file__).resolve().parents[2] / "stalled_writer.py"
TURNS = 12


def _start_writer(path: Path, turns: int = TURNS, stall: float = 0.3) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(WRITER), str(path), str(turns), str(stall)])


def _turns_kept(root: Path) -> set[str]:
    content = json.loads((root / "sessions/console/u_s.json").read_bytes())["agent"]["memory"]["content"]
    kept = {item[0]["id"] for item in content}
    for log in (root / "dialog").glob("*.jsonl") if (root / "dialog").is_dir() else []:
        kept |= {json.loads(line)["id"] for line in log.read_text().splitlines() if line.strip()}
    return kept


def _repair_while_writing(root: Path) -> list[str]:
    session = root / "sessions/console/u_s.json"
    session.parent.mkdir(parents=True)
    writer = _start_writer(session)
    statuses = []
    try:
        while writer.poll() is None:
            if session.exists():
                ws = discover_workspace(root)
                statuses += [f.status for f in run_repair(ws, list(iter_session_refs(ws)), REPAIR).files]
    finally:
        writer.wait(30)
    assert writer.returncode == 0
    return statuses


# each guard alone in the full run (4 s each); both together in the default run
@pytest.mark.parametrize("guard", ["both"] + [pytest.param(g, marks=pytest.mark.slow)
                                             for g in ("open_handle_only", "quiet_time_only")])
def test_repair_during_stalled_saves_loses_no_update(tmp_path, monkeypatch, guard):
    monkeypatch.setattr(busy, "MAX_WAIT_SECONDS", 0.5)  # give up quickly, so many repairs hit the writer
    if guard == "open_handle_only":
        monkeypatch.setattr(busy, "QUIET_SECONDS", 0.0)
    if guard == "quiet_time_only":
        monkeypatch.setattr(busy, "PROC", tmp_path / "no-proc")
    statuses = _repair_while_writing(tmp_path / "ws")
    assert _turns_kept(tmp_path / "ws") == {f"turn-{i}" for i in range(TURNS)}
    assert "busy" in statuses, statuses  # the race was hit, and refused
    assert "repaired" not in statuses, statuses


def test_a_writer_holding_the_file_open_is_named_and_the_cli_exits_4(tmp_path):
    from helpers import run_cli

    session = tmp_path / "ws/sessions/console/u_s.json"
    session.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                               "f = open(sys.argv[1], 'w'); f.write('{\"agent\": {\"memory\": {\"content\": ['); "
                               "f.flush(); print('ready', flush=True); time.sleep(60)", str(session)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        assert [w.pid for w in busy.writers_of(session)] == [holder.pid]
        run = run_cli("-w", str(tmp_path / "ws"), "sessions", "repair", "--all", "--json")  # waits MAX_WAIT_SECONDS
        assert run.code == 4, run.stderr
        [report] = run.json()["result"]["files"]
        assert report["status"] == "busy" and f"pid {holder.pid}" in " ".join(report["notes"])
        assert session.read_bytes() == b'{"agent": {"memory": {"content": ['
    finally:
        holder.kill()
        holder.wait()


def test_a_read_only_handle_is_not_a_writer(tmp_path):
    path = tmp_path / "s.json"
    path.write_text("{}")
    with open(path, "rb"):
        assert busy.writers_of(path) == []
    with open(path, "ab"):
        assert [w.pid for w in busy.writers_of(path)] == [__import__("os").getpid()]


def test_compact_during_stalled_saves_loses_no_update(tmp_path):
    from helpers import run_cli

    root = tmp_path / "ws"
    session = root / "sessions/console/u_s.json"
    session.parent.mkdir(parents=True)
    (root / "agent.json").write_text(json.dumps({"language": "en"}))
    writer = _start_writer(session)
    codes = []
    try:
        while writer.poll() is None:
            if session.exists():
                codes.append(run_cli("-w", str(root), "compact", "console/u_s", "--force", "--summarizer",
                                     "extractive", "--no-longterm", "--max-input-length", "2000").code)
    finally:
        writer.wait(60)
    assert writer.returncode == 0 and codes
    assert _turns_kept(root) == {f"turn-{i}" for i in range(TURNS)}


def test_a_save_into_the_replaced_file_is_put_back(tmp_path, monkeypatch):
    """A writer that opened the file just before the rename writes into the old inode: that save must win."""
    from qwenmem.core.repair import run as run_mod
    from repair_fixtures import make_workspace, qwenpaw_strict_load

    session = {"agent": {"memory": {"content": [[{"id": "a", "name": "user", "role": "user", "content": "hi",
                                                  "metadata": {}, "timestamp": "2026-03-02 10:00:00.000"}, []]],
                                    "_compressed_summary": ""}, "toolkit": {"active_groups": []}, "name": "Friday",
                         "_sys_prompt": ""}}
    root = make_workspace(tmp_path / "ws", {"console/u_s.json": json.dumps(session).encode() + b"garbage"})
    path = root / "sessions/console/u_s.json"
    session["agent"]["memory"]["content"].append([dict(session["agent"]["memory"]["content"][0][0], id="b"), []])
    late_save = json.dumps(session).encode()
    real_replace = run_mod.replace_preserving

    def replace_while_a_writer_has_it_open(ws, target, data, snap, **kw):
        with open(target, "r+b") as writer:  # opened before the rename, written after it
            kept = real_replace(ws, target, data, snap, **kw)
            writer.truncate(0)
            writer.write(late_save)
        return kept

    monkeypatch.setattr(run_mod, "replace_preserving", replace_while_a_writer_has_it_open)
    ws = discover_workspace(root)
    [report] = run_repair(ws, list(iter_session_refs(ws)), REPAIR).files
    assert report.status == "busy" and "put back" in report.notes[-1]
    assert path.read_bytes() == late_save
    assert [i[0]["id"] for i in qwenpaw_strict_load(path.read_bytes())] == ["a", "b"]
