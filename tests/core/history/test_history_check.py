"""`qwenmem history check|salvage|rebuild-fts` on real SQLite stores built with QwenPaw's DDL (and the corpus)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import REPO, run_cli
from qwenpaw2_support import builder, copy_corpus, needs_gen2_corpus

RECALL = ("recall_history_python", "recall_history")


def sync_fts(db: Path) -> None:
    """Index every row but the recall tools' own, as QwenPaw's writer does by hand (spec §3.2)."""
    conn = sqlite3.connect(str(db), isolation_level=None)
    conn.execute("INSERT INTO conversation_history_fts(conversation_history_fts) VALUES('delete-all')")
    conn.execute("INSERT INTO conversation_history_fts(rowid, content) SELECT seq, content FROM conversation_history "
                 "WHERE name IS NULL OR name NOT IN (?, ?)", RECALL)
    conn.close()


def make_ws(tmp_path: Path, sessions: int = 2, turns: int = 6) -> tuple[Path, list[dict]]:
    ws = tmp_path / "ws"
    (ws / "sessions").mkdir(parents=True)
    builder.agent_json(ws, "scroll", retention=30)
    conn = builder.create_history_db(ws / "history.db")
    clock = builder.Clock()
    facts, chats = [], []
    for i in range(sessions):
        sid = f"console:user{i}"
        facts.append(builder.scroll_session(ws, conn, sid, f"user{i}", "console", turns, keep_last=3, clock=clock))
        chats.append(builder.chat(sid, f"user{i}", "console"))
    conn.close()
    builder.write_chats(ws, chats)
    sync_fts(ws / "history.db")
    return ws, facts


def sql(db: Path, query: str, args: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(query, args).fetchall()
    finally:
        conn.close()


def write_sql(db: Path, *statements: str) -> None:
    conn = sqlite3.connect(str(db), isolation_level=None)
    for s in statements:
        conn.execute(s)
    conn.close()


def codes(doc: dict) -> dict[str, str]:
    return {f["code"]: f["severity"] for f in doc["result"]["findings"]}


def check(ws: Path, *extra: str):
    return run_cli("-w", str(ws), "history", "check", "--json", *extra)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- check -------------------------------------------------------------------------------------------------------

def test_healthy_store_needs_nothing_and_is_not_written(tmp_path):
    ws, _ = make_ws(tmp_path)
    before = sha(ws / "history.db")
    run = check(ws, "--deep")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert doc["status"] == "ok" and codes(doc) == {}
    assert set(doc["result"]) == {"path", "state", "integrity", "fts", "deep", "findings"}
    assert (doc["result"]["integrity"], doc["result"]["fts"]) == ("ok", "ok")
    total = sql(ws / "history.db", "SELECT count(*) FROM conversation_history")[0][0]
    assert doc["result"]["state"]["rows"] == total
    assert sha(ws / "history.db") == before


def test_fts_disagreement_is_found_and_rebuilt(tmp_path):
    ws, _ = make_ws(tmp_path)
    db = ws / "history.db"
    seqs = [r[0] for r in sql(db, "SELECT seq FROM conversation_history ORDER BY seq")]
    victim = seqs[3]
    content = sql(db, "SELECT content FROM conversation_history WHERE seq = ?", (victim,))[0][0]
    conn = sqlite3.connect(str(db), isolation_level=None)  # QwenPaw's hand-kept sync missed one delete and one add
    conn.execute("INSERT INTO conversation_history_fts(conversation_history_fts, rowid, content) VALUES('delete', ?, ?)",
                 (victim, content))
    conn.execute("INSERT INTO conversation_history_fts(rowid, content) VALUES (99999, 'ghost row')")
    conn.close()
    doc = check(ws).json()
    assert codes(doc) == {"fts_missing": "problem", "fts_stale": "problem"}
    assert doc["status"] == "problems" and doc["result"]["fts"] == "disagrees"
    before = sha(db)
    dry = run_cli("-w", str(ws), "history", "rebuild-fts", "--dry-run", "--json")
    assert dry.code == 1 and dry.json()["result"]["needed"] is True
    assert sha(db) == before
    run = run_cli("-w", str(ws), "history", "rebuild-fts", "--json")
    assert run.code == 0, run.stderr
    result = run.json()["result"]
    assert result["documents_after"] == len(seqs)
    assert (ws / result["quarantine"] / "history.db.before-rebuild-fts").is_file()
    assert check(ws, "--deep").code == 0
    assert sql(db, "SELECT rowid FROM conversation_history_fts WHERE conversation_history_fts MATCH ?",
               (content.split()[0],))


def test_bad_json_columns_are_named(tmp_path):
    ws, _ = make_ws(tmp_path)
    db = ws / "history.db"
    seq = sql(db, "SELECT seq FROM conversation_history WHERE blocks IS NOT NULL LIMIT 1")[0][0]
    write_sql(db, f"UPDATE conversation_history SET blocks = '[{{\"type\": \"text\", \"te' WHERE seq = {seq}")
    doc = check(ws).json()
    [finding] = [f for f in doc["result"]["findings"] if f["code"] == "bad_json"]
    assert finding["count"] == 1 and finding["examples"] == [f"seq {seq} blocks"]


def test_purged_rows_leave_dangling_eviction_blocks_and_persisted_messages(tmp_path):
    ws, facts = make_ws(tmp_path, sessions=1, turns=6)
    db = ws / "history.db"
    doc = json.loads(facts[0]["path"].read_text())
    spans = doc["agent"]["scroll"]["index"]["tiers"][0]
    lo, hi = spans[0]["seq_lo"], spans[0]["seq_hi"]
    live_id, live_span = next(iter(doc["agent"]["scroll"]["seq_by_id"].items()))
    write_sql(db, f"DELETE FROM conversation_history WHERE seq BETWEEN {lo} AND {hi}",
              f"DELETE FROM conversation_history WHERE seq BETWEEN {live_span[0]} AND {live_span[1]}")
    sync_fts(db)
    found = check(ws).json()
    assert codes(found) == {"dangling_eviction": "problem", "dangling_persisted": "problem"}
    examples = {f["code"]: f["examples"] for f in found["result"]["findings"]}
    assert examples["dangling_eviction"] == [f"console/{facts[0]['path'].name}: seq {lo}-{hi}"]
    assert live_id in examples["dangling_persisted"][0]


def test_old_rows_and_imported_placeholders_are_notices(tmp_path):
    ws, _ = make_ws(tmp_path)
    db = ws / "history.db"
    write_sql(db, "UPDATE conversation_history SET created_at = '2026-01-02 03:04:05.000' WHERE seq <= 2",
              "INSERT INTO conversation_history (session_id, kind, role, content, metadata, created_at, dedup_key) "
              "VALUES ('console:user0', 'context_msg', 'user', 'placeholder', '{\"qwenpaw_tag\": \"scroll_memory\"}', "
              "'2026-11-30T10:00:00', 'ph1')")
    sync_fts(db)
    run = check(ws)
    assert run.code == 0  # notices alone do not need attention
    found = {f["code"]: f for f in run.json()["result"]["findings"]}
    assert found["retention"]["count"] == 2 and found["placeholder_rows"]["count"] == 1
    assert set(found) == {"retention", "placeholder_rows"}


def test_corrupt_and_missing_stores(tmp_path):
    ws, _ = make_ws(tmp_path)
    (ws / "history.db").write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    for side in ("history.db-wal", "history.db-shm"):
        (ws / side).unlink(missing_ok=True)
    run = check(ws)
    assert run.code == 1 and "Traceback" not in run.stderr
    assert "unreadable" in codes(run.json())
    (ws / "history.db").unlink()
    run = check(ws)
    assert run.code == 0 and run.json()["result"]["state"]["status"] == "missing"


@needs_gen2_corpus
def test_generated_corpus_store(tmp_path):
    ws = copy_corpus(tmp_path)
    run = run_cli("-w", str(ws), "history", "check", "--deep", "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert codes(doc) == {"placeholder_rows": "notice"}  # seq 23: the import does not skip the placeholder (§8.9)
    assert doc["result"]["state"]["rows"] == sql(ws / "history.db", "SELECT count(*) FROM conversation_history")[0][0]


# --- salvage -----------------------------------------------------------------------------------------------------

def _all_rows(db: Path) -> set[tuple]:
    return set(sql(db, "SELECT * FROM conversation_history"))


def _set_aside(ws: Path) -> tuple[Path, set[tuple]]:
    """What QwenPaw does with a corrupt store (spec §3.6): rename it aside, start an empty one."""
    db = ws / "history.db"
    rows = _all_rows(db)
    aside = ws / "history.db.corrupt-20261130T101500"
    conn = sqlite3.connect(str(db))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    os.replace(db, aside)
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    builder.create_history_db(db).close()
    return aside, rows


def test_salvage_merges_a_set_aside_store_back_and_is_idempotent(tmp_path):
    ws, _ = make_ws(tmp_path)
    aside, rows = _set_aside(ws)
    aside_bytes = aside.read_bytes()
    assert check(ws).json()["result"]["findings"][0]["code"] == "quarantined"
    dry = run_cli("-w", str(ws), "history", "salvage", "--dry-run", "--json")
    assert dry.code == 0 and dry.json()["result"]["inserted"] == len(rows)
    assert _all_rows(ws / "history.db") == set()
    run = run_cli("-w", str(ws), "history", "salvage", "--json")
    assert run.code == 0, run.stderr
    result = run.json()["result"]
    assert (result["action"], result["inserted"], result["kept_seq"]) == ("merged", len(rows), len(rows))
    assert _all_rows(ws / "history.db") == rows  # every row back, under its own seq
    assert (ws / result["quarantine"] / aside.name).read_bytes() == aside_bytes
    assert (ws / result["quarantine"] / "history.db.before-salvage").is_file()
    assert aside.read_bytes() == aside_bytes  # the set-aside copy is left where QwenPaw put it
    deep = check(ws, "--deep").json()
    assert {"fts_missing", "fts_stale", "fts_content"}.isdisjoint(codes(deep))  # FTS kept in sync by hand
    again = run_cli("-w", str(ws), "history", "salvage", "--json").json()["result"]
    assert (again["inserted"], again["already_present"]) == (0, len(rows))


def row_pages(db: Path) -> dict[int, tuple[set[int], set[int]]]:
    """For each seq: (pages holding its cell and overflow chain, interior pages on its path from the root), from
    SQLite's dbstat table of the intact store. Leaf cells are in seq order along the b-tree's in-order paths."""
    conn = sqlite3.connect(str(db))
    try:
        pages = conn.execute("SELECT path, pageno, pagetype, ncell FROM dbstat WHERE name = 'conversation_history' "
                             "ORDER BY path").fetchall()
        seqs = [r[0] for r in conn.execute("SELECT seq FROM conversation_history ORDER BY seq")]
    finally:
        conn.close()
    by_path = {path: pageno for path, pageno, _, _ in pages}
    out: dict[int, tuple[set[int], set[int]]] = {}
    it = iter(seqs)
    for path, pageno, kind, ncell in pages:
        if kind != "leaf":
            continue
        ancestors = {by_path[path[:i + 1]] for i, ch in enumerate(path) if ch == "/" and path[:i + 1] != path}
        for cell in range(ncell):
            overflow = {n for p, n, k, _ in pages if k == "overflow" and p.startswith(f"{path}{cell:03x}+")}
            out[next(it)] = ({pageno} | overflow, ancestors)
    return out


@pytest.mark.parametrize("damage", ["truncated", "overwritten_pages"])
def test_salvage_rebuilds_a_corrupt_live_store(tmp_path, damage):
    ws, _ = make_ws(tmp_path, sessions=6, turns=30)
    db = ws / "history.db"
    rows = _all_rows(db)
    conn = sqlite3.connect(str(db))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    layout = row_pages(db)
    data = bytearray(db.read_bytes())
    page = 4096
    total_pages = len(data) // page
    if damage == "truncated":
        lost = set(range(total_pages // 2 + 1, total_pages + 1))
        data = data[: (total_pages // 2) * page]
    else:
        leaves = [n for n, k in sql(db, "SELECT pageno, pagetype FROM dbstat WHERE name = 'conversation_history' "
                                        "AND pagetype = 'leaf' ORDER BY pageno")]
        lost = {leaves[1], leaves[len(leaves) // 2]}
        for p in lost:
            data[(p - 1) * page:p * page] = os.urandom(page)
    db.write_bytes(bytes(data))
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    by_seq = {r[0]: r for r in rows}
    # rows a page-level scan could read (their own pages intact), and those the b-tree still reaches
    readable = {seq for seq, (own, _) in layout.items() if not own & lost}
    reachable = {seq for seq, (own, path) in layout.items() if not (own | path) & lost}
    original = db.read_bytes()
    run = run_cli("-w", str(ws), "history", "salvage", "--json")
    assert run.code == 1, run.stderr  # rows known to exist are gone with the pages: a partial salvage
    result = run.json()["result"]
    assert result["action"] == "rebuilt" and result["complete"] is False
    got = _all_rows(db)
    assert got <= rows  # nothing invented, nothing half-read
    assert reachable and {by_seq[s] for s in readable} <= got, (len(got), len(reachable), len(readable), len(rows))
    source = result["sources"][0]
    assert source["method"] == "page reader" and source["scan_only"] == 0  # SQLite's scan found nothing more
    lost_seqs = set(by_seq) - {r[0] for r in got}
    named = set(source["cut_seqs"]) | set(source["missing_seqs"])
    assert named <= lost_seqs and (named or source["lost_pages"])  # each one named is really lost
    if damage == "overwritten_pages":  # the indexes are intact: every lost row is named by seq
        assert named == lost_seqs
    assert sql(db, "PRAGMA integrity_check") == [("ok",)]
    assert (ws / result["quarantine"] / "history.db").read_bytes() == original


def test_salvage_waits_for_a_writer_then_gives_up_with_exit_4(tmp_path):
    ws, _ = make_ws(tmp_path)
    _set_aside(ws)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sqlite3, sys, time
        c = sqlite3.connect({str(ws / 'history.db')!r}, isolation_level=None)
        c.execute("BEGIN IMMEDIATE")
        print("locked", flush=True)
        time.sleep(30)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        run = run_cli("-w", str(ws), "history", "salvage")
    finally:
        holder.kill()
        holder.wait()
    assert run.code == 4 and "locked" in run.stderr and "Traceback" not in run.stderr
    assert _all_rows(ws / "history.db") == set()


WRITER = """
import sqlite3, sys, time
db, n = sys.argv[1], int(sys.argv[2])
c = sqlite3.connect(db, isolation_level=None, timeout=10)
c.execute("PRAGMA busy_timeout=10000")
done = 0
for i in range(n):
    c.execute("BEGIN IMMEDIATE")
    cur = c.execute("INSERT INTO conversation_history (session_id, kind, role, content, created_at, dedup_key) "
                    "VALUES ('console:live', 'context_msg', 'user', ?, '2026-12-01T10:00:00', ?)", (f"live {i}", f"k{i}"))
    c.execute("INSERT INTO conversation_history_fts (rowid, content) VALUES (?, ?)", (cur.lastrowid, f"live {i}"))
    c.execute("COMMIT")
    done += 1
    time.sleep(0.002)
