"""`compact` on QwenPaw 2.x scroll sessions: eviction into a Tier-0 block and a new placeholder, bookkeeping pruned
to the live tail, and nothing leaves the file that is not in history.db (checked with SQL) (spec §4.4-4.5, §10)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from helpers import REPO, invoke
from qwenpaw2_support import builder, copy_corpus, needs_gen2_corpus
from tests.core.compaction.gen2.test_compact2_check import conversation_of_bytes, scroll_ws, write_ws
from validators import optional_agentscope_python


def rows_of(db, session_id: str) -> tuple[set[str], set[str]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT kind, dedup_key FROM conversation_history WHERE session_id = ?",
                            (session_id,)).fetchall()
    return {k for kind, k in rows if kind != "tool_result"}, {k for kind, k in rows if kind == "tool_result"}


def assert_consistent(doc: dict) -> None:
    st, sc = doc["agent"]["state"], doc["agent"]["scroll"]
    head, live = st["context"][0], st["context"][1:]
    assert head["metadata"] == {"qwenpaw_tag": "scroll_memory"} and head["name"] == "memory"
    assert sc["synthetic_ids"] == [head["id"]]
    live_ids = {m["id"] for m in live}
    tcids = {b["id"] for m in live for b in m["content"] if b["type"] in ("tool_call", "tool_result")}
    assert set(sc["persisted_ids"]) <= live_ids and set(sc["seq_by_id"]) <= live_ids
    assert set(sc["leaf_by_id"]) <= live_ids and set(sc["model_turn_seq"]) <= live_ids
    assert set(sc["persisted_tcids"]) <= tcids and set(sc["seq_by_tcid"]) <= tcids


@needs_gen2_corpus
def test_corpus_scroll_eviction_keeps_everything_in_history_db(tmp_path):
    ws = copy_corpus(tmp_path)
    path = ws / "sessions" / "console" / "alice_console--alice.json"
    before = json.loads(path.read_text())
    run = invoke("-w", str(ws), "compact", "console/alice_console--alice", "--max-input-length", "6000", "--json")
    assert run.code == 0, run.stderr
    r = run.json()["result"]["sessions"][0]
    assert r["status"] == "compacted" and r["removed_ids"]
    after = json.loads(path.read_text())
    assert_consistent(after)
    msg_rows, result_rows = rows_of(ws / "history.db", "console:alice")
    by_id = {m["id"]: m for m in before["agent"]["state"]["context"]}
    for mid in r["removed_ids"]:  # every evicted message, and each of its tool results, is in history.db
        assert mid in msg_rows
        assert {b["id"] for b in by_id[mid]["content"] if b["type"] == "tool_result"} <= result_rows
    tiers = after["agent"]["scroll"]["index"]["tiers"]
    old = before["agent"]["scroll"]["index"]["tiers"][0][0]
    assert tiers[0][0] == old  # the earlier eviction's block is untouched
    new = tiers[0][1]
    evicted_seqs = [before["agent"]["scroll"]["seq_by_id"][i] for i in r["removed_ids"]]
    assert new["seq_lo"] == min(s[0] for s in evicted_seqs) and new["seq_hi"] == max(s[1] for s in evicted_seqs)
    text = after["agent"]["state"]["context"][0]["content"][0]["text"]
    assert f"[seq {new['seq_lo']}–{new['seq_hi']}]" in text and "[archived task state]" in text
    assert after["agent"]["scroll"]["summary_update_failed"] is True  # the continuation summary was not updated
    kept_before = [m["id"] for m in before["agent"]["state"]["context"][1:] if m["id"] not in r["removed_ids"]]
    assert [m["id"] for m in after["agent"]["state"]["context"][1:]] == kept_before
    as2_python = optional_agentscope_python()
    if as2_python is not None:
        proc = subprocess.run([str(as2_python), str(REPO / "bench" / "peer" / "agentscope2_check.py"), str(path)],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_rows_are_written_before_messages_leave_the_file(tmp_path):
    msgs = conversation_of_bytes(48_000, n=20)
    ws = scroll_ws(tmp_path, msgs, in_history=6)  # QwenPaw persisted only the first 6 messages
    run = invoke("-w", str(ws), "compact", "console/t", "--max-input-length", "10000", "--system-tokens", "0",
                 "--json")
    assert run.code == 0, run.stderr
    r = run.json()["result"]["sessions"][0]
    assert r["tier2"]["detail"]["history_rows_written"] == 14
    assert len(r["removed_ids"]) > 6  # the newly written rows allowed a full eviction
    msg_rows, _ = rows_of(ws / "history.db", "console:t")
    assert {m["id"] for m in msgs} <= msg_rows
    with sqlite3.connect(ws / "history.db") as conn:
        indexed = conn.execute("SELECT count(*) FROM conversation_history_fts_docsize").fetchone()[0]
        blocks = conn.execute("SELECT blocks FROM conversation_history WHERE dedup_key = ?",
                              (msgs[10]["id"],)).fetchone()[0]
    assert indexed == 14  # FTS kept in sync by hand for the rows written (the fixture's 6 were not indexed)
    assert json.loads(blocks) == msgs[10]["content"] and blocks.isascii()
    after = json.loads((ws / "sessions" / "console" / "t.json").read_text())
    assert_consistent(after)
    assert set(after["agent"]["scroll"]["persisted_ids"]) == {m["id"] for m in after["agent"]["state"]["context"][1:]}
    again = invoke("-w", str(ws), "compact", "console/t", "--max-input-length", "10000", "--json").json()
    assert again["result"]["sessions"][0]["status"] == "unchanged"


def _locked(ws: Path, *args: str):
    holder = sqlite3.connect(ws / "history.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # QwenPaw (or anyone) holds the write lock longer than the 5 s timeout
    try:
        return invoke("-w", str(ws), "compact", "console/t", "--system-tokens", "0", "--tools-tokens", "0", "--json",
                      *args)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_locked_history_db_keeps_unpersisted_messages_in_the_file_and_exits_1(tmp_path):
    msgs = conversation_of_bytes(48_000, n=20)
    ws = scroll_ws(tmp_path, msgs, in_history=6)
    run = _locked(ws, "--max-input-length", "10000")
    doc = run.json()
    r = doc["result"]["sessions"][0]
    assert any("could not be written" in w for w in doc["warnings"])
    assert r["removed_ids"] == [m["id"] for m in msgs[:6]]  # only what already had rows left the file
    msg_rows, _ = rows_of(ws / "history.db", "console:t")
    assert set(r["removed_ids"]) <= msg_rows
    # written, but not all done: a partial success (README exit-code table: 1)
    assert r["status"] == "compacted" and r["error_kind"] == "partial"
    assert run.code == 1 and doc["status"] == "problems"


def test_a_locked_history_db_with_nothing_written_is_busy(tmp_path):
    msgs = conversation_of_bytes(48_000, n=20)
    ws = scroll_ws(tmp_path, msgs, in_history=0)  # nothing has rows: nothing may leave the file
    before = (ws / "sessions" / "console" / "t.json").read_bytes()
    run = _locked(ws, "--max-input-length", "10000")
    r = run.json()["result"]["sessions"][0]
    assert r["status"] == "failed" and r["error_kind"] == "busy" and r["removed_ids"] == []
    assert (ws / "sessions" / "console" / "t.json").read_bytes() == before
    assert run.code == 4  # busy, nothing written: what `history salvage` exits on a locked store too


# the child: `qwenmem compact …`, SIGKILLed right after its history.db transaction committed, before the session
# file is rewritten
KILLED_AFTER_HISTORY_COMMIT = """
import os, signal, sys
from qwenmem.core.compaction.gen2 import history_write

