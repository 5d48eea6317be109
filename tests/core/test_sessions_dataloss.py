"""Issue 10: session files whose data qwenmem used to lose or hide (not-a-session shapes, flat-layout filters,
backup siblings). Each test runs on self-written files and, where the issue names them, on real corpus files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import CORPUS_REAL, invoke, require_shared
from repair_fixtures import make_workspace, qwenpaw_strict_load


def corpus_file(pattern: str) -> Path:
    require_shared()
    found = sorted(CORPUS_REAL.glob(pattern))
    assert found, f"{pattern} is not in the corpus at {CORPUS_REAL}"
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


# ---------------------------------------------------------------------------------------------- item 8: flat layout


def _flat_workspace(root: Path, telegram: bytes) -> Path:
    session = json.dumps(_synthetic_session()).encode()
    return make_workspace(root, {"8301437789_telegram--8301437789.json": telegram, "default_1773379549580.json": session,
                                 "42_discord--dm--42.json": session})


@pytest.mark.parametrize("source", ["synthetic", "real"])
def test_flat_legacy_files_carry_their_channel_in_the_session_id(tmp_path, source):
    telegram = (json.dumps(_synthetic_session()).encode() if source == "synthetic" else
                corpus_file("ssaputralo__*/sessions/8301437789_telegram--8301437789.json").read_bytes())
    root = _flat_workspace(tmp_path / "ws", telegram)
    run = invoke("-w", str(root), "sessions", "list", "--channel", "telegram", "--json")
    assert [(r["key"], r["channel"], r["user_id"]) for r in run.json()["result"]["sessions"]] == [
        ("8301437789_telegram--8301437789", "telegram", "8301437789")]
    rows = {r["key"]: r["channel"] for r in invoke("-w", str(root), "sessions", "list", "--json").json()["result"]["sessions"]}
    assert rows == {"8301437789_telegram--8301437789": "telegram", "42_discord--dm--42": "discord",
                    "default_1773379549580": None}  # a console session's name carries no channel


def test_a_user_filter_that_matches_nothing_says_so_and_names_the_users(tmp_path):
    root = _flat_workspace(tmp_path / "ws", json.dumps(_synthetic_session()).encode())
    run = invoke("-w", str(root), "sessions", "list", "--user", "nobody")
    assert run.code == 0 and run.stdout == ""
    assert "no session matches --user nobody" in run.stderr and "no session files" not in run.stderr
    assert "users: 42, 8301437789, default" in run.stderr
    as_json = invoke("-w", str(root), "sessions", "list", "--user", "nobody", "--json").json()
    assert as_json["result"]["count"] == 0 and "no session matches --user nobody" in as_json["warnings"][0]


def test_a_user_filter_matches_every_way_an_ambiguous_name_splits(tmp_path):
    root = make_workspace(tmp_path / "ws", {"ou_9756_6fb98df9.json": json.dumps(_synthetic_session()).encode()})
    for user in ("ou", "ou_9756"):
        rows = invoke("-w", str(root), "sessions", "list", "--user", user, "--json").json()["result"]["sessions"]
        assert [r["key"] for r in rows] == ["ou_9756_6fb98df9"], user


# ------------------------------------------------------------------------------- item 9: backups under their session


def _backup_bytes(source: str) -> bytes:
    if source == "real":
        return corpus_file("ziwei-control__*/sessions/main_main.json.backup_20260316_203609").read_bytes()
    return json.dumps(_synthetic_session()).encode()[:-200]  # like the real one: cut off by a crash


@pytest.mark.parametrize("source", ["synthetic", "real"])
def test_a_backup_sibling_is_listed_under_its_session_not_as_a_row(tmp_path, source):
    backup = _backup_bytes(source)
    root = make_workspace(tmp_path / "ws", {"main_main.json": json.dumps(_synthetic_session()).encode(),
                                            "main_main.json.backup_20260316_203609": backup,
                                            "console/default_1.json": json.dumps(_synthetic_session()).encode()})
    run = invoke("-w", str(root), "sessions", "list", "--json")
    rows = {r["key"]: r for r in run.json()["result"]["sessions"]}
    assert sorted(rows) == ["console/default_1", "main_main"]
    [entry] = rows["main_main"]["backups"]
    assert entry["path"] == "sessions/main_main.json.backup_20260316_203609" and entry["size"] == len(backup)
    assert entry["health"] == "corrupt" and entry["messages"] > 0
    assert rows["console/default_1"]["backups"] == []
    assert not any("-1" in w for w in run.json()["warnings"])
    assert any("damaged backup" in w for w in run.json()["warnings"])
    table = invoke("-w", str(root), "sessions", "list", "--sort", "name")
    lines = table.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("main_main "))
    assert "backup_20260316_203609" in lines[at + 1] and "corrupt" in lines[at + 1]


def test_a_backup_whose_session_is_gone_keeps_its_own_row(tmp_path):
    root = make_workspace(tmp_path / "ws", {"main_main.json.backup_20260316_203609": _backup_bytes("synthetic")})
    [row] = invoke("-w", str(root), "sessions", "list", "--json").json()["result"]["sessions"]
    assert row["key"] == "main_main.json.backup_20260316_203609"
    assert "a backup copy of main_main.json, which does not exist" in row["problems"]


@pytest.mark.parametrize("source", ["synthetic", "real"])
def test_backup_siblings_are_never_index_sources(tmp_path, source):
    from qwenmem.core.index.sources import discover
    from qwenmem.core.sessions import is_session_backup
    from qwenmem.core.workspace import discover_workspace

    root = make_workspace(tmp_path / "ws", {"main_main.json": json.dumps(_synthetic_session()).encode(),
                                            "main_main.json.backup_20260316_203609": _backup_bytes(source),
                                            "console/u_s.json.backup_20260101_000000": _backup_bytes(source)})
    found = [f.rel for f in discover(discover_workspace(root), ["sessions"], recursive=False)]
    assert found == ["sessions/main_main.json"]
    assert is_session_backup("main_main.json.backup_20260316_203609") and not is_session_backup("main_main.json")