print(done)
"""


def test_a_concurrent_qwenpaw_style_writer_loses_nothing(tmp_path):
    ws, _ = make_ws(tmp_path, sessions=8, turns=40)
    _, rows = _set_aside(ws)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(ws / "history.db"), "400"], stdout=subprocess.PIPE,
                              text=True)
    time.sleep(0.1)
    run = run_cli("-w", str(ws), "history", "salvage", "--json")
    written = int(writer.communicate(timeout=120)[0])
    assert run.code == 0, run.stderr
    db = ws / "history.db"
    assert written == 400
    assert sql(db, "SELECT count(*) FROM conversation_history WHERE session_id = 'console:live'")[0][0] == 400
    salvaged = {r[1:] for r in _all_rows(db) if r[1] != "console:live"}
    assert salvaged == {r[1:] for r in rows}  # every salvaged turn is there (some renumbered if the writer won)
    assert sql(db, "PRAGMA integrity_check") == [("ok",)]
    assert {"fts_missing", "fts_stale", "fts_content"}.isdisjoint(codes(check(ws, "--deep").json()))


@pytest.mark.slow
def test_sigkill_during_salvage_leaves_the_old_or_the_new_store(tmp_path):
    import random

    rng = random.Random(7)
    for trial in range(6):
        base = tmp_path / f"t{trial}"
        ws, _ = make_ws(base, sessions=10, turns=40)
        aside, rows = _set_aside(ws)
        env = dict(os.environ, PYTHONPATH=str(REPO))
        proc = subprocess.Popen([sys.executable, "-m", "qwenmem", "-w", str(ws), "history", "salvage"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 1.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        db = ws / "history.db"
        assert sql(db, "PRAGMA integrity_check") == [("ok",)]
        n = sql(db, "SELECT count(*) FROM conversation_history")[0][0]
        assert n in (0, len(rows)), (trial, n)  # one transaction: all or nothing
        assert aside.is_file()


def test_a_history_db_linked_out_of_the_workspace_is_refused(tmp_path):
    ws, _ = make_ws(tmp_path)
    outside = tmp_path / "outside.db"
    os.replace(ws / "history.db", outside)
    for side in ("-wal", "-shm"):
        Path(f"{ws / 'history.db'}{side}").unlink(missing_ok=True)
    before = sha(outside)
    (ws / "history.db").symlink_to(outside)
    for args in (("check",), ("salvage",), ("rebuild-fts", "--force")):
        run = run_cli("-w", str(ws), "history", *args)
        assert run.code in (2, 6), (args, run.code, run.stderr)
        assert "outside" in run.stderr and "Traceback" not in run.stderr
    assert sha(outside) == before


# --- page-level recovery (qwenmem's own reader of SQLite's file format) -----------------------------------------

def _destroy_table_root(ws: Path) -> tuple[set[tuple], int]:
    """Overwrite the root page of conversation_history (an interior page of a multi-page table) with random bytes:
    every leaf is intact, but none is reachable from the b-tree any more."""
    db = ws / "history.db"
    rows = _all_rows(db)
    conn = sqlite3.connect(str(db))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'conversation_history'").fetchone()
    (kind,) = conn.execute("SELECT pagetype FROM dbstat WHERE pageno = ?", (root,)).fetchone()
    conn.close()
    assert kind == "internal", "the store must be large enough for an interior root page"
    data = bytearray(db.read_bytes())
    data[(root - 1) * 4096:root * 4096] = random.Random(root).randbytes(4096)
    db.write_bytes(bytes(data))
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    return rows, root


def test_page_level_recovery_reads_rows_the_b_tree_no_longer_reaches(tmp_path):
    ws, _ = make_ws(tmp_path / "page", sessions=3, turns=20)
    rows, _ = _destroy_table_root(ws)
    run = run_cli("-w", str(ws), "history", "salvage", "--json", env={"PATH": "/usr/bin:/bin"})  # no sqlite3 needed
    assert run.code == 0, run.stderr  # the indexes name every row, and every one was read
    result = run.json()["result"]
    source = result["sources"][0]
    assert source["method"] == "page reader" and result["complete"] is True
    assert source["from_lost_and_found"] == len(rows)  # every row came from pages no longer linked
    assert result["action"] == "rebuilt"
    assert _all_rows(ws / "history.db") == rows  # all of them, byte for byte, under their own seq; none invented
    assert sql(ws / "history.db", "PRAGMA integrity_check") == [("ok",)]


def test_a_row_whose_overflow_chain_the_truncation_cut_is_reported_and_kept_not_written(tmp_path):
    ws, _ = make_ws(tmp_path, sessions=2, turns=6)
    db = ws / "history.db"
    big = "tool output line\n" * 2000  # ~34 KB: a chain of overflow pages allocated at the end of the file
    write_sql(db, "INSERT INTO conversation_history (session_id, agent_id, kind, role, name, content, tool_call_id, "
                  f"tool_state, blocks, created_at, dedup_key) VALUES ('console:user0', 'default', 'tool_result', "
                  f"'assistant', 'shell', '{big}', 'call_big', 'success', '[]', '2026-12-01T10:00:00', 'call_big')",
              "PRAGMA wal_checkpoint(TRUNCATE)")
    rows = _all_rows(db)
    (big_seq,) = sql(db, "SELECT seq FROM conversation_history WHERE dedup_key = 'call_big'")[0]
    chain = sorted(n for (n,) in sql(db, "SELECT pageno FROM dbstat WHERE name = 'conversation_history' AND "
                                         "pagetype = 'overflow'"))
    assert len(chain) >= 6
    cut = chain[3]  # keep the leaf and three overflow pages, lose the rest of the chain
    data = db.read_bytes()
    db.write_bytes(data[:(cut - 1) * 4096 + 1000])
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    run = run_cli("-w", str(ws), "history", "salvage", "--json")
    assert run.code == 1, run.stderr  # a row known to exist was not recovered
    result = run.json()["result"]
    source = result["sources"][0]
    assert source["partial_rows"] == 1 and source["cut_seqs"] == [big_seq]
    assert f"seq {big_seq}" in " ".join(run.json()["warnings"])
    got = _all_rows(db)
    assert got == rows - {r for r in rows if r[0] == big_seq}  # every other row, and no half row
    [kept] = [json.loads(line) for line in (ws / result["quarantine"] / "cut-rows.jsonl").read_text().splitlines()]
    assert kept["seq"] == big_seq and kept["row"]["session_id"] == "console:user0"
    assert kept["row"]["content"] is None or big.startswith(kept["row"]["content"])  # what was read, never more
    assert oct((ws / result["quarantine"] / "cut-rows.jsonl").stat().st_mode & 0o777) == "0o600"


def _three_level_store(tmp_path: Path) -> tuple[Path, set[tuple], dict[str, int]]:
    """A workspace whose conversation_history b-tree has interior pages below its root (about 2,000 rows of
    1.5 KB), and its interior pages by dbstat path."""
    ws, _ = make_ws(tmp_path, sessions=1, turns=2)
    db = ws / "history.db"
    conn = sqlite3.connect(str(db), isolation_level=None)
    conn.execute("BEGIN")
    for i in range(2000):
        conn.execute("INSERT INTO conversation_history (session_id, agent_id, kind, role, content, created_at, "
                     "dedup_key) VALUES ('console:bulk', 'default', 'context_msg', 'user', ?, "
                     "'2026-12-01T10:00:00', ?)", (f"turn {i} " + "words " * 250, f"bulk-{i}"))
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    interior = dict(sql(db, "SELECT path, pageno FROM dbstat WHERE name = 'conversation_history' AND "
                            "pagetype = 'internal'"))
    assert "/" in interior and "/000/" in interior and len(interior) >= 3
    return ws, _all_rows(db), interior


def test_a_destroyed_interior_page_loses_no_row(tmp_path):
    ws, rows, interior = _three_level_store(tmp_path)
    db = ws / "history.db"
    page = interior["/000/"]
    data = bytearray(db.read_bytes())
    data[(page - 1) * 4096:page * 4096] = random.Random(page).randbytes(4096)
    db.write_bytes(bytes(data))
    run = run_cli("-w", str(ws), "history", "salvage", "--json")
    assert run.code == 0, run.stderr
    source = run.json()["result"]["sources"][0]
    assert source["method"] == "page reader" and source["from_lost_and_found"] > 0
    assert _all_rows(db) == rows  # the rows under it too (the b-tree scan alone got only the other subtrees)


def test_rows_named_by_the_index_but_on_no_page_make_salvage_partial(tmp_path):
    """The root and one leaf destroyed: the tree cannot say what the leaf held, but ch_kind's entries can."""
    ws, rows, interior = _three_level_store(tmp_path)
    db = ws / "history.db"
    leaves = sql(db, "SELECT path, pageno, ncell FROM dbstat WHERE name = 'conversation_history' AND pagetype = 'leaf' "
                     "ORDER BY path")
    ordered = sorted(r[0] for r in rows)
    at = sum(n for _, _, n in leaves[:5])
    victim, on_victim = leaves[5][1], set(ordered[at:at + leaves[5][2]])
    data = bytearray(db.read_bytes())
    for page in (interior["/"], victim):
        data[(page - 1) * 4096:page * 4096] = bytes(4096)
    db.write_bytes(bytes(data))
    run = run_cli("-w", str(ws), "history", "salvage", "--json")
    assert run.code == 1, run.stderr
    source = run.json()["result"]["sources"][0]
    assert set(source["missing_seqs"]) == on_victim
    assert _all_rows(db) == {r for r in rows if r[0] not in on_victim}


