"""Issue 10: session files whose data qwenmem used to lose or hide (not-a-session shapes, flat-layout filters,
backup siblings). Each test runs on self-written files and, where the issue names them, on real corpus files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import CORPUS_REAL, invoke
from repair_fixtures import make_workspace, qwenpaw_strict_load


def corpus_file(pattern: str) -> Path:
    found = sorted(CORPUS_REAL.glob(pattern))
    if not found:
        pytest.skip(f"needs the shared corpus ({CORPUS_REAL} is absent)")
    return found[0]


def _msg(i: int, role: str = "user") -> dict:
    return {"id": f"m{i}", "name": "user" if role == "user" else "Friday", "role": role,
            "content": [{"type": "text", "text": f"message {i} 内容"}], "metadata": {},
            "timestamp": f"2026-03-02 10:00:{i:02d}.000"}


def _synthetic_session() -> dict:
    items = [[_msg(i, "user" if i % 2 == 0 else "assistant"), ["compressed"] if i < 2 else []] for i in range(6)]
    return {"agent": {"memory": {"content": items, "_compressed_summary": "earlier: greetings"},
                      "toolkit": {"active_groups": []}, "name": "Friday", "_sys_prompt": "be brief"}}


def _shapes(session: dict) -> dict[str, object]:
    """The values QwenPaw 1.1.12 loads as `{}` although they hold the whole conversation (issue 10 item 3)."""
    agent = session["agent"]
    memory = agent["memory"]
    return {
        "pairs": memory["content"],
        "messages": [item[0] for item in memory["content"]],
        "memory": memory,
        "agent": agent,
        "agent_memory_only": {"memory": memory},
    }



def _real_session() -> dict:
    return json.loads(corpus_file("jownda__*/sessions/default_1775286565823.json").read_bytes())


@pytest.mark.parametrize("source", ["synthetic", "real"])
@pytest.mark.parametrize("shape", ["pairs", "messages", "memory", "agent", "agent_memory_only"])
def test_a_valid_json_value_that_is_not_a_session_is_rebuilt_and_its_original_quarantined(tmp_path, source, shape):
    session = _synthetic_session() if source == "synthetic" else _real_session()
    expected_ids = [item[0]["id"] if isinstance(item, list) else item["id"] for item in session["agent"]["memory"]["content"]]
    value = _shapes(json.loads(json.dumps(session)))[shape]
    original = json.dumps(value, ensure_ascii=False).encode()
    root = make_workspace(tmp_path / "ws", {"console/u_s.json": original})

    listed = invoke("-w", str(root), "sessions", "list", "--json")
    [row] = listed.json()["result"]["sessions"]
    assert row["health"] == "corrupt" and row["messages"] == len(expected_ids), row
    assert not any("nothing recoverable" in p for p in row["problems"])
    check = invoke("-w", str(root), "sessions", "repair", "--check", "--json")
    assert check.code == 1 and check.json()["result"]["files"][0]["status"] == "needs_repair"

    run = invoke("-w", str(root), "sessions", "repair", "--all", "--json")
    assert run.code == 0, run.stderr
    [report] = run.json()["result"]["files"]
    assert report["status"] == "repaired"
    items = qwenpaw_strict_load((root / "sessions/console/u_s.json").read_bytes())
    ids = [item[0]["id"] if isinstance(item, list) else item["id"] for item in items]
    assert ids == expected_ids
    assert (root / report["quarantined"]).read_bytes() == original
    rebuilt = json.loads((root / "sessions/console/u_s.json").read_bytes())["agent"]
    if shape in ("pairs", "messages"):
        assert rebuilt["memory"]["_compressed_summary"] == "" and rebuilt["toolkit"] == {"active_groups": []}
        assert rebuilt["_sys_prompt"] == ""
    else:  # what the file did hold is kept
        assert rebuilt["memory"]["_compressed_summary"] == session["agent"]["memory"]["_compressed_summary"]
    assert invoke("-w", str(root), "sessions", "repair", "--check").code == 0


def test_a_truncated_bare_list_keeps_its_complete_messages(tmp_path):
    items = _synthetic_session()["agent"]["memory"]["content"]
    data = json.dumps(items).encode()[:-40]
    root = make_workspace(tmp_path / "ws", {"console/u_s.json": data})
    run = invoke("-w", str(root), "sessions", "repair", "--all", "--json")
    [report] = run.json()["result"]["files"]
    assert report["status"] == "repaired" and report["messages_lost"] == 1
    kept = qwenpaw_strict_load((root / "sessions/console/u_s.json").read_bytes())
    assert [i[0]["id"] for i in kept] == [f"m{i}" for i in range(5)]


def test_a_json_value_without_any_message_stays_unrecoverable_and_untouched(tmp_path):
    root = make_workspace(tmp_path / "ws", {"console/u_s.json": b'[1, 2, {"a": [true]}]'})
    run = invoke("-w", str(root), "sessions", "repair", "--all", "--json")
    assert run.json()["result"]["files"][0]["status"] == "unrecoverable"
    assert (root / "sessions/console/u_s.json").read_bytes() == b'[1, 2, {"a": [true]}]'
