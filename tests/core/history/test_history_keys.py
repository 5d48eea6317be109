"""One rule for which history.db rows are a 2.x session file's (qwenmem.core.history.keys), shared by `sessions
list`, `sessions repair`, `compact --check` and `sessions show --history`: the chat's session id, never
`agent.state.session_id`, which QwenPaw leaves at AgentScope's random default (issue 23 item 1).

The sessions are written by QwenPaw 2.2.2.post1's own ScrollContextManager, HistoryStore and SafeJSONSession
(tests/fixtures/qwenpaw2/qwenpaw_scroll_sessions.py, run with the agentscope 2.0.10 venv) and by the generated
corpus."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from helpers import invoke
from qwenpaw2_support import copy_corpus, needs_gen2_corpus
from validators import agentscope_python

DRIVER = Path(__file__).resolve().parents[2] / "fixtures" / "qwenpaw2" / "qwenpaw_scroll_sessions.py"
ALICE = "console/alice_console--alice"


def back_date(path: Path, days: int = 3) -> None:
    """Older than repair's "QwenPaw may be writing it" window, as in the issue's repro."""
    t = time.time() - days * 86400
    os.utime(path, (t, t))


def file_bytes(ws: Path) -> dict[str, bytes]:
    return {p.relative_to(ws).as_posix(): p.read_bytes() for p in sorted((ws / "sessions").rglob("*.json"))}


def repair_statuses(ws: Path, *args: str) -> dict[str, tuple[str, list[str]]]:
    run = invoke("-w", str(ws), "sessions", "repair", *args, "--json")
    assert "Traceback" not in run.stderr
    return {f["key"]: (f["status"], f["classes"]) for f in run.json()["result"]["files"]}


def qwenpaw_sessions(ws: Path, n: int = 3, turns: int = 3) -> list[dict]:
    proc = subprocess.run([str(agentscope_python(qwenpaw=True)), str(DRIVER), str(ws), str(n), str(turns)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    made = json.loads(proc.stdout.strip().splitlines()[-1])["sessions"]
    for s in made:
        s["path"] = Path(s["path"]) if Path(s["path"]).is_absolute() else Path(s["path"]).resolve()
        back_date(s["path"])
    return made


@pytest.fixture
def qp_ws(tmp_path):
    ws = copy_corpus(tmp_path)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        made = qwenpaw_sessions(ws.relative_to(tmp_path))
    finally:
        os.chdir(cwd)
    return ws, made


@needs_gen2_corpus
def test_sessions_qwenpaw_wrote_are_ok_and_never_rewritten(qp_ws):
    ws, made = qp_ws
    for s in made:  # what QwenPaw itself does: the state keeps AgentScope's random id, the rows the chat's
        assert s["embedded_session_id"] != s["session_id"] and len(s["embedded_session_id"]) == 32
        assert s["rows"] == 6
    keys = {f"console/{s['path'].stem}": s for s in made}
    before = file_bytes(ws)
    checked = repair_statuses(ws, "--check")
    assert {k: checked[k] for k in keys} == {k: ("ok", ["ok"]) for k in keys}
    repair_statuses(ws, "--all")
    after = file_bytes(ws)
    healthy = [k for k, (status, _) in checked.items() if status == "ok"]
    assert healthy and all(after[f"sessions/{k}.json"] == before[f"sessions/{k}.json"] for k in healthy)

    listed = {r["key"]: r for r in invoke("-w", str(ws), "sessions", "list", "--json").json()["result"]["sessions"]}
    for key, s in keys.items():
        assert (listed[key]["session_id"], listed[key]["history_rows"]) == (s["session_id"], 6)
        check = invoke("-w", str(ws), "compact", "--check", "--json", key).json()["result"]
        [report] = check["sessions"] if "sessions" in check else [check]
        assert json.dumps(report).count('"not_in_history": 0') == 1, report
        shown = invoke("-w", str(ws), "sessions", "show", key, "--history", "--json").json()["result"]
        assert shown["history"]["rows"] == 6 and shown["session_id"] == s["session_id"]


@needs_gen2_corpus
def test_rows_really_gone_are_still_found(qp_ws):
    """The rule does not blind the check: rows of the chat's id deleted -> needs_repair, and --all unpersists."""
    ws, made = qp_ws
    gone = made[1]
    conn = sqlite3.connect(ws / "history.db")
    conn.execute("DELETE FROM conversation_history WHERE session_id = ?", (gone["session_id"],))
    conn.commit()
    conn.close()
    key = f"console/{gone['path'].stem}"
    assert repair_statuses(ws, "--check", key)[key] == ("needs_repair", ["persisted_without_rows"])
    repair_statuses(ws, "--all")
    assert json.loads(gone["path"].read_text())["agent"]["scroll"]["persisted_ids"] == []


