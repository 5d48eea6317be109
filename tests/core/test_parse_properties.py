"""Property tests: parsing any bytes never raises, and `sessions list` reports every file whatever its content."""

import json

from hypothesis import HealthCheck, given, settings, strategies as st

from helpers import fixture_session_files, real_session_files
from qwenmem.core.sessions import parse_session_bytes

# the fixture sessions always; the team's corpus too when it is beside the repository
SMALL_REAL = [p.read_bytes() for p in fixture_session_files() + real_session_files() if p.stat().st_size < 30_000]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_any_bytes_parse_without_raising(data):
    session, problems, corrupt = parse_session_bytes(data)
    assert session is not None or corrupt
    if corrupt:
        assert problems


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SMALL_REAL), st.data())
def test_mutated_real_files_parse_without_raising(raw, data):
    pos = data.draw(st.integers(0, len(raw)))
    kind = data.draw(st.sampled_from(["truncate", "flip", "insert", "delete"]))
    if kind == "truncate":
        mutated = raw[:pos]
    elif kind == "flip":
        mutated = raw[:pos] + bytes([data.draw(st.integers(0, 255))]) + raw[pos + 1:]
    elif kind == "insert":
        mutated = raw[:pos] + data.draw(st.binary(min_size=1, max_size=20)) + raw[pos:]
    else:
        mutated = raw[:pos] + raw[pos + data.draw(st.integers(1, 50)):]
    session, problems, corrupt = parse_session_bytes(mutated)
    if session is not None:
        json.dumps(session.doc, ensure_ascii=False)  # whatever we salvaged is serialisable
        assert isinstance(session.content, list)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(SMALL_REAL), st.integers(min_value=1, max_value=10**9))
def test_truncation_never_yields_more_messages_than_the_original(raw, cut):
    original = len(json.loads(raw)["agent"]["memory"]["content"])
    session, _, _ = parse_session_bytes(raw[: cut % len(raw)])
    if session is not None:
        assert len(session.content) <= original
