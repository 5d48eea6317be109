"""history.db read-only: counts against SQL, seq gaps, escaped JSON, both timestamp formats, damage, locks."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from qwenpaw2_support import builder, copy_corpus, needs_gen2_corpus
from qwenmem.core.history import HistoryError, history_state, open_history, parse_timestamp, rows_to_messages


def sql_counts(path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT session_id, COUNT(seq) FROM conversation_history GROUP BY 1"))
    finally:
        conn.close()


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@needs_gen2_corpus
def test_corpus_counts_equal_sql_and_nothing_is_written(tmp_path):
    db = copy_corpus(tmp_path) / "history.db"
    before = digest(db)
    with open_history(db) as reader:
        assert reader.counts_by_session() == sql_counts(db)
        assert not reader.via_copy
        rows = reader.rows("console:alice")
        seqs = [r.seq for r in reader.rows("console:bob")]
    assert digest(db) == before
    assert seqs == [34, 35, 36, 37]  # the corpus' global seq jumps 23 -> 34 (ON CONFLICT DO NOTHING)
    assert [r.seq for r in rows] == list(range(1, 24))
    assert rows[-1].metadata == {"qwenpaw_tag": "scroll_memory"}


@needs_gen2_corpus
def test_corpus_both_timestamp_formats(tmp_path):
    db = copy_corpus(tmp_path) / "history.db"
    with open_history(db) as reader:
        alice, telegram = reader.rows("console:alice"), reader.rows("telegram:7")
    assert "T" in alice[0].created_at and " " in telegram[0].created_at
    assert parse_timestamp(alice[0].created_at).year == parse_timestamp(telegram[0].created_at).year == 2026
    assert telegram[2].tool_state == "running"  # a converted 1.x result (spec §2.6)


@needs_gen2_corpus
def test_corpus_rows_fold_into_messages(tmp_path):
    db = copy_corpus(tmp_path) / "history.db"
    with open_history(db) as reader:
        msgs = rows_to_messages(reader.rows("console:alice"))
    turn = next(m for m in msgs if m.tool_calls())
    assert (turn.seq, turn.seq_hi) == (4, 5) and [b.type for b in turn.blocks] == ["tool_call", "text", "tool_result"]
    assert msgs[-1].synthetic  # the placeholder row the startup sync imported (spec §8.9)


def test_ascii_escaped_json_columns_and_seq_gaps(tmp_path):
    db = tmp_path / "history.db"
    conn = builder.create_history_db(db)
    clock = builder.Clock()
    msgs = builder.conversation(3, clock, lang="zh")
    rows = builder.rows_for("s", msgs)
    builder.insert_rows(conn, rows)
    builder.insert_rows(conn, rows[:2])  # duplicates: swallowed by ux_dedup but they consume seq values
    builder.insert_rows(conn, builder.rows_for("s", builder.conversation(1, clock)))
    conn.close()
    raw_blocks = sqlite3.connect(db).execute("SELECT blocks FROM conversation_history WHERE seq=1").fetchone()[0]
    assert "\\u" in raw_blocks and "柏林" not in raw_blocks  # stored escaped, like QwenPaw's json.dumps
    with open_history(db) as reader:
        got = reader.rows("s")
    assert len(got) == len(rows) + 2 == reader_count(db)
    assert got[0].blocks[0]["text"].startswith("问题 0") and got[len(rows)].seq > got[len(rows) - 1].seq + 1
    msgs_back = rows_to_messages(got)
    assert "柏林" in msgs_back[0].text


def reader_count(db) -> int:
    return sum(sql_counts(db).values())


@pytest.mark.parametrize("content", [b"", b"garbage, not sqlite" * 100, b"SQLite format 3\x00" + b"\xff" * 5000])
def test_garbage_database_is_reported(tmp_path, content):
    db = tmp_path / "history.db"
    db.write_bytes(content)
    state = history_state(db)
    assert state.status in ("corrupt", "not_history") and state.detail
    if content:
        with pytest.raises(HistoryError) as exc:
            open_history(db)
        assert exc.value.kind in ("corrupt", "not_history")


def test_truncated_database_is_corrupt(tmp_path):
    db = tmp_path / "history.db"
    conn = builder.create_history_db(db)
    conn.execute("PRAGMA journal_mode=DELETE")
    clock = builder.Clock()
    for i in range(40):
        builder.insert_rows(conn, builder.rows_for(f"s{i}", builder.conversation(5, clock)))
    conn.close()
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    state = history_state(db)
    assert state.status == "corrupt", state


def test_corrupt_sibling_is_listed(tmp_path):
    db = tmp_path / "history.db"
    builder.create_history_db(db).close()
    (tmp_path / "history.db.corrupt-20261130T101500").write_bytes(b"old")
    (tmp_path / "history.db.corrupt-20261130T101500-wal").write_bytes(b"")
    state = history_state(db)
    assert state.status == "ok" and state.rows == 0
    assert [p.rsplit("/", 1)[-1] for p in state.quarantined] == ["history.db.corrupt-20261130T101500"]


def test_missing_database(tmp_path):
    state = history_state(tmp_path / "history.db")
    assert state.status == "missing" and not state.exists


HOLDER = textwrap.dedent("""
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("PRAGMA journal_mode=" + sys.argv[2])
    conn.execute("BEGIN " + sys.argv[3])
    sid = sys.argv[5] if len(sys.argv) > 5 else "s"
    conn.execute("INSERT INTO conversation_history (session_id, kind) VALUES (?, 'context_msg')", (sid,))
    print("holding", flush=True)
    time.sleep(float(sys.argv[4]))
    conn.execute("ROLLBACK")
