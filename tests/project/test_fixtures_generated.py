"""The project's own fixtures: scripts/make_fixtures.py still writes exactly the checked-in tests/fixtures/, and
every fixture session is what its name says (independent of qwenmem's parser)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import FIXTURE_ROOT, REPO, fixture_session_files, invoke
from qwenmem.core.session_model import gen1
from qwenmem.core.sessions import parse_session_bytes
from repair_fixtures import OLDER_SHAPES, TELEGRAM, TINY, TRUNCATED_BACKUP, WIKI

HEALTHY = [TINY, TELEGRAM, WIKI, *OLDER_SHAPES]


def test_generator_reproduces_the_checked_in_fixtures():
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "make_fixtures.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_every_fixture_session_is_accounted_for():
    assert set(fixture_session_files()) == {*HEALTHY, TRUNCATED_BACKUP}


@pytest.mark.parametrize("path", HEALTHY, ids=lambda p: p.name[:30])
def test_healthy_fixture_parses_with_independent_count_and_round_trips(path):
    raw = path.read_bytes()
    session, _problems, corrupt = parse_session_bytes(raw)
    assert not corrupt and len(session.content) == len(json.loads(raw)["agent"]["memory"]["content"])
    assert gen1.encode(session.doc) == raw


def test_truncated_fixture_does_not_load_as_json():
    with pytest.raises(ValueError):
        json.loads(TRUNCATED_BACKUP.read_bytes())
    assert TRUNCATED_BACKUP.read_bytes().endswith(b'"timestamp": ')


@pytest.mark.parametrize("agent,expected", [("default", {"ok", "warnings"}), ("coder", {"ok", "corrupt"}),
                                            ("writer", {"ok"})])
def test_root_fixture_lists_every_agent(agent, expected):
    run = invoke("-w", str(FIXTURE_ROOT), "--agent", agent, "sessions", "list", "--json")
    assert run.code == 0, run.stderr
    rows = run.json()["result"]["sessions"]
    assert rows and {r["health"] for r in rows} == expected
