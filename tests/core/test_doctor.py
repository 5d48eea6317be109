"""`qwenmem doctor` on real workspaces: the fixture QwenPaw root (three agents), and workspaces changed by real
qwenmem commands (reindex, repair, dream). It must name what needs attention, exit 1 only then, and write nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from compact_fixtures import say, session_doc, user
from helpers import FIXTURE_ROOT, invoke


@pytest.fixture
def root(tmp_path) -> Path:
    dest = tmp_path / "qwenpaw"
    shutil.copytree(FIXTURE_ROOT, dest)
    return dest


def _doctor(*args: str):
    run = invoke(*args, "doctor", "--json")
    return run, run.json()


def _agent(doc: dict, agent: str) -> dict:
    return next(a for a in doc["result"]["agents"] if a["agent"] == agent)


def _everything(path: Path) -> dict:
    """Every file and directory under path (tree() covers files only and skips the lock)."""
    return {p.relative_to(path).as_posix(): (p.read_bytes() if p.is_file() else None) for p in sorted(path.rglob("*"))}


def test_the_fixture_root_names_each_problem_of_each_agent_and_writes_nothing(root):
    before = _everything(root)
    run, doc = _doctor("-w", str(root))
    assert run.code == 1 and doc["status"] == "problems" and doc["result"]["needs_attention"] is True
    assert [a["agent"] for a in doc["result"]["agents"]] == ["default", "coder", "writer"]
    default, coder, writer = (_agent(doc, a) for a in ("default", "coder", "writer"))
    assert default["sessions"]["needs_flag"] == ["telegram/7700112233_telegram--7700112233"]
    assert coder["sessions"]["corrupt"] == ["console/default_1772000000003"] and coder["sessions"]["total"] == 2
    assert writer["needs_attention"] is False and writer["sessions"]["ok"] == 1
    assert coder["schedule"]["qwenpaw_dreams"] is False and writer["schedule"]["dream_cron"] == "0 23 * * *"
    assert default["schedule"]["qwenpaw_dreams"] is True  # QwenPaw's default dream_cron when agent.json says nothing
    assert all(a["index"]["state"] == "missing" for a in doc["result"]["agents"])
    assert _everything(root) == before  # not even .qwenmem/ or a lock file


def test_people_get_one_screen_and_the_same_exit_code(root):
    run = invoke("-w", str(root), "doctor")
    assert run.code == 1
    assert "agent coder" in run.stdout and "needs attention" in run.stdout
    assert "console/default_1772000000003" in run.stdout
    assert len(run.stdout.splitlines()) <= 40


def test_a_healthy_agent_exits_0_after_repair_and_says_so(root):
    assert invoke("-w", str(root), "--agent", "coder", "sessions", "repair", "--all").code == 0
    # the cut left a tool call without its result: still a finding until the flag closes it
    assert _agent(_doctor("-w", str(root), "--agent", "coder")[1], "coder")["sessions"]["needs_flag"]
    assert invoke("-w", str(root), "--agent", "coder", "sessions", "repair", "--all", "--fix-tool-pairs").code == 0
    run, doc = _doctor("-w", str(root), "--agent", "coder")
    assert run.code == 0 and doc["status"] == "ok", doc
    coder = _agent(doc, "coder")
    assert coder["sessions"]["corrupt"] == [] and coder["sessions"]["ok"] == 2
    quarantine = next(a for a in coder["storage"] if a["name"] == ".qwenmem/quarantine")
    assert quarantine["files"] >= 1 and quarantine["bytes"] >= 20000 and quarantine["oldest"]


def test_index_missing_then_ok_then_stale_then_damaged(root):
    ws = root / "workspaces" / "coder"
    assert invoke("-w", str(ws), "reindex", "--embedder", "none").code == 0
    idx = _agent(_doctor("-w", str(ws))[1], "coder")["index"]
    assert idx["state"] == "ok" and idx["chunks"] > 0 and idx["files"] == 2 and idx["embedder"] is None
    (ws / "memory" / "2026-02-22.md").write_text("# 2026-02-22\n\n- a new day\n", encoding="utf-8")
    idx = _agent(_doctor("-w", str(ws))[1], "coder")["index"]
    assert idx["state"] == "stale" and idx["stale_files"] == ["memory/2026-02-22.md"]
    gen = next((ws / ".qwenmem" / "index").glob("gen-*"))
    (gen / "chunks.json").write_text("[{", encoding="utf-8")
    run, doc = _doctor("-w", str(ws))
    assert _agent(doc, "coder")["index"]["state"] == "damaged" and run.code == 1


def test_last_dream_and_what_it_changed_and_two_dreams_need_attention(root):
    ws = root / "workspaces" / "writer"
    assert invoke("-w", str(ws), "dream", "--mode", "deterministic", "--date", "2026-04-04", "--promote", "all").code == 0
    run, doc = _doctor("-w", str(ws))
    writer = _agent(doc, "writer")
    assert writer["dream"]["runs"] == 1 and writer["dream"]["last_mode"] == "deterministic"
    assert writer["dream"]["last_changes"].get("added", 0) >= 1
    assert any(a["name"] == "backup" and a["files"] >= 2 for a in writer["storage"])  # the backup and the log
    # QwenPaw's own dream_cron is on for this agent: two dreams would edit MEMORY.md
    assert run.code == 1 and any(f["area"] == "schedule" and f["level"] == "attention" for f in writer["findings"])
    agent_json = json.loads((ws / "agent.json").read_text())
    agent_json["running"]["reme_light_memory_config"]["dream_cron"] = ""
    (ws / "agent.json").write_text(json.dumps(agent_json))
    assert _doctor("-w", str(ws))[0].code == 0


def test_a_session_close_to_the_threshold_is_a_note_not_a_problem(root):
    ws = root / "workspaces" / "coder"  # legacy agent.json: 65536 x 0.75 = 49,152 tokens
    msgs = [user(tokens=23000), say(tokens=23000)]
    (ws / "sessions" / "console" / "default_1772000000003.json").write_text(json.dumps(session_doc(msgs)))
    run, doc = _doctor("-w", str(ws))
    near = _agent(doc, "coder")["sessions"]["near_threshold"]
    assert [n["key"] for n in near] == ["console/default_1772000000003"] and near[0]["threshold"] == 49152
    assert run.code == 0


def test_a_damaged_history_database_of_a_2x_agent_needs_attention(root):
    ws = root / "workspaces" / "writer"
    (ws / "history.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)  # a header, then nothing
    run, doc = _doctor("-w", str(ws))
    history = _agent(doc, "writer")["history"]
    assert history["status"] not in ("ok", "not_applicable", "missing") and history["path"].endswith("history.db")
    assert run.code == 1


def test_a_1x_agent_has_no_history_database_to_check(root):
    doc = _doctor("-w", str(root), "--agent", "coder")[1]
    assert _agent(doc, "coder")["history"]["status"] == "not_applicable"


def test_an_agent_that_cannot_be_opened_is_reported_and_the_others_still_checked(root):
    (root / "workspaces" / "coder" / "agent.json").write_text("{ not json")
    run, doc = _doctor("-w", str(root))
    coder = _agent(doc, "coder")
    assert run.code == 1 and coder["error"] and "agent.json" in coder["error"]
    assert _agent(doc, "default")["sessions"]["total"] == 2


def test_a_missing_workspace_is_a_workspace_error(tmp_path):
    run = invoke("-w", str(tmp_path / "nowhere"), "doctor")
    assert run.code == 3 and "does not exist" in run.stderr


def test_a_healthy_2x_agent_reports_its_history_database(tmp_path):
    from qwenpaw2_support import builder

    ws = tmp_path / "ws2"
    (ws / "sessions").mkdir(parents=True)
    builder.agent_json(ws)
    conn = builder.create_history_db(ws / "history.db")
    facts = builder.scroll_session(ws, conn, "console:u1", "u1", "console", 6, 4, builder.Clock())
    conn.close()
    # the builder writes rows as QwenPaw does, without the full-text table: doctor says so, rebuild-fts mends it
    missing = _agent(_doctor("-w", str(ws))[1], None)["findings"]
    assert [f["level"] for f in missing if f["area"] == "history" and "full-text" in f["message"]] == ["attention"]
    assert invoke("-w", str(ws), "history", "rebuild-fts").code == 0
    before = _everything(ws)
    run, doc = _doctor("-w", str(ws))
    agent = doc["result"]["agents"][0]
    assert agent["generation"] == "2.x" and agent["history"]["status"] == "ok"
    assert agent["history"]["rows"] == facts["rows"] and agent["history"]["integrity"] == "ok"
    assert not [f for f in agent["findings"] if f["area"] == "history"] and run.code == 0, agent["findings"]
    # core.history's read-only open of a WAL database leaves SQLite's -wal/-shm sidecars (empty of changes) behind;
    # everything else is untouched. (Reported to the history reader's owner; QwenPaw keeps them while it runs.)
    sidecars = ("history.db-wal", "history.db-shm")
    assert {k: v for k, v in _everything(ws).items() if k not in sidecars} == before


def test_leftovers_of_a_killed_run_are_a_note(root):
    ws = root / "workspaces" / "writer"
    assert invoke("-w", str(ws), "reindex", "--embedder", "none").code == 0
    (ws / ".qwenmem" / "index" / "gen-999999").mkdir()  # a reindex killed while it built this one
    (ws / ".qwenmem" / "index" / "gen-999999" / "chunks.json").write_text("[]")
    run, doc = _doctor("-w", str(ws))
    temps = _agent(doc, "writer")["temporaries"]
    assert temps["status"] == "found" and temps["stale"] == [".qwenmem/index/gen-999999 (index generation)"]
    assert (ws / ".qwenmem" / "index" / "gen-999999").is_dir()  # reported, not removed
