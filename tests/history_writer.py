"""A stand-in for QwenPaw 2.x writing history.db (spec §3.2-3.4), run as a second process:

    python history_writer.py DB SECONDS MODE READY_FILE

Each write is its own `BEGIN IMMEDIATE` transaction on a WAL store with `busy_timeout=5000`, a row plus its FTS5
entry maintained by hand, as `HistoryStore.append` does. MODE `requests`: a connection per write, closed after it,
as an agent build opens and closes the store per request (the last close checkpoints into the main file and removes
`-wal`/`-shm`). MODE `hold`: one connection kept open, with a `PRAGMA wal_checkpoint(PASSIVE)` every few writes (so
main-file pages are rewritten while readers read). READY_FILE is created after the first commit; the row count
written is printed at the end. Imports nothing from qwenmem."""

import os
import sqlite3
import sys
import time
from pathlib import Path


def connect(db: str) -> sqlite3.Connection:
    conn = sqlite3.connect(db, timeout=5.0, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


def write(conn: sqlite3.Connection, n: int) -> None:
    text = f"writer turn {n} " + "berlin hotel umbrella " * 120  # a few KiB: rows spill over several pages
    conn.execute("BEGIN IMMEDIATE")
    cur = conn.execute("INSERT INTO conversation_history (session_id, agent_id, kind, role, name, content, created_at, "
                       "dedup_key) VALUES ('writer:1', 'default', 'context_msg', 'user', 'user', ?, "
                       "'2026-12-01T10:00:00.000001', ?)", (text, f"writer-{os.getpid()}-{n}"))
    conn.execute("INSERT INTO conversation_history_fts(rowid, content) VALUES (?, ?)", (cur.lastrowid, text))
    conn.execute("COMMIT")


def main(db: str, seconds: float, mode: str, ready: str) -> None:
    end = time.monotonic() + seconds
    n = 0
    held = connect(db) if mode == "hold" else None
    while n == 0 or time.monotonic() < end:
        conn = held or connect(db)
        write(conn, n)
        n += 1
        if held is not None and n % 5 == 0:
            held.execute("PRAGMA wal_checkpoint(PASSIVE)")
        if conn is not held:
            conn.close()
        if n == 1:
            Path(ready).touch()
        time.sleep(0.005)
    if held is not None:
        held.close()
    print(n)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4])
