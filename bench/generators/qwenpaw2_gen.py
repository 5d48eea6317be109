"""Generate a QwenPaw 2.x bench workspace: N scroll sessions and a history.db of R rows (one session holds BIG rows).

    python bench/generators/qwenpaw2_gen.py /tmp/qwenpaw2_bench [--sessions 1000] [--rows 1000000] [--big 20000]

Session files and rows follow tests/fixtures/qwenpaw2/builder.py (spec qwenpaw2-workspace.md §2-3); the bulk rows
are stamped from templates of the same shape so a million of them take a minute, not ten. Data goes to the given
directory (not the repository).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests" / "fixtures" / "qwenpaw2"))
import builder  # noqa: E402

LIVE_TURNS = 10  # messages in each file's live tail ≈ 2 × LIVE_TURNS (+ the placeholder)


def _bulk_rows(session_id: str, count: int, start_ts: int):
    """`count` rows of one session: user context_msg / model_turn / tool_result cycles, ASCII-escaped JSON."""
    for i in range(count):
        ts = f"2026-11-{1 + (start_ts + i) // 86400 % 28:02d}T{(start_ts + i) // 3600 % 24:02d}:" \
             f"{(start_ts + i) // 60 % 60:02d}:{(start_ts + i) % 60:02d}.000001"
        key = f"{session_id}-{i}"
        kind = i % 3
        if kind == 0:
            text = f"Question {i}: what about the Berlin museum on day {i % 30}? 柏林"
            blocks = json.dumps([{"type": "text", "text": text, "id": key, "created_at": ts, "finished_at": ts}])
            yield (session_id, "default", "context_msg", "user", None, text, None, None, None, None, blocks,
                   '{"qwenpaw_tag": "external_user_query"}', ts, key)
        elif kind == 1:
            text = f"Looked it up. Day {i % 30}: the museum opens at 10. ⟦ answered {i} ⟧"
            call = f"call_{i}"
            blocks = json.dumps([{"type": "tool_call", "id": call, "name": "lookup_notes",
                                  "input": json.dumps({"topic": f"day {i}"}), "state": "finished"},
                                 {"type": "text", "text": text, "id": key, "created_at": ts, "finished_at": ts}])
            yield (session_id, "default", "model_turn", "assistant", "lookup_notes", text, call,
                   json.dumps({"topic": f"day {i}"}), None, f"answered {i}", blocks, None, ts, key)
        else:
            call = f"call_{i - 1}"
            out = f"notes for day {i % 30}: museum 10-18, hotel near Alexanderplatz"
            blocks = json.dumps([{"type": "tool_result", "id": call, "name": "lookup_notes",
                                  "output": [{"type": "text", "text": out}], "state": "success", "metadata": {}}])
            yield (session_id, "default", "tool_result", "assistant", "lookup_notes", out, call, None, "success", None,
                   blocks, None, ts, call)


def generate(dest: Path, sessions: int, rows: int, big: int) -> dict:
    ws = dest / "workspace"
    (ws / "sessions" / "console").mkdir(parents=True, exist_ok=True)
    builder.agent_json(ws, strategy="scroll", retention=30)
    db = ws / "history.db"
    if db.exists():
        db.unlink()
    conn = builder.create_history_db(db)
    conn.execute("PRAGMA synchronous=OFF")
    clock = builder.Clock()
    chats = []
    tail_rows = len(builder.rows_for("x", builder.conversation(LIVE_TURNS, builder.Clock())))
    bulk_each = (rows - big) // max(1, sessions - 1) - tail_rows
    written = 0
    for n in range(sessions):
        sid, uid = f"console:user{n:04d}", f"user{n:04d}"
        count = big - tail_rows if n == 0 else bulk_each
        if n == sessions - 1:
            count = rows - written - tail_rows  # land exactly on `rows`
        conn.execute("BEGIN")
        conn.executemany(builder.INSERT, _bulk_rows(sid, count, n * 1000))
        conn.execute("COMMIT")
        info = builder.scroll_session(ws, conn, sid, uid, "console", turns=LIVE_TURNS, keep_last=2 * LIVE_TURNS,
                                      clock=clock)
        written += count + info["rows"]
        chats.append(builder.chat(sid, uid, "console"))
    conn.close()
    builder.write_chats(ws, chats)
    return {"workspace": str(ws), "sessions": sessions, "rows": written, "big_session": "console:user0000"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dest", type=Path)
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--big", type=int, default=20_000)
    a = ap.parse_args()
    t = time.perf_counter()
    facts = generate(a.dest, a.sessions, a.rows, a.big)
    print(json.dumps(facts), f"({time.perf_counter() - t:.0f} s)")


if __name__ == "__main__":
    main()
