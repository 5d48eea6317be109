"""`qwenmem upgrade` on a generated long 1.x workspace: the whole record in history.db, the live context kept, the
dry run, idempotence, --undo, native, the busy refusal, and convergence after a kill at every write."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from helpers import invoke
from upgrade_support import SUMMARY_GEN1, long_workspace, tree_bytes

ALICE = "sessions/alice_console--alice.json"


def _rows(ws: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(ws / "history.db")
    try:
        out: dict[str, list[tuple]] = {}
        for sid, kind, key, content in conn.execute(
                "SELECT session_id, kind, dedup_key, content FROM conversation_history ORDER BY seq"):
            out.setdefault(sid, []).append((kind, key, content))
        return out
    finally:
        conn.close()


def _upgrade(ws: Path, *args: str) -> dict:
    run = invoke("-w", str(ws), "upgrade", *args, "--json")
    assert run.code == 0, run.stderr
    return run.json()["result"]


def test_dry_run_writes_nothing_and_shows_the_table(tmp_path):
    ws = long_workspace(tmp_path / "ws")
    before = tree_bytes(ws, skip_private=False)
    result = _upgrade(ws, "--dry-run")
    assert tree_bytes(ws, skip_private=False) == before
    alice = next(s for s in result["sessions"] if s["key"] == "alice_console--alice")
    assert (alice["messages"], alice["compressed"], alice["rows_to_add"]) == (360, 280, 360)
    assert alice["tokens_after"] < alice["tokens_before"]
    assert alice["qwenpaw_keeps"] == 0  # 90 days old: QwenPaw's import keeps none of it
    assert [(d["messages"], d["rows_to_add"]) for d in result["dialog"]] == [(120, 120)]
    table = invoke("-w", str(ws), "upgrade", "--dry-run")
    assert "rows to add" in table.stdout and "alice_console--alice" in table.stdout


def test_upgrade_keeps_every_message_and_the_live_context(tmp_path):
    ws = long_workspace(tmp_path / "ws")
    result = _upgrade(ws)
    assert result["status"] == "upgraded" and result["rows_added"] == 360 + 4 + 120
    rows = _rows(ws)
    assert len(rows["console:alice"]) == 360 and len(rows["dialog:" + (next((ws / "dialog").iterdir()).stem)]) == 120
    doc = json.loads((ws / ALICE).read_text("utf-8"))
    state, scroll = doc["agent"]["state"], doc["agent"]["scroll"]
    assert state["session_id"] == "console:alice" and state["summary"] == ""
    assert state["context"][0]["metadata"] == {"qwenpaw_tag": "scroll_memory"}
    assert len(state["context"]) == 1 + 80  # the placeholder + the 80 messages 1.x did not mark compressed
    assert scroll["synthetic_ids"] == [state["context"][0]["id"]]
    summary = scroll["continuation_summary"]
    assert summary["active_task"] == "Plan the Lisbon trip in May"
    assert [i["text"] for i in summary["constraints"]] == ["Budget under 2000 EUR"]
    block = scroll["index"]["tiers"][0][0]
    assert tuple(summary["covered_seq"]) == (block["seq_lo"], block["seq_hi"])
    assert "[archived task state]" in state["context"][0]["content"][0]["text"]
    agent = json.loads((ws / "agent.json").read_text("utf-8"))
    assert agent["custom_key"] == [1, 2] and agent["running"]["summarize_when_compact"] is True
    assert agent["running"]["light_context_config"]["strategy"] == "scroll"
    assert agent["running"]["light_context_config"]["scroll_config"]["history_retention_days"] == 0
    originals = Path(result["journal"]) / "originals"
    assert (originals / "agent.json").is_file() and (originals / ALICE).is_file()
    assert result["snapshot"]
    fts = sqlite3.connect(ws / "history.db").execute(
        "SELECT count(*) FROM conversation_history_fts WHERE conversation_history_fts MATCH 'azulejo'").fetchone()[0]
    assert fts == 121  # every tool result: offloaded, compressed, live, and the orphan session's one
    assert SUMMARY_GEN1  # the fixture's summary is the one parsed above


def test_rerun_changes_nothing_and_undo_puts_everything_back(tmp_path):
    ws = long_workspace(tmp_path / "ws")
    pristine = tree_bytes(ws)
    _upgrade(ws)
    upgraded = tree_bytes(ws)
    again = _upgrade(ws)
    assert again["status"] == "unchanged" and again["rows_added"] == 0
    assert tree_bytes(ws) == upgraded
    undone = invoke("-w", str(ws), "upgrade", "--undo", "--json")
    assert undone.code == 0, undone.stderr
    assert undone.json()["result"]["removed_history_db"] is True
    assert tree_bytes(ws) == pristine


def test_undo_leaves_a_session_qwenpaw_saved_since(tmp_path):
    ws = long_workspace(tmp_path / "ws")
    _upgrade(ws)
    (ws / ALICE).write_text((ws / ALICE).read_text("utf-8").replace("answer 100", "answer 100!"), "utf-8")
    undone = invoke("-w", str(ws), "upgrade", "--undo", "--json")
    assert undone.code == 1
    assert undone.json()["result"]["left_changed"] == [ALICE]


def test_native_strategy(tmp_path):
    ws = long_workspace(tmp_path / "ws")
    _upgrade(ws, "--strategy", "native")
    doc = json.loads((ws / ALICE).read_text("utf-8"))
    assert "scroll" not in doc["agent"]
    state = doc["agent"]["state"]
    assert state["summary"] == SUMMARY_GEN1 and len(state["context"]) == 80
    offloaded = sum(1 for p in (ws / "dialog").iterdir() for _ in p.open(encoding="utf-8"))
    assert offloaded == 120 + 280  # 1.x's own offloads + the compressed messages, in the 2.0 shape
    assert len(_rows(ws)["console:alice"]) == 360
    agent = json.loads((ws / "agent.json").read_text("utf-8"))
    assert agent["running"]["light_context_config"]["strategy"] == "native"
    pristine_dialog = invoke("-w", str(ws), "upgrade", "--undo")
    assert pristine_dialog.code == 0
    assert sum(1 for p in (ws / "dialog").iterdir() for _ in p.open(encoding="utf-8")) == 120


def test_refuses_while_qwenpaw_holds_the_workspace(tmp_path):
    ws = long_workspace(tmp_path / "ws")
    before = tree_bytes(ws)
    with open(ws / ALICE, "r+b"):  # a process with a session file open for writing
        run = invoke("-w", str(ws), "upgrade")
    assert run.code == 4 and "Traceback" not in run.stderr
    assert tree_bytes(ws) == before and not (ws / ".qwenmem" / "upgrade").exists()


class Killed(BaseException):
    pass


def _store_rows(ws: Path) -> list[tuple]:
    conn = sqlite3.connect(ws / "history.db")
    try:
        return conn.execute("SELECT seq, session_id, kind, role, name, content, tool_call_id, tool_input, tool_state, "
                            "headline, blocks, metadata, created_at, dedup_key FROM conversation_history "
                            "ORDER BY session_id, dedup_key").fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("strategy", ["scroll", "native"])
def test_a_kill_at_any_write_converges(tmp_path, strategy):
    from qwenmem.core.upgrade.run import Settings, upgrade
    from qwenmem.core.workspace import discover_workspace

    ref_ws = long_workspace(tmp_path / "ref" / "ws", turns=24, compressed_turns=10, dialog_turns=6)
    names: list[str] = []
    upgrade(discover_workspace(ref_ws), Settings(strategy), hook=names.append)
    reference, ref_rows = tree_bytes(ref_ws), _store_rows(ref_ws)
    assert len(names) > 8
    for n, name in enumerate(names):
        ws = long_workspace(tmp_path / f"k{n}" / "ws", turns=24, compressed_turns=10, dialog_turns=6)

        calls: list[str] = []

        def kill(at: str, n: int = n, calls: list[str] = calls) -> None:
            if len(calls) == n:
                raise Killed(at)
            calls.append(at)

        with pytest.raises(Killed):
            upgrade(discover_workspace(ws), Settings(strategy), hook=kill)
        upgrade(discover_workspace(ws), Settings(strategy))
        got = tree_bytes(ws)
        same_files = {k: v for k, v in got.items() if not k.startswith("history.db")}
        assert same_files == {k: v for k, v in reference.items() if not k.startswith("history.db")}, name
        assert _store_rows(ws) == ref_rows, name  # the same rows under the same seqs


def _without_seq(rows: list[tuple]) -> list[tuple]:
    return [r[1:] for r in rows]


def test_fleet_upgrades_many_and_refuses_flags_it_does_not_run(tmp_path):
    first, second = long_workspace(tmp_path / "a" / "ws"), long_workspace(tmp_path / "b" / "ws")
    run = invoke("fleet", str(first), str(second), "-j", "1", "--", "upgrade", "--strategy", "native")
    assert run.code == 0, run.stderr
    records = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert [r["result"]["status"] for r in records] == ["upgraded", "upgraded"]
    assert all(r["result"]["strategy"] == "native" for r in records)
    undo = invoke("fleet", str(first), "-j", "1", "--", "upgrade", "--undo")
    assert undo.code == 0, undo.stderr
    assert not (first / "history.db").exists()
