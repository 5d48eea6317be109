"""`qwenmem sessions repair` / `restore` through the real entry point: exit codes, JSON contract, messages."""

from __future__ import annotations

import json

from helpers import invoke, run_cli
from qwenmem.core.fsio import exclusive_lock
from qwenmem.core.workspace import discover_workspace
from repair_fixtures import TINY, WIKI, make_workspace, tree_state

FILE_KEYS = {"path", "key", "classes", "status", "messages_found", "messages_intact", "messages_lost",
             "messages_removed", "messages_added", "summary", "replacements", "actions", "pending", "notes",
             "evidence", "restored_from", "quarantined", "original_sha256", "result_sha256", "generation",
             "violations"}


def test_check_json_on_the_sample_reports_the_truncated_file_and_exits_1(sample_ws):
    before = tree_state(sample_ws)
    run = invoke("-w", str(sample_ws), "sessions", "repair", "--check", "--json")
    assert run.code == 1
    doc = run.json()
    assert doc["qwenmem_json"] == 6 and doc["command"] == "sessions repair" and doc["status"] == "problems"
    result = doc["result"]
    assert set(result) == {"workspace", "mode", "run", "quarantine", "counts", "statuses", "files"}
    assert result["mode"] == "check" and result["run"] is None
    by_key = {f["key"]: f for f in result["files"]}
    assert all(set(f) == FILE_KEYS for f in result["files"])
    bad = by_key["telegram/77_telegram--77"]
    assert bad["classes"] == ["truncated"] and bad["status"] == "needs_repair"
    assert bad["messages_lost"] == 1 and bad["messages_intact"] > 0
    assert result["counts"]["ok"] == len(result["files"]) - 1
    assert tree_state(sample_ws) == before


def test_check_on_a_healthy_workspace_exits_0(tmp_path):
    root = make_workspace(tmp_path / "ws", {"a.json": TINY.read_bytes()})
    run = invoke("-w", str(root), "sessions", "repair", "--check")
    assert run.code == 0 and "ok" in run.stdout


def test_repair_needs_a_selection_and_refuses_contradictory_flags(sample_ws):
    assert invoke("-w", str(sample_ws), "sessions", "repair").code == 2
    assert invoke("-w", str(sample_ws), "sessions", "repair", "--check", "--dry-run").code == 2
    assert invoke("-w", str(sample_ws), "sessions", "repair", "--all", "telegram/77_telegram--77").code == 2
    missing = invoke("-w", str(sample_ws), "sessions", "repair", "no-such-session")
    assert missing.code == 2 and "no session matches" in missing.stderr


def test_dry_run_prints_the_plan_and_writes_nothing(sample_ws):
    before = tree_state(sample_ws)
    run = invoke("-w", str(sample_ws), "sessions", "repair", "--all", "--dry-run")
    assert run.code == 1
    assert "would: rebuild from the messages that survive the damage" in run.stdout
    assert tree_state(sample_ws) == before


def test_repair_then_check_is_clean_and_restore_lists_and_undoes(sample_ws):
    target = sample_ws / "sessions/telegram/77_telegram--77.json"
    original = target.read_bytes()
    run = invoke("-w", str(sample_ws), "sessions", "repair", "telegram/77_telegram--77", "--json")
    assert run.code == 0
    result = run.json()["result"]
    assert result["files"][0]["status"] == "repaired" and result["run"]
    assert invoke("-w", str(sample_ws), "sessions", "repair", "--check").code == 0
    listing = invoke("-w", str(sample_ws), "sessions", "restore", "--json").json()["result"]["runs"]
    assert [r["run_id"] for r in listing] == [result["run"]]
    assert listing[0]["files"] == ["sessions/telegram/77_telegram--77.json"]
    back = invoke("-w", str(sample_ws), "sessions", "restore", result["run"])
    assert back.code == 0 and "restored: sessions/telegram/77_telegram--77.json" in back.stdout
    assert target.read_bytes() == original


def test_busy_workspace_exits_4_and_writes_nothing(tmp_path):
    root = make_workspace(tmp_path / "ws", {"a.json": WIKI.read_bytes()[:9000]})
    ws = discover_workspace(root)
    with exclusive_lock(ws.lock_path):
        run = invoke("-w", str(root), "sessions", "repair", "--all", "--json")
    assert run.code == 4 and run.json()["errors"][0]["code"] == "busy"
    assert (root / "sessions/a.json").read_bytes() == WIKI.read_bytes()[:9000]


def test_from_outside_the_workspace_is_refused(tmp_path):
    root = make_workspace(tmp_path / "ws", {"a.json": b""})
    outside = tmp_path / "elsewhere.json"
    outside.write_bytes(TINY.read_bytes())
    run = invoke("-w", str(root), "sessions", "repair", "a", "--from", str(outside))
    assert run.code == 2 and "outside the workspace" in run.stderr
    assert (root / "sessions/a.json").read_bytes() == b""


def test_unrecoverable_file_says_so_and_names_evidence(tmp_path):
    root = make_workspace(tmp_path / "ws", {"x.json": b"\x00" * 100, "x.json.backup_1": TINY.read_bytes()})
    run = invoke("-w", str(root), "sessions", "repair", "x")
    assert run.code == 1
    assert "leave the file untouched" in run.stdout and "sessions/x.json.backup_1" in run.stdout
    assert (root / "sessions/x.json").read_bytes() == b"\x00" * 100
    fixed = invoke("-w", str(root), "sessions", "repair", "x", "--from-backup")
    assert fixed.code == 0 and (root / "sessions/x.json").read_bytes() == TINY.read_bytes()


def test_subprocess_exit_codes_and_streams(tmp_path):
    root = make_workspace(tmp_path / "ws", {"a.json": WIKI.read_bytes() + b"QQ"})
    run = run_cli("-w", str(root), "sessions", "repair", "--check", "--json")
    assert run.code == 1 and json.loads(run.stdout)["result"]["files"][0]["classes"] == ["trailing_garbage"]
    fixed = run_cli("-w", str(root), "sessions", "repair", "--all", "--quiet")
    assert fixed.code == 0 and fixed.stdout == ""
    assert (root / "sessions/a.json").read_bytes() == WIKI.read_bytes()


def test_ids_reused_for_different_messages_are_a_warning_not_a_failure(tmp_path):
    doc = json.loads(TINY.read_bytes())
    content = doc["agent"]["memory"]["content"]
    clash = json.loads(json.dumps(content[0]))
    clash[0]["content"] = "another text"
    content.append(clash)
    root = make_workspace(tmp_path / "ws", {"a.json": json.dumps(doc, ensure_ascii=False).encode()})
    run = invoke("-w", str(root), "sessions", "repair", "--check", "--json")
    assert run.code == 0
    [f] = run.json()["result"]["files"]
    assert f["classes"] == ["duplicate_ids"] and f["status"] == "warning"
