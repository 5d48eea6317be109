"""`sessions list`, `sessions show [--history]` and `info` on QwenPaw 2.x workspaces (the generated corpus and
self-built mixed workspaces)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from helpers import invoke
from qwenpaw2_support import builder, copy_corpus, corpus_session_files, needs_gen2_corpus

REGISTERED_GEN2 = ["console/alice_console--alice", "console/bob_console--bob"]


def raw_transcript_count(path) -> int:
    agent = json.loads(path.read_text("utf-8"))["agent"]
    if "state" in agent:
        return sum((m.get("metadata") or {}).get("qwenpaw_tag") != "scroll_memory" for m in agent["state"]["context"])
    return len(agent["memory"]["content"])


def sql_rows(db, session_id) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM conversation_history WHERE session_id = ?", (session_id,)).fetchone()[0]
    finally:
        conn.close()


@pytest.fixture
def corpus_ws(tmp_path):
    return copy_corpus(tmp_path)


@needs_gen2_corpus
def test_list_counts_equal_independent_counts(corpus_ws):
    doc = invoke("-w", str(corpus_ws), "sessions", "list", "--json").json()
    rows = {r["key"]: r for r in doc["result"]["sessions"]}
    assert ".synced" not in rows and len(rows) == len(corpus_session_files())
    for key, row in rows.items():
        path = corpus_ws / row["path"]
        if key == "console/carol_console--carol":  # trailing garbage: reported, its document still read
            assert row["health"] == "corrupt" and row["generation"] == "2.x"
            assert any("extra data after the JSON document" in p for p in row["problems"])
            continue
        assert row["health"] == "ok" and row["problems"] == [], key
        assert row["messages"] == raw_transcript_count(path), key
        if row["identity"] == "chats.json":
            assert row["history_rows"] == sql_rows(corpus_ws / "history.db", row["session_id"]), key
    assert rows["console/alice_console--alice"]["history_rows"] == 23
    assert doc["result"]["generation"] == {"generation": "mixed", "files_1x": 3, "files_2x": 3,
                                           "markers": ["history.db", "sessions/.synced.json", "mem_metadata",
                                                       "mem_session"]}
    risky = {k for k, r in rows.items() if r["at_risk"]}
    assert risky == {"orphan_unregistered", "discord/42_discord--dm--42"}
    assert rows["telegram/7_telegram--7"]["at_risk"] == []
    assert doc["result"]["history"]["rows"] == 31 and doc["result"]["history_only"] == []


@needs_gen2_corpus
@pytest.mark.parametrize("key", REGISTERED_GEN2 + ["telegram/7_telegram--7"])
def test_show_without_warnings(corpus_ws, key):
    run = invoke("-w", str(corpus_ws), "sessions", "show", key, "--json")
    assert run.code == 0 and run.stderr == ""
    result = run.json()["result"]
    assert result["health"] == "ok" and result["problems"] == []
    human = invoke("-w", str(corpus_ws), "sessions", "show", key)
    assert human.code == 0 and "warning" not in human.stderr and "nothing can be salvaged" not in human.stderr


@needs_gen2_corpus
def test_show_history_of_the_scroll_session(corpus_ws):
    doc = invoke("-w", str(corpus_ws), "sessions", "show", "console:alice", "--history", "--json").json()["result"]
    hist = doc["history"]
    assert hist["rows"] == sql_rows(corpus_ws / "history.db", "console:alice")
    assert hist["evictions"] == [{"seq_lo": 1, "seq_hi": 12}]
    msgs = hist["messages"]
    evicted = [m for m in msgs if not m["live"] and not m["synthetic"]]
    live = [m for m in msgs if m["live"]]
    assert len(evicted) == 10 and len(live) == 8 and all(m["seq"] <= 12 for m in evicted)
    assert set(msgs[0]) == set(doc_message_shape(corpus_ws))
    human = invoke("-w", str(corpus_ws), "sessions", "show", "console:alice", "--history").stdout
    assert "evicted from the live window: seq 1–12" in human and "live tail" in human
    assert human.index("Hi, I am planning a trip") < human.index("▼ live tail")


def doc_message_shape(ws):
    doc = invoke("-w", str(ws), "sessions", "show", "console:alice", "--json").json()["result"]
    return doc["messages"][0]


@needs_gen2_corpus
def test_info_on_the_corpus(corpus_ws):
    doc = invoke("-w", str(corpus_ws), "info", "--json").json()["result"]
    q = doc["qwenpaw2"]
    assert doc["generation"]["generation"] == "mixed"
    assert q["strategy"] == "scroll" and q["history"]["rows"] == 31 and q["history"]["status"] == "ok"
    assert q["provider"]["context_size"] == 9000
    settings = {r["name"]: r for r in doc["settings"]}
    assert settings["max_input_length"]["value"] == 9000
    assert "compact_with_thinking_block" not in settings and "summarize_when_compact" not in settings
    assert doc["derived"]["compact_threshold"] == 7200
    assert q["reme_dirs"]["metadata_dir"]["exists"] and q["reme_dirs"]["digest_dir"]["exists"]
    text = invoke("-w", str(corpus_ws), "info").stdout + json.dumps(doc)
    assert "gAAAAA" not in text


def _mixed_ws(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sessions").mkdir(parents=True)
    builder.agent_json(ws, strategy="scroll", retention=30)
    conn = builder.create_history_db(ws / "history.db")
    clock = builder.Clock()
    a = builder.scroll_session(ws, conn, "console:ann", "ann", "console", turns=6, keep_last=4, clock=clock)
    b = builder.scroll_session(ws, conn, "console:ben", "console:ben", "console", turns=2, keep_last=10, clock=clock)
    builder.insert_rows(conn, builder.rows_for("console:gone", builder.conversation(2, clock)))
    conn.close()
    old = builder.gen1_session(ws, "console/old_console--old.json", ["2020-01-01 10:00:00.000", "2020-01-01 10:00:01.000"])
    builder.gen1_session(ws, "stray.json", ["2099-01-01 10:00:00.000"])
    (ws / "sessions" / ".synced.json").write_text(json.dumps({"version": 2, "files": {}}))
    (ws / "sessions" / "console" / ".ann.json.0123456789abcdef.tmp").write_text("{")
    builder.write_chats(ws, [builder.chat("console:ann", "ann", "console"), builder.chat("console:ben", "console:ben", "console"),
                             builder.chat("console:old", "old", "console")])
    return ws, a, b, old


def test_mixed_workspace(tmp_path):
    ws, a, b, old = _mixed_ws(tmp_path)
    assert b["path"].name == "console--ben.json"  # 2.x drops a user part equal to the session id
    doc = invoke("-w", str(ws), "sessions", "list", "--json").json()["result"]
    rows = {r["key"]: r for r in doc["sessions"]}
    assert set(rows) == {"console/ann_console--ann", "console/console--ben", "console/old_console--old", "stray"}
    ann = rows["console/ann_console--ann"]
    assert ann["session_id"] == "console:ann" and ann["identity"] == "chats.json"
    assert ann["messages"] == a["live"] == 4 and ann["history_rows"] == a["rows"]
    assert rows["console/console--ben"]["identity"] == "chats.json" and rows["console/console--ben"]["history_rows"] == b["rows"]
    assert rows["console/old_console--old"]["at_risk"] and "older than" in rows["console/old_console--old"]["at_risk"][0]
    assert rows["stray"]["at_risk"] == ["unregistered in chats.json: QwenPaw 2.x never imports its turns into history.db"]
    assert doc["history_only"] == [{"session_id": "console:gone", "rows": 4}]
    assert doc["generation"]["generation"] == "mixed"
    assert all(r["health"] == "ok" for r in rows.values())
    human = invoke("-w", str(ws), "sessions", "list")
    assert "history.db only" in human.stdout and "at risk" in human.stderr


def test_show_history_only_session_and_unpersisted_tail(tmp_path):
    ws, a, _, _ = _mixed_ws(tmp_path)
    doc = invoke("-w", str(ws), "sessions", "show", "console:gone", "--history", "--json").json()["result"]
    assert doc["path"] is None and doc["history"]["rows"] == 4 and len(doc["history"]["messages"]) == 4
    missing = invoke("-w", str(ws), "sessions", "show", "console:gone")
    assert missing.code != 0  # without --history it is not a session file
    doc = json.loads(a["path"].read_text())
    doc["agent"]["state"]["context"].append(builder.msg("user", [builder.text_block("not yet written through",
                                                                                    builder.Clock())], builder.Clock()))
    a["path"].write_text(builder.dumps(doc))
    full = invoke("-w", str(ws), "sessions", "show", "console:ann", "--history", "--json").json()["result"]["history"]
    assert full["live_messages"] == 5 and full["evicted_messages"] == a["evicted"]
    last = full["messages"][-1]
    assert last["seq"] is None and last["live"] and last["blocks"][0]["text"] == "not yet written through"


def test_damaged_history_db_is_reported_not_raised(tmp_path):
    ws, *_ = _mixed_ws(tmp_path)
    (ws / "history.db").write_bytes(b"this is not a database" * 50)
    for name in ("history.db-wal", "history.db-shm"):
        (ws / name).unlink(missing_ok=True)
    listed = invoke("-w", str(ws), "sessions", "list", "--json")
    assert listed.code == 0 and "Traceback" not in listed.stderr
    doc = listed.json()
    assert doc["result"]["history"]["status"] == "corrupt"
    assert any("history.db cannot be read (corrupt)" in w for w in doc["warnings"])
    shown = invoke("-w", str(ws), "sessions", "show", "console:ann", "--history")
    assert shown.code != 0 and "Traceback" not in shown.stderr and "history.db" in shown.stderr
    info = invoke("-w", str(ws), "info", "--json").json()["result"]["qwenpaw2"]["history"]
    assert info["status"] == "corrupt"


def test_quarantined_sibling_is_named(tmp_path):
    ws, *_ = _mixed_ws(tmp_path)
    (ws / "history.db.corrupt-20261130T101500").write_bytes(b"x")
    run = invoke("-w", str(ws), "sessions", "list", "--json")
    assert any("quarantined history store" in w for w in run.json()["warnings"])
    info = invoke("-w", str(ws), "info")
    assert "quarantined store" in info.stdout


def test_list_and_show_history_while_a_writer_holds_a_transaction(tmp_path):
    from tests.core.history.test_qwenpaw2_history import _hold

    ws, a, _, _ = _mixed_ws(tmp_path)
    proc = _hold(ws / "history.db", "WAL", "IMMEDIATE", 20, session_id="console:ann")
    try:
        listed = invoke("-w", str(ws), "sessions", "list", "--json").json()["result"]
        rows = {r["key"]: r for r in listed["sessions"]}
        assert listed["history"]["status"] == "ok"
        assert rows["console/ann_console--ann"]["history_rows"] == a["rows"]  # the uncommitted row is not counted
        shown = invoke("-w", str(ws), "sessions", "show", "console:ann", "--history", "--json")
        assert shown.code == 0 and shown.json()["result"]["history"]["rows"] == a["rows"]
    finally:
        proc.kill()
        proc.wait()


def test_history_on_a_workspace_without_history_db(sample_ws):
    run = invoke("-w", str(sample_ws), "sessions", "show", "console/default_1764235442381", "--history")
    assert run.code == 3 and "no history database" in run.stderr and "Traceback" not in run.stderr
    listed = invoke("-w", str(sample_ws), "sessions", "list", "--json").json()["result"]
    assert listed["generation"]["generation"] == "1.x" and all(r["at_risk"] == [] for r in listed["sessions"])