""")


def _hold(db, mode, lock, seconds, session_id="s"):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), mode, lock, str(seconds), session_id],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "holding"
    return proc


def _db_with_rows(tmp_path, n=6):
    db = tmp_path / "history.db"
    conn = builder.create_history_db(db)
    builder.insert_rows(conn, builder.rows_for("s", builder.conversation(n // 2, builder.Clock(), tool_every=0)))
    conn.close()
    return db


def test_reads_committed_rows_while_a_writer_holds_a_transaction(tmp_path):
    db = _db_with_rows(tmp_path)
    proc = _hold(db, "WAL", "IMMEDIATE", 10)
    try:
        start = time.monotonic()
        state = history_state(db)
        assert state.status == "ok" and state.rows == 6  # the uncommitted insert is invisible, nothing blocks
        assert time.monotonic() - start < 2
    finally:
        proc.kill()
        proc.wait()


def test_an_exclusive_lock_does_not_hide_the_committed_rows(tmp_path):
    """A rollback-journal writer mid-transaction (its -journal beside the store): the reader reads the committed
    state from a private copy with that journal (it was "locked" while mode=ro waited on the lock) and adds no file."""
    db = _db_with_rows(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    proc = _hold(db, "DELETE", "EXCLUSIVE", 15)
    try:
        names = sorted(p.name for p in tmp_path.iterdir())
        state = history_state(db)
        assert (state.status, state.rows, state.via_copy) == ("ok", 6, "history.db-journal" in names)
        assert sorted(p.name for p in tmp_path.iterdir()) == names
    finally:
        proc.kill()
        proc.wait()


def test_workspace_history_state_for_doctor(tmp_path):
    from qwenmem.core.history.state import workspace_history_state
    from qwenmem.core.workspace import discover_workspace

    builder.agent_json(tmp_path, retention=7)
    ws = discover_workspace(tmp_path, env={}, home=tmp_path)
    assert workspace_history_state(ws, env={}).status == "missing"
    _db_with_rows(tmp_path)
    state = workspace_history_state(ws, env={})
    assert (state.status, state.rows, state.sessions, state.user_version) == ("ok", 6, 1, 1)
    assert state.size == (tmp_path / "history.db").stat().st_size


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from qwenmem.core.history.rows import HistoryRow  # noqa: E402

_text = st.none() | st.text(max_size=20)
_col = _text | st.sampled_from(['[{"type": "text", "text": "\\u67cf"}]', "[1, 2]", '{"qwenpaw_tag": "scroll_memory"}',
                                "{", '[{"type": "tool_call", "id": "c"}]'])
_row = st.tuples(st.integers(1, 10**6), st.just("s"), _text, st.sampled_from(["context_msg", "model_turn",
                                                                              "tool_result", "odd"]),
                 _text, _text, _text, _text, _col, _text, _text, _col, _col,
                 st.none() | st.sampled_from(["2026-12-01T09:22:18.322913", "2026-11-30 09:14:02.381",
                                              "2026-12-01T00:00:00+00:00", "garbage"]), _text)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(_row, max_size=8))
def test_any_rows_become_messages_without_raising(rows):
    decoded = [HistoryRow.from_tuple(r) for r in rows]
    msgs = rows_to_messages(decoded, {"x"}, {"y"})
    assert sum(1 + 0 for _ in msgs) <= len(rows)
    for m in msgs:
        m.to_json()
        parse_timestamp(m.created_at)
