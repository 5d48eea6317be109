"""Property tests over random byte mutations of real session files."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from qwenmem.core.repair import CHECK, DRY_RUN, REPAIR, diagnose, run_repair
from qwenmem.core.sessions import iter_session_refs
from qwenmem.core.workspace import discover_workspace
from repair_fixtures import TELEGRAM, TINY, WIKI, make_workspace, qwenpaw_strict_load, tree_state
from speed import examples

SOURCES = [TINY.read_bytes(), TELEGRAM.read_bytes(), WIKI.read_bytes()]

mutation = st.tuples(st.sampled_from(["flip", "insert", "delete", "truncate", "duplicate", "nul"]),
                     st.floats(0, 1), st.integers(1, 400), st.binary(min_size=1, max_size=8))


def mutate(data: bytes, ops) -> bytes:
    for kind, where, length, junk in ops:
        pos = int(where * len(data))
        if kind == "flip" and data:
            pos = min(pos, len(data) - 1)
            data = data[:pos] + bytes([data[pos] ^ junk[0]]) + data[pos + 1:]
        elif kind == "insert":
            data = data[:pos] + junk + data[pos:]
        elif kind == "delete":
            data = data[:pos] + data[pos + length:]
        elif kind == "truncate":
            data = data[:pos]
        elif kind == "duplicate":
            data = data + data[pos:pos + length * 50]
        elif kind == "nul":
            data = data[:pos] + b"\x00" * length + data[pos + length:]
    return data


damaged = st.builds(mutate, st.sampled_from(SOURCES), st.lists(mutation, min_size=1, max_size=4))


@given(damaged, st.booleans())
@settings(max_examples=300, deadline=None)
def test_diagnose_never_crashes_and_any_result_loads_as_a_session(data, fix_pairs):
    d = diagnose(data, fix_tool_pairs=fix_pairs)
    assert d.classes
    if d.new_bytes is not None:
        items = qwenpaw_strict_load(d.new_bytes)
        assert len(items) == d.messages_intact + d.messages_added
    elif d.classes == ["ok"]:
        qwenpaw_strict_load(data)


@given(damaged)
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_check_and_dry_run_never_write_and_repair_loses_nothing(data):
    with tempfile.TemporaryDirectory() as tmp:
        root = make_workspace(Path(tmp) / "ws", {"console/s.json": data, "console/healthy.json": SOURCES[0]})
        ws = discover_workspace(root)
        refs = list(iter_session_refs(ws))
        before = tree_state(root)
        for mode in (CHECK, DRY_RUN):
            run_repair(ws, refs, mode, fix_tool_pairs=True, from_backup=True)
            assert tree_state(root) == before
        result = run_repair(ws, refs, REPAIR, fix_tool_pairs=True)
        after = (root / "sessions/console/s.json").read_bytes()
        assert (root / "sessions/console/healthy.json").read_bytes() == SOURCES[0]
        report = next(f for f in result.files if f.key == "console/s")
        if after != data:
            assert report.status == "repaired"
            assert (root / report.quarantined).read_bytes() == data
            qwenpaw_strict_load(after)
        else:
            assert report.status in ("ok", "unrecoverable", "needs_flag", "repaired")