def test_deleted_rows_on_freed_pages_are_not_brought_back(tmp_path):
    """QwenPaw's retention purge deletes rows; their pages go to the freelist with the old bytes still in them."""
    ws, rows, _ = _three_level_store(tmp_path)
    db = ws / "history.db"
    write_sql(db, "PRAGMA secure_delete=OFF",  # Debian's SQLite zeroes freed bytes; QwenPaw's SQLite may not
              "DELETE FROM conversation_history WHERE dedup_key LIKE 'bulk-%' AND "
                  "CAST(substr(dedup_key, 6) AS INTEGER) < 600", "PRAGMA wal_checkpoint(TRUNCATE)")
    kept = _all_rows(db)
    assert sql(db, "PRAGMA freelist_count")[0][0] > 50
    _destroy_table_root(ws)
    run = run_cli("-w", str(ws), "history", "salvage", "--json")
    assert run.code == 0, run.stderr
    assert _all_rows(db) == kept  # the 600 deleted turns stay deleted
    assert any("freelist" in w for w in run.json()["warnings"])


def test_rows_committed_only_in_the_set_aside_wal_are_salvaged(tmp_path):
    """QwenPaw renames the -wal with the store (spec §3.6): rows committed but not yet checkpointed live only there."""
    ws, _ = make_ws(tmp_path)
    db = ws / "history.db"
    aside = ws / "history.db.corrupt-20261130T101500"
    conn = sqlite3.connect(str(db), isolation_level=None)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    for i in range(5):
        conn.execute("INSERT INTO conversation_history (session_id, agent_id, kind, role, content, created_at, "
                     "dedup_key) VALUES ('console:late', 'default', 'context_msg', 'user', ?, '2026-12-01T10:00:00', "
                     "?)", (f"late turn {i}", f"late-{i}"))
    rows = _all_rows(db)
    shutil.copyfile(db, aside)  # what the rename leaves: the main file without the late rows, and the -wal with them
    shutil.copyfile(Path(f"{db}-wal"), Path(f"{aside}-wal"))
    conn.close()
    for side in ("", "-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    builder.create_history_db(db).close()
    wal_bytes = Path(f"{aside}-wal").read_bytes()
    run = run_cli("-w", str(ws), "history", "salvage", "--json")
    assert run.code == 0, run.stderr
    source = run.json()["result"]["sources"][0]
    assert source["rows_from_wal"] >= 5 and source["scan_only"] == 0  # the page reader read the frames itself
    assert _all_rows(db) == rows  # the five late rows too
    assert Path(f"{aside}-wal").read_bytes() == wal_bytes  # read from a private copy, never replayed in place


def test_a_rebuild_holding_fewer_rows_than_the_pages_never_replaces_the_live_store(tmp_path):
    from qwenmem.core.errors import QwenmemError
    from qwenmem.core.history import maintain
    from qwenmem.core.workspace import Workspace

    ws, _ = make_ws(tmp_path / "w", sessions=3, turns=20)
    rows, _ = _destroy_table_root(ws)
    live = ws / "history.db"
    before = sha(live)
    got = maintain.sv.recover_rows(live)
    assert got.rows_on_pages == len(rows)
    with pytest.raises(QwenmemError, match="nothing was replaced"):
        maintain._rebuild(Workspace(ws, ws, None, "test"), live, [live], got.rows[:-1], False, got.rows_on_pages,
                          [got])
    assert sha(live) == before and not list(ws.glob(".history.db.qwenmem-salvage-*"))


# --- bad input (issue 24 item 9) ---------------------------------------------------------------------------------

def test_a_seq_beyond_sqlite_integers_in_a_session_is_a_dangling_pointer_not_a_traceback(tmp_path):
    ws, facts = make_ws(tmp_path, sessions=1, turns=6)
    path = facts[0]["path"]
    doc = json.loads(path.read_text())
    msg_id = next(iter(doc["agent"]["scroll"]["seq_by_id"]))
    doc["agent"]["scroll"]["seq_by_id"][msg_id] = [2 ** 63, 2 ** 64 + 5]
    path.write_text(json.dumps(doc))
    run = check(ws)
    assert run.code == 1 and "Traceback" not in run.stderr, run.stderr
    [finding] = [f for f in run.json()["result"]["findings"] if f["code"] == "dangling_persisted"]
    assert finding["count"] == 1 and msg_id in finding["examples"][0] and path.name in finding["examples"][0]


def test_a_history_db_with_random_header_bytes_52_to_55_is_one_finding_naming_the_file(tmp_path):
    ws, _ = make_ws(tmp_path)
    db = ws / "history.db"
    conn = sqlite3.connect(str(db), isolation_level=None)  # rows with overflow chains, as tool outputs have: SQLite
    rng = random.Random(1)  # meets the damage (it now expects pointer-map pages) when the row scan follows them
    conn.execute("BEGIN")
    for i in range(200):
        content = f"turn {i} " + "words " * (rng.randint(10, 400) if rng.random() >= 0.1 else rng.randint(2000, 8000))
        cur = conn.execute("INSERT INTO conversation_history (session_id, agent_id, kind, role, content, blocks, "
                           "created_at, dedup_key) VALUES (?, 'default', ?, 'user', ?, '[]', '2026-12-01T10:00:00', ?)",
                           (f"console:s{i % 7}", rng.choice(["context_msg", "model_turn", "tool_result"]), content,
                            f"k{i}"))
        conn.execute("INSERT INTO conversation_history_fts(rowid, content) VALUES (?, ?)", (cur.lastrowid, content))
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(db.read_bytes())
    data[52:56] = bytes([0x9C, 0x41, 0x07, 0xEE])  # "largest root b-tree page": SQLite now expects auto-vacuum
    db.write_bytes(bytes(data))
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    for extra in (("--deep",), ()):
        run = check(ws, *extra)
        assert run.code == 1 and "Traceback" not in run.stderr, (extra, run.stderr)
        doc = run.json()
        assert doc["status"] == "problems"
        problems = [f for f in doc["result"]["findings"] if f["severity"] == "problem"]
        assert problems and any(str(db) in f["message"] or "history.db" in f["message"] for f in problems)


def test_salvage_into_an_empty_live_file_gives_it_qwenpaws_schema(tmp_path):
    """A 0-byte history.db (QwenPaw had not created its tables) beside a set-aside copy: the merge must not fail."""
    ws, _ = make_ws(tmp_path)
    _, rows = _set_aside(ws)
    for side in ("", "-wal", "-shm"):
        Path(f"{ws / 'history.db'}{side}").unlink(missing_ok=True)
    (ws / "history.db").write_bytes(b"")
    run = run_cli("-w", str(ws), "history", "salvage", "--json")
    assert run.code == 0, run.stderr
    assert _all_rows(ws / "history.db") == rows
    assert sql(ws / "history.db", "PRAGMA user_version") == [(1,)]
