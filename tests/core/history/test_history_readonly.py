"""Read-only commands leave no file beside history.db (-wal, -shm, -journal) and stay right while QwenPaw writes the
store (issue 23 item 4; qwenmem.core.history.store's opening modes).

SQLite's `mode=ro` alone creates `-shm` and `-wal` on a WAL store that has none and cannot remove them again; the
directory is listed before and after every read-only command, on a store without sidecars, with the stale ones a
crash leaves, with `-shm` alone, and beside a live writer holding them; then with a writer committing (and
checkpointing into the main file) while the commands read."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import invoke
from qwenpaw2_support import copy_corpus, needs_gen2_corpus

WRITER = Path(__file__).resolve().parents[2] / "history_writer.py"
ALICE = "console/alice_console--alice"
READ_ONLY = [
    ("info",), ("info", "--json"), ("doctor",), ("doctor", "--json"), ("sessions", "list"),
    ("sessions", "list", "--json"), ("sessions", "show", ALICE, "--history"), ("sessions", "show", ALICE, "--json"),
    ("compact", "--check", ALICE), ("compact", "--check", "--json"), ("history", "check"),
    ("history", "check", "--deep", "--json"), ("sessions", "repair", "--check"), ("search", "berlin"),
    ("history", "salvage", "--dry-run"),
]
SIDECARS = ("history.db-wal", "history.db-shm", "history.db-journal")


def listing(ws: Path) -> dict[str, int]:
    """Names beside history.db with their sizes (a sidecar that appears or vanishes shows; so does a temp file)."""
    return {p.name: p.stat().st_size for p in ws.iterdir() if p.name.startswith("history.db")}


def run_read_only(ws: Path, args: tuple[str, ...]):
    run = invoke("-w", str(ws), *args)
    assert "Traceback" not in run.stderr, (args, run.stderr[-2000:])
    assert run.code in (0, 1), (args, run.code, run.stderr[-800:])  # ok or "problems found", never a failure
    return run


@pytest.fixture
def ws(tmp_path):
    ws = copy_corpus(tmp_path)
    for name in SIDECARS:  # the shared corpus carries a stale pair; each test sets up its own state
        (ws / name).unlink(missing_ok=True)
    with open(ws / "history.db", "rb") as fh:
        assert fh.read(20)[18:20] == b"\x02\x02"  # a WAL store, as QwenPaw leaves it
    return ws


def writer(db: Path, seconds: float, mode: str, tmp: Path) -> subprocess.Popen:
    ready = tmp / f"ready-{mode}-{time.monotonic_ns()}"
    proc = subprocess.Popen([sys.executable, str(WRITER), str(db), str(seconds), mode, str(ready)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the writer did not start"
        time.sleep(0.05)
    return proc


@needs_gen2_corpus
@pytest.mark.parametrize("sidecars", ["none", "stale pair", "shm only"])
def test_read_only_commands_leave_the_directory_as_they_found_it(ws, sidecars):
    if sidecars == "stale pair":  # what a reader that was killed (or a read-only copy) leaves: both, empty WAL
        conn = sqlite3.connect(f"file:{ws / 'history.db'}?mode=ro", uri=True)
        conn.execute("SELECT count(*) FROM conversation_history").fetchone()
        conn.close()
        assert {"history.db-wal", "history.db-shm"} <= set(listing(ws))
    elif sidecars == "shm only":
        (ws / "history.db-shm").write_bytes(b"\0" * 32768)
    before = listing(ws)
    main_bytes = (ws / "history.db").read_bytes()
    for args in READ_ONLY:
        run_read_only(ws, args)
        assert listing(ws) == before, args
    assert (ws / "history.db").read_bytes() == main_bytes


@needs_gen2_corpus
def test_beside_a_live_writer_the_existing_sidecars_are_used_and_none_added(ws, tmp_path):
    """A writer holds the store open (its -wal and -shm exist) and idles while each command runs."""
    proc = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        f"c = sqlite3.connect({str(ws / 'history.db')!r}, isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE'); c.execute(\"INSERT INTO conversation_history (session_id, kind, content, "
        "dedup_key) VALUES ('writer:1', 'context_msg', 'held open', 'held-1')\"); c.execute('COMMIT')\n"
        "print('ready', flush=True); sys.stdin.read(); c.close()\n")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        before = listing(ws)
        assert {"history.db-wal", "history.db-shm"} <= set(before)
        for args in READ_ONLY:
            run = run_read_only(ws, args)
            assert listing(ws) == before, args
        listed = invoke("-w", str(ws), "sessions", "list", "--json").json()["result"]
        assert {"session_id": "writer:1", "rows": 1} in listed["history_only"]  # the WAL's commit is read
    finally:
        proc.communicate("", timeout=60)
    assert set(listing(ws)) == {"history.db"}  # the writer's close removed its sidecars: nothing of ours held them
    del run


@needs_gen2_corpus
@pytest.mark.parametrize("mode", ["requests", "hold"])
def test_reads_stay_right_while_a_writer_commits_and_checkpoints(ws, tmp_path, mode):
    db = ws / "history.db"
    base = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    rows_before = base.execute("SELECT count(*) FROM conversation_history").fetchone()[0]
    base.close()
    proc = writer(db, 6.0, mode, tmp_path)
    seen = []
    try:
        deadline = time.monotonic() + 6.0
        while time.monotonic() < deadline:
            for args in (("sessions", "list", "--json"), ("history", "check", "--json"), ("info", "--json")):
                run = run_read_only(ws, args)
                doc = run.json()["result"]
                state = doc.get("history") or doc.get("state") or doc.get("qwenpaw2", {}).get("history") or {}
                assert state.get("status", "ok") in ("ok", "locked"), (args, state)
                if args[0] == "sessions":
                    rows = state["rows"] if state.get("status") == "ok" else None
                    if rows is not None:
                        seen.append(rows)
                if args[0] == "history":
                    assert doc["integrity"] in ("ok", None), doc["integrity"]
    finally:
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    written = int(out.strip())
    assert seen and seen == sorted(seen), seen  # every read a committed state, never a later one undone
    assert rows_before <= seen[0] and seen[-1] <= rows_before + written
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM conversation_history").fetchone()[0] == rows_before + written
    finally:
        conn.close()
    assert set(listing(ws)) <= {"history.db", *SIDECARS[:2]}
    if mode == "requests":  # the writer's last close removed what it made; nothing of ours is left
        assert set(listing(ws)) == {"history.db"}


def test_the_opening_mode_follows_the_sidecars(tmp_path):
    from qwenmem.core.history.store import COPY, IMMUTABLE, READ_ONLY, open_history, opening_mode

    db = tmp_path / "history.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE conversation_history (seq INTEGER PRIMARY KEY, session_id TEXT)")
    conn.execute("INSERT INTO conversation_history (session_id) VALUES ('a')")
    conn.commit()
    conn.close()
    assert sorted(os.listdir(tmp_path)) == ["history.db"]
    with open_history(db) as reader:
        assert (reader.mode, reader.counts_by_session()) == (IMMUTABLE, {"a": 1})
        writer = sqlite3.connect(db)  # commits, and its close checkpoints into the main file under the reader
        writer.execute("INSERT INTO conversation_history (session_id) VALUES ('a')")
        writer.commit()
        writer.close()
        assert not reader.unchanged()
        assert reader.counts_by_session() == {"a": 2}  # the change check threw the stale opening away
        assert reader.unchanged()
    assert sorted(os.listdir(tmp_path)) == ["history.db"]
    (tmp_path / "history.db-wal").write_bytes(b"")
    assert opening_mode(db) == COPY  # a -wal without its -shm: only a private copy reads it without adding one
    with open_history(db) as reader:
        assert reader.via_copy and reader.counts_by_session() == {"a": 2}
    (tmp_path / "history.db-shm").write_bytes(b"")
    assert opening_mode(db) == READ_ONLY
    (tmp_path / "history.db-journal").write_bytes(b"")
    assert opening_mode(db) == COPY  # a rollback journal may be hot: never read the main file without it


def test_a_wal_removed_while_it_is_copied_is_taken_again(tmp_path, monkeypatch):
    """A writer that closes as qwenmem copies the store removes its -wal between our look and our copy: the copy is
    taken again (it was `unreadable`, seen once under load in tests above)."""
    import shutil

    from qwenmem.core.history import store

    db = tmp_path / "history.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE conversation_history (seq INTEGER PRIMARY KEY, session_id TEXT)")
    conn.execute("INSERT INTO conversation_history (session_id) VALUES ('a')")
    conn.commit()
    wal = Path(f"{db}-wal")
    assert wal.is_file()
    real_copy = shutil.copyfile
    removed = []

    def copy_while_the_writer_closes(src, dst, *args, **kwargs):
        if Path(src) == wal and not removed:
            conn.close()  # the last close checkpoints into history.db and removes the -wal
            removed.append(True)
            assert not wal.exists()
        return real_copy(src, dst, *args, **kwargs)

    monkeypatch.setattr(store.shutil, "copyfile", copy_while_the_writer_closes)
    reader = store._copy_and_open(db)
    try:
        assert removed and reader.counts_by_session() == {"a": 1}
    finally:
        reader.close()


def test_an_immutable_reading_a_writer_overtook_is_read_again_from_a_copy(tmp_path):
    """A writer that opens and closes per request leaves no sidecar between requests, so a fresh choice would open
    immutable again and again, each overtaken, until the read gave up as `locked` (seen under load): the reading is
    taken again from a copy, a state of the store that cannot change under it."""
    from qwenmem.core.history.store import COPY, IMMUTABLE, open_history

    db = tmp_path / "history.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE conversation_history (seq INTEGER PRIMARY KEY, session_id TEXT)")
    conn.execute("INSERT INTO conversation_history (session_id) VALUES ('a')")
    conn.commit()
    reader = open_history(db)
    try:
        assert reader.mode == IMMUTABLE
        conn.execute("INSERT INTO conversation_history (session_id) VALUES ('a')")  # a request, then its close
        conn.commit()
        conn.close()
        assert reader.counts_by_session() == {"a": 2}
        assert reader.mode == COPY
    finally:
        reader.close()
