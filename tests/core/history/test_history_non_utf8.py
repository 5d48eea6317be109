"""A history.db row whose TEXT is not UTF-8 (a damaged cell, a foreign writer): sqlite3's strict decoding raised
mid-query, so `compact` ended in an internal error, `sessions show --history` refused the whole history, and the
salvage scan stopped at the row, recovering none of the rows after it."""

from __future__ import annotations

import json
import shutil
import sqlite3

from helpers import invoke
from qwenpaw2_support import copy_corpus, needs_gen2_corpus

from qwenmem.core.history.salvage import recover_rows

BAD = "CAST(x'80ff41' AS TEXT)"
BAD_BLOCKS = "CAST(x'" + b'[{"type": "text", "text": "\x80\xffA"}]'.hex() + "' AS TEXT)"  # shown from blocks


def _spoil_first_alice_row(db) -> int:
    conn = sqlite3.connect(str(db))
    try:
        seq = conn.execute("SELECT min(seq) FROM conversation_history WHERE session_id = 'console:alice'").fetchone()[0]
        conn.execute(f"UPDATE conversation_history SET content = {BAD}, blocks = {BAD_BLOCKS} WHERE seq = ?", (seq,))
        conn.commit()
        return int(seq)
    finally:
        conn.close()


@needs_gen2_corpus
def test_reading_commands_show_the_row_with_replacement_characters(tmp_path):
    ws = copy_corpus(tmp_path)
    _spoil_first_alice_row(ws / "history.db")
    before = (ws / "history.db").read_bytes()
    shown = invoke("-w", str(ws), "sessions", "show", "console/alice_console--alice", "--history", "--full")
    assert shown.code == 0, shown.stderr
    assert "\ufffd\ufffdA" in shown.stdout
    compacted = invoke("-w", str(ws), "compact", "--dry-run", "console/alice_console--alice")
    assert compacted.code == 0 and "internal error" not in compacted.stderr, compacted.stderr
    assert (ws / "history.db").read_bytes() == before  # read-only: the store's bytes are not "repaired"


@needs_gen2_corpus
def test_salvage_scan_counts_a_non_utf8_row_as_cut_and_reads_every_other_row(tmp_path):
    ws = copy_corpus(tmp_path)
    spoiled = _spoil_first_alice_row(ws / "history.db")
    aside = tmp_path / "history.db.corrupt-20261201T000000"
    shutil.copyfile(ws / "history.db", aside)
    conn = sqlite3.connect(str(aside))
    try:
        total = conn.execute("SELECT count(*) FROM conversation_history").fetchone()[0]
    finally:
        conn.close()
    got = recover_rows(aside)
    seqs = {row[0] for row in got.rows}
    assert spoiled not in seqs and spoiled in got.partial
    assert len(seqs) == total - 1


@needs_gen2_corpus
def test_a_schema_byte_that_is_not_utf8_is_a_corrupt_store_for_every_command(tmp_path):
    """SQLite's error message quotes the damaged schema and sqlite3 decodes it as UTF-8: UnicodeDecodeError, not
    DatabaseError, came out of every command that opens history.db (an internal error)."""
    ws = copy_corpus(tmp_path)
    db = ws / "history.db"
    data = bytearray(db.read_bytes())
    at = data.index(b"CREATE INDEX ch_created_at ON ") + len(b"CREATE INDEX ch_created_at ON ")
    data[at] = 0x80  # the table name the index is on: a syntax error SQLite reports with the bytes around it
    db.write_bytes(bytes(data))
    for args in (("history", "check", "--json"), ("info", "--json"), ("sessions", "list", "--json"),
                 ("doctor", "--json"), ("history", "salvage", "--dry-run", "--json")):
        run = invoke("-w", str(ws), *args)
        assert "internal error" not in run.stderr and "UnicodeDecodeError" not in run.stderr, (args, run.stderr)
        assert run.json()["qwenmem_json"], args
    checked = invoke("-w", str(ws), "history", "check", "--json").json()
    assert checked["status"] == "problems" and "corrupt" in json.dumps(checked)
    assert db.read_bytes() == bytes(data)