real_write_rows = history_write.write_rows

def write_rows(db, rows):
    real_write_rows(db, rows)
    os.kill(os.getpid(), signal.SIGKILL)

history_write.write_rows = write_rows
from qwenmem.cli.app import main
main(sys.argv[1:])
"""


def _half_persisted_ws(dest: Path, msgs: list[dict]) -> Path:
    """A scroll session whose first 6 messages QwenPaw persisted (rows, persisted_ids, seq_by_id); the rest not."""
    seqs = {m["id"]: (i + 1, i + 1) for i, m in enumerate(msgs[:6])}
    ws = write_ws(dest, msgs, "scroll", scroll=builder.scroll_state("console:t", msgs[:6], seqs, None, []))
    conn = builder.create_history_db(ws / "history.db")
    builder.insert_rows(conn, builder.rows_for("console:t", msgs[:6]))
    conn.commit()
    conn.close()
    return ws


def _outcome(ws: Path) -> tuple[dict, list, list]:
    """The session's scroll bookkeeping and live tail (the new placeholder's random ids aside), and the rows."""
    doc = json.loads((ws / "sessions" / "console" / "t.json").read_text())
    scroll_state = {k: v for k, v in doc["agent"]["scroll"].items() if k != "synthetic_ids"}
    with sqlite3.connect(f"file:{ws / 'history.db'}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT seq, kind, dedup_key FROM conversation_history ORDER BY seq").fetchall()
    return scroll_state, doc["agent"]["state"]["context"][1:], rows


def test_a_rerun_after_a_kill_between_history_commit_and_session_rewrite_converges(tmp_path):
    msgs = conversation_of_bytes(48_000, n=20)
    args = ["compact", "console/t", "--max-input-length", "10000", "--system-tokens", "0", "--tools-tokens", "0"]
    whole = _half_persisted_ws(tmp_path / "whole", msgs)
    assert invoke("-w", str(whole), *args).code == 0
    killed = _half_persisted_ws(tmp_path / "killed", msgs)
    session = killed / "sessions" / "console" / "t.json"
    before = session.read_bytes()
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", KILLED_AFTER_HISTORY_COMMIT, "-w", str(killed), *args], env=env,
                          capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert session.read_bytes() == before  # killed before the rewrite ...
    assert len(rows_of(killed / "history.db", "console:t")[0]) == 20  # ... after the commit
    assert invoke("-w", str(killed), *args).code == 0
    scroll_state, live, rows = _outcome(killed)
    assert (scroll_state, live, rows) == _outcome(whole)
    assert live and set(scroll_state["persisted_ids"]) == {m["id"] for m in live}
    assert set(scroll_state["seq_by_id"]) == {m["id"] for m in live}


def test_dry_run_and_below_trigger_write_nothing(tmp_path):
    ws = scroll_ws(tmp_path, conversation_of_bytes(48_000, n=20))
    path = ws / "sessions" / "console" / "t.json"
    before = path.read_bytes()
    dry = invoke("-w", str(ws), "compact", "console/t", "--max-input-length", "10000", "--dry-run", "--json")
    assert dry.json()["result"]["sessions"][0]["status"] == "dry-run"
    low = invoke("-w", str(ws), "compact", "console/t", "--max-input-length", "1000000", "--json")
    assert low.json()["result"]["sessions"][0]["status"] == "unchanged"
    assert path.read_bytes() == before


def test_a_full_tier_carries_its_older_blocks_one_tier_up():
    from qwenmem.core.compaction.gen2.evict import add_block, new_block

    index: dict = {"session_id": "s", "agent_id": "default", "tiers": []}
    for k in range(10):
        add_block(index, new_block(10 * k + 1, 10 * k + 10, {10 * k + 2: f"turn {k}"}))
    tier0, tier1 = index["tiers"]
    assert [b["seq_lo"] for b in tier0] == [91]
    assert len(tier1) == 1 and tier1[0]["seq_lo"] == 1 and tier1[0]["seq_hi"] == 90
    assert [line[:3] for line in tier1[0]["lines"]] == [[10 * k + 1, 10 * k + 10, f"turn {k}"] for k in range(9)]


def test_a_missing_tool_result_row_is_written_first(tmp_path):
    from qwenpaw2_support import builder

    clock = builder.Clock()
    msgs = conversation_of_bytes(48_000, n=20)
    msgs[1]["content"] += [builder.tool_call_block("call_x", "shell", {"a": 1}, clock),
                           builder.tool_result_block("call_x", "shell", "out", clock)]
    ws = scroll_ws(tmp_path, msgs)
    with sqlite3.connect(ws / "history.db") as conn:
        conn.execute("DELETE FROM conversation_history WHERE kind = 'tool_result' AND dedup_key = 'call_x'")
    run = invoke("-w", str(ws), "compact", "console/t", "--max-input-length", "10000", "--json")
    r = run.json()["result"]["sessions"][0]
    assert msgs[1]["id"] in r["removed_ids"] and r["tier2"]["detail"]["history_rows_written"] == 1
    _, result_rows = rows_of(ws / "history.db", "console:t")
    assert "call_x" in result_rows
