"""Every real session file in the corpus lists and shows; counts agree with an independent count of the raw JSON."""

import json
from pathlib import Path

import pytest

from helpers import CORPUS_REAL, corpus_params, invoke, needs_shared, real_session_files
from qwenmem.core.session_model import gen1
from qwenmem.core.sessions import parse_session_bytes

pytestmark = needs_shared
TRUNCATED = "main_main.json.backup_20260316_203609"
REAL = real_session_files()
REAL_JSON = [p for p in REAL if p.name.endswith(".json")]


def _id(p: Path) -> str:
    return p.parent.parent.name[:30] + "/" + p.name[:20]


def independent_count(raw: bytes) -> int:
    doc = json.loads(raw.decode("utf-8"))
    return len(doc["agent"]["memory"]["content"])


def session_workspace(path: Path) -> Path:
    return path.parent.parent


def test_corpus_is_present():
    assert len(REAL) >= 14, f"expected the real corpus under {CORPUS_REAL}"


@pytest.mark.parametrize("path", corpus_params(REAL_JSON, ids=_id))
def test_real_session_parses_with_independent_message_count(path):
    raw = path.read_bytes()
    session, problems, corrupt = parse_session_bytes(raw)
    assert not corrupt and session is not None
    assert len(session.content) == independent_count(raw)


@pytest.mark.parametrize("path", corpus_params(REAL_JSON, ids=_id))
def test_round_trip_is_byte_identical(path):
    raw = path.read_bytes()
    session, _, _ = parse_session_bytes(raw)
    assert gen1.encode(session.doc) == raw


def test_truncated_backup_is_corrupt_but_salvages_183_messages():
    path = next(p for p in REAL if p.name == TRUNCATED)
    session, problems, corrupt = parse_session_bytes(path.read_bytes())
    assert corrupt
    assert len(session.content) == 183
    assert all(isinstance(item, list) and len(item) == 2 for item in session.content)


@pytest.mark.parametrize("ws", corpus_params(sorted({session_workspace(p) for p in REAL}), ids=lambda p: p.parent.name[:40]))
def test_sessions_list_json_matches_raw_counts(ws):
    run = invoke("-w", str(ws), "sessions", "list", "--json")
    assert run.code == 0, run.stderr
    rows = {r["path"]: r for r in run.json()["result"]["sessions"]}
    for path in sorted((ws / "sessions").glob("*.json")):
        row = rows[f"sessions/{path.name}"]
        assert row["messages"] == independent_count(path.read_bytes())
        assert row["health"] in ("ok", "warnings")


@pytest.mark.parametrize("path", corpus_params(REAL_JSON, ids=_id))
def test_show_every_real_session(path):
    ws = session_workspace(path)
    run = invoke("-w", str(ws), "sessions", "show", f"sessions/{path.name}")
    assert run.code == 0, run.stderr
    assert "Traceback" not in run.stderr
    shown = invoke("-w", str(ws), "sessions", "show", f"sessions/{path.name}", "--json").json()["result"]
    assert shown["total_messages"] == independent_count(path.read_bytes())


def test_show_truncated_backup_warns_and_shows_salvage():
    path = next(p for p in REAL if p.name == TRUNCATED)
    run = invoke("-w", str(path.parent.parent), "sessions", "show", f"sessions/{path.name}", "--tail", "2")
    assert run.code == 0
    assert "damaged" in run.stderr and "183" in run.stderr


def test_telegram_session_reports_unanswered_tool_call():
    ws = CORPUS_REAL / "ssaputralo__OpenClaw2026_SupandiSaputra_NavyAgent__bc527cb"
    row = invoke("-w", str(ws), "sessions", "list", "--json").json()["result"]["sessions"][0]
    assert row["health"] == "warnings"
    assert any("has no tool_result" in p for p in row["problems"])
    assert row["user_id"] == "8301437789" and row["session_id"] == "telegram--8301437789"


def test_show_finds_a_session_by_its_user_id():
    ws = CORPUS_REAL / "ssaputralo__OpenClaw2026_SupandiSaputra_NavyAgent__bc527cb"
    by_user = invoke("-w", str(ws), "sessions", "show", "8301437789", "--json")
    assert by_user.code == 0
    assert by_user.json()["result"]["session_id"] == "telegram--8301437789"
    prefix = invoke("-w", str(ws), "sessions", "show", "830143778", "--json")  # a unique prefix names it too
    assert prefix.code == 0 and prefix.json()["result"]["session_id"] == "telegram--8301437789"
    missing = invoke("-w", str(ws), "sessions", "show", "930143778", "--json")
    assert missing.code != 0 and "no session matches" in missing.stderr