@needs_gen2_corpus
def test_issue_repro_random_state_session_id_stays_ok(tmp_path):
    ws = copy_corpus(tmp_path)
    path = ws / "sessions" / f"{ALICE}.json"
    doc = json.loads(path.read_text("utf-8"))
    doc["agent"]["state"]["session_id"] = uuid.uuid4().hex
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    back_date(path)
    before = path.read_bytes()
    assert repair_statuses(ws, "--check", ALICE)[ALICE] == ("ok", ["ok"])
    repair_statuses(ws, "--all")
    assert path.read_bytes() == before
    listed = {r["key"]: r for r in invoke("-w", str(ws), "sessions", "list", "--json").json()["result"]["sessions"]}
    assert listed[ALICE]["history_rows"] == 23 and listed[ALICE]["session_id"] == "console:alice"


@needs_gen2_corpus
def test_unregistered_file_is_keyed_by_its_scroll_index_not_its_state(tmp_path):
    """chats.json no longer names alice: the scroll index (stamped with the request's session id by QwenPaw's
    ScrollContextManager) still does; the random state.session_id names nothing."""
    ws = copy_corpus(tmp_path)
    chats = json.loads((ws / "chats.json").read_text())
    chats["chats"] = [c for c in chats["chats"] if c["session_id"] != "console:alice"]
    (ws / "chats.json").write_text(json.dumps(chats))
    path = ws / "sessions" / f"{ALICE}.json"
    doc = json.loads(path.read_text("utf-8"))
    doc["agent"]["state"]["session_id"] = uuid.uuid4().hex
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    back_date(path)
    assert repair_statuses(ws, "--check", ALICE)[ALICE] == ("ok", ["ok"])
    listed = {r["key"]: r for r in invoke("-w", str(ws), "sessions", "list", "--json").json()["result"]["sessions"]}
    assert (listed[ALICE]["session_id"], listed[ALICE]["identity"], listed[ALICE]["history_rows"]) == (
        "console:alice", "scroll.index.session_id", 23)


def test_a_file_name_guess_is_reported_never_acted_on(tmp_path):
    """No chats.json entry, no scroll index: the rows under the name's session id are a guess, so a persisted id
    without a row there is a note, and the file is left as it is."""
    from qwenmem.core.history.keys import rows_key
    from qwenmem.core.repair.gen2.history_link import unpersist_missing
    from qwenmem.core.sessions import SessionRef

    db = tmp_path / "history.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE conversation_history (seq INTEGER PRIMARY KEY, session_id TEXT, dedup_key TEXT)")
    conn.execute("INSERT INTO conversation_history (session_id, dedup_key) VALUES ('console:bo', 'm1')")
    conn.commit()
    conn.close()
    path = tmp_path / "bo_console--bo.json"
    ref = SessionRef(path, path.name, "console", "bo", "console--bo", "filename", [("bo", "console--bo")])
    doc = {"agent": {"state": {"session_id": uuid.uuid4().hex, "context": []},
                     "scroll": {"persisted_ids": ["m1", "m2"], "persisted_tcids": []}}}
    key = rows_key(ref, doc, {"console:bo"})
    assert (key.session_id, key.certain) == ("console:bo", False)
    actions = unpersist_missing(doc, db, ref)
    assert len(actions) == 1 and actions[0].startswith("note:") and "guessed" in actions[0]
    assert doc["agent"]["scroll"]["persisted_ids"] == ["m1", "m2"]
