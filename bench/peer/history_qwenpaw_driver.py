"""QwenPaw 2.2.2.post1's own HistoryStore, driven for bench/quality/history_salvage_bench.py (imports nothing from qwenmem).

Run with an interpreter that has qwenpaw==2.2.2.post1 (see `history_salvage_bench.py --make-venv`):

    PY history_qwenpaw_driver.py grow DB ROWS SEED   # append ROWS rows with HistoryStore.append / append_many
    PY history_qwenpaw_driver.py open DB             # open it as an agent build does (quick_check, quarantine)
    PY history_qwenpaw_driver.py grow-open DB ROWS SEED DEST  # grow, then copy DB and its -wal to DEST while the
                                                               # store is still open (what a rename or crash leaves)

`grow` replays the rows already in DB (the generated corpus's store) under new session ids, through QwenPaw's
write path (`append` for live write-through, `append_many` for the startup import; spec §3.4, §3.7), so pages,
overflow chains, indexes and the FTS table are laid out by QwenPaw's own code. `open` constructs
`HistoryStore(DB)` and closes it: on a corrupt store QwenPaw renames it (with -wal/-shm) to
`DB.corrupt-<UTC ts>` and creates a fresh one (`scroll/history.py L284-337, L580-605 @2.2.2.post1`). Prints JSON.
"""

from __future__ import annotations

import json
import random
import sqlite3
import sys


def grow(db: str, rows: int, seed: int, snapshot_to: str | None = None) -> dict:
    from qwenpaw.agents.context.scroll.history import HistoryStore
    from qwenpaw.agents.context.types import LogEntry

    src = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    src.row_factory = sqlite3.Row
    templates = [dict(r) for r in src.execute("SELECT * FROM conversation_history ORDER BY seq")]
    src.close()
    rng = random.Random(seed)
    store = HistoryStore(db)
    written = 0
    try:
        session = 0
        while written < rows:
            session += 1
            sid = f"bench:{seed}:{session}"
            batch: list[tuple[LogEntry, str | None]] = []
            for i in range(min(rng.randint(8, 40), rows - written)):
                t = rng.choice(templates)
                words = " ".join(rng.choice(("berlin", "hotel", "umbrella", "trip", "train", "budget", "museum"))
                                 for _ in range(rng.randint(1, 12)))
                entry = LogEntry(
                    kind=t["kind"], role=t["role"], name=t["name"],
                    content=f"{t['content'] or ''} {words} #{session}.{i}",
                    metadata=json.loads(t["metadata"]) if t["metadata"] else {},
                    tool_call_id=t["tool_call_id"] and f"{t['tool_call_id']}-{session}-{i}",
                    tool_input=json.loads(t["tool_input"]) if t["tool_input"] else None,
                    tool_state=t["tool_state"], headline=t["headline"],
                    blocks=json.loads(t["blocks"]) if t["blocks"] else None,
                    created_at=f"2026-12-01T{10 + session % 12:02d}:{i % 60:02d}:{rng.randint(0, 59):02d}.000",
                )
                batch.append((entry, f"msg-{session}-{i}"))
            if session % 2:  # the live writer: one transaction per row
                for entry, key in batch:
                    store.append(session_id=sid, entry=entry, agent_id="default", dedup_key=key)
            else:  # the startup import: one transaction per file
                store.append_many(session_id=sid, entries=batch, agent_id="default")
            written += len(batch)
        if snapshot_to:  # before close: QwenPaw's own close checkpoints; the rows since live only in the -wal
            import shutil

            shutil.copyfile(db, snapshot_to)
            shutil.copyfile(f"{db}-wal", f"{snapshot_to}-wal")
    finally:
        store.close()
    return {"written": written, "sessions": session}


def open_store(db: str) -> dict:
    from qwenpaw.agents.context.scroll.history import HistoryStore

    store = HistoryStore(db)
    quarantined = store.quarantined_to
    store.close()
    return {"quarantined_to": str(quarantined) if quarantined else None}


def main(argv: list[str]) -> int:
    if argv[:1] == ["grow"] and len(argv) == 4:
        out = grow(argv[1], int(argv[2]), int(argv[3]))
    elif argv[:1] == ["grow-open"] and len(argv) == 5:
        out = grow(argv[1], int(argv[2]), int(argv[3]), argv[4])
    elif argv[:1] == ["open"] and len(argv) == 2:
        out = open_store(argv[1])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
