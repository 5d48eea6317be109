"""Property tests over mutated history.db files (issue 24 item 9): the page reader never raises on any bytes, salvage
never recovers fewer rows than a reference count of the rows whose bytes the mutation left intact, and the history
commands never show a traceback.

The reference is independent of the reader: SQLite's `dbstat` of the intact store names each row's leaf page and
overflow pages, and the cell's own byte extent in its leaf; a row is intact when none of those bytes changed.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import run_cli
from hypothesis import HealthCheck, example, given, settings, strategies as st
from qwenpaw2_support import builder
from speed import examples

from qwenmem.core.history import pages as pg
from qwenmem.core.history.image import from_bytes
from qwenmem.core.history.pagerows import read_history_pages
from qwenmem.core.history.salvage import recover_rows

PAGE = 4096


def _make_store(path: Path) -> None:
    """QwenPaw's DDL, ~260 rows: short turns, tool outputs with overflow chains, and rows whose JSON columns do
    not parse (they are rows as stored: salvage must bring them back as they are)."""
    conn = builder.create_history_db(path)
    conn.close()
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA secure_delete=OFF")
    rng = random.Random(11)
    conn.execute("BEGIN")
    for i in range(260):
        size = rng.randint(2000, 6000) if rng.random() < 0.12 else rng.randint(5, 200)
        blocks = '[{"type": "text", "te' if i % 37 == 0 else json.dumps([{"type": "text", "text": f"b{i}"}])
        content = f"turn {i} " + " ".join(rng.choice(("berlin", "hotel", "trip", "umbrella")) for _ in range(size))
        cur = conn.execute(
            "INSERT INTO conversation_history (session_id, agent_id, kind, role, name, content, blocks, metadata, "
            "created_at, dedup_key) VALUES (?, 'default', ?, ?, ?, ?, ?, ?, ?, ?)",
            (f"console:u{i % 5}", ("context_msg", "model_turn", "tool_result")[i % 3], "user" if i % 3 == 0 else
             "assistant", "shell" if i % 3 == 2 else None, content, blocks, None if i % 4 else '{"k": 1}',
             f"2026-12-01T10:{i % 60:02d}:00.000", f"m{i}"))
        conn.execute("INSERT INTO conversation_history_fts(rowid, content) VALUES (?, ?)", (cur.lastrowid, content))
    conn.execute("COMMIT")
    conn.execute("DELETE FROM conversation_history WHERE seq BETWEEN 40 AND 60")  # a purge: freed pages
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for side in ("-wal", "-shm"):
        Path(f"{path}{side}").unlink(missing_ok=True)


@dataclass(frozen=True)
class Extent:
    pages: frozenset[int]  # leaf page and overflow pages
    leaf: int
    pointer: int  # where its cell pointer is in the leaf page
    start: int  # the cell's bytes in its leaf page
    end: int


def _layout(db: Path) -> tuple[dict[int, tuple], dict[int, Extent]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = {r[0]: r for r in conn.execute("SELECT * FROM conversation_history")}
        pages = conn.execute("SELECT path, pageno, pagetype, ncell FROM dbstat WHERE name = 'conversation_history' "
                             "ORDER BY path").fetchall()
    finally:
        conn.close()
    data = db.read_bytes()
    usable = PAGE - data[20]
    overflow: dict[str, set[int]] = {}
    for path, pageno, kind, _ in pages:
        if kind == "overflow":
            overflow.setdefault(path.split("+")[0], set()).add(pageno)
    seqs = iter(sorted(rows))
    out: dict[int, Extent] = {}
    for path, pageno, kind, ncell in pages:
        if kind != "leaf":
            continue
        page = data[(pageno - 1) * PAGE:pageno * PAGE]
        for cell in range(ncell):  # cell pointers are in rowid order on a table leaf
            at = int.from_bytes(page[8 + 2 * cell:10 + 2 * cell], "big")
            size, after = pg.varint(page, at)
            _, after = pg.varint(page, after)
            local = pg.local_size(size, usable, True)
            end = after + local + (4 if local < size else 0)
            out[next(seqs)] = Extent(frozenset({pageno} | overflow.get(f"{path}{cell:03x}", set())), pageno,
                                     8 + 2 * cell, at, end)
    return rows, out


class Store(tuple):
    def __repr__(self) -> str:  # hypothesis prints the fixture with a failing example
        return "<mutated-store fixture>"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    db = tmp_path_factory.mktemp("pages") / "history.db"
    _make_store(db)
    rows, extents = _layout(db)
    assert any(len(e.pages) > 1 for e in extents.values())  # overflow chains are covered
    return Store((db.read_bytes(), rows, extents))


def _changed(original: bytes, mutated: bytes) -> tuple[set[int], int]:
    """(pages whose bytes differ, length kept): the mutation's footprint, computed from the bytes."""
    pages = set()
    for n in range(1, len(original) // PAGE + 1):
        a = original[(n - 1) * PAGE:n * PAGE]
        b = mutated[(n - 1) * PAGE:n * PAGE]
        if a != b:
            pages.add(n)
    return pages, len(mutated)


def _intact(original: bytes, mutated: bytes, extents: dict[int, Extent]) -> set[int]:
    """Seqs whose every byte (cell and overflow chain) is unchanged and present in `mutated`."""
    changed, length = _changed(original, mutated)
    out = set()
    for seq, e in extents.items():
        damaged = (e.pages - {e.leaf}) & changed
        if e.leaf in changed:  # a change elsewhere in the leaf page leaves this cell whole
            a = original[(e.leaf - 1) * PAGE:e.leaf * PAGE]
            b = mutated[(e.leaf - 1) * PAGE:e.leaf * PAGE]
            if a[e.start:e.end] != b[e.start:e.end] or a[:8] != b[:8] or a[e.pointer:e.pointer + 2] != \
                    b[e.pointer:e.pointer + 2]:
                damaged = {e.leaf}
        if not damaged:
            out.add(seq)
    return out


mutations = st.one_of(
    st.tuples(st.just("header"), st.integers(16, 99), st.binary(min_size=1, max_size=12)),
    st.tuples(st.just("page"), st.integers(1, 400), st.sampled_from(["random", "zero"])),
    st.tuples(st.just("truncate"), st.floats(0.0, 1.0), st.just(b"")),
    st.tuples(st.just("bytes"), st.integers(0, 10 ** 7), st.binary(min_size=1, max_size=64)),
)


def _mutate(data: bytes, how: tuple, rng: random.Random) -> bytes:
    kind, where, what = how
    out = bytearray(data)
    if kind == "header":
        out[where:where + len(what)] = what[:100 - where]
    elif kind == "page":
        n = where % (len(data) // PAGE) + 1
        out[(n - 1) * PAGE:n * PAGE] = rng.randbytes(PAGE) if what == "random" else bytes(PAGE)
    elif kind == "truncate":
        del out[int(len(data) * where):]
    else:
        at = where % len(data)
        out[at:at + len(what)] = what
        del out[len(data):]
    return bytes(out)


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=12_000), st.one_of(st.none(), st.binary(max_size=9_000)))
def test_the_page_reader_never_raises_on_any_bytes(main, wal):
    read_history_pages(from_bytes(main, wal))
    read_history_pages(from_bytes(pg.MAGIC + b"\x10\x00\x01\x01" + main, wal))  # past the magic check


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations, st.randoms(use_true_random=False), st.binary(max_size=200))
def test_the_page_reader_reads_every_intact_row_of_a_mutated_store(store, how, rng, wal_junk):
    original, rows, extents = store
    mutated = _mutate(original, how, rng)
    got = read_history_pages(from_bytes(mutated, wal_junk or None))
    intact = _intact(original, mutated, extents)
    for seq in intact:
        assert got.rows.get(seq) == rows[seq], (how, seq)
    assert set(got.rows) <= set(rows)  # nothing invented (no deleted row brought back either)
    if how[0] in ("header", "truncate") or (how[0] == "page" and how[2] == "random"):
        assert all(got.rows[s] == rows[s] for s in got.rows)  # and every row read is the original


# each example is a whole salvage (~6 s on one busy core): 100 in the full run kept CI on this test for over 10 min
@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations, st.randoms(use_true_random=False))
# found by longer runs: a zeroed tail read back as cells with seq 0, so the b-tree scan's "seq > last" never grew
# (salvage looped for ever: CI timed out here), and a byte that made a TEXT cell invalid UTF-8 (sqlite3 raised)
@example(how=("truncate", 0.14245797953034137, b""), rng=random.Random(0))
@example(how=("bytes", 3562, b"\x80"), rng=random.Random(0))
def test_salvage_never_recovers_fewer_rows_than_are_intact(store, tmp_path_factory, how, rng):
    original, rows, extents = store
    mutated = _mutate(original, how, rng)
    path = tmp_path_factory.mktemp("salvage") / "history.db.corrupt-20261201T000000"
    path.write_bytes(mutated)
    got = recover_rows(path)
    by_seq = {r[0]: r for r in got.rows}
    intact = _intact(original, mutated, extents)
    assert all(by_seq.get(s) == rows[s] for s in intact), how
    assert len(got.rows) >= len(intact)
    assert not set(got.missing) & set(by_seq) and not set(got.partial) & set(by_seq)


@pytest.mark.slow  # ~9 s an example on the busy 2-core machine (two CLI runs); the full run (CI) takes 20
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations, st.randoms(use_true_random=False))
# found by CI: one byte made a row's session id invalid UTF-8, the row stayed in the live store, and reading it
# back raised (SQLite checks no encoding; sqlite3, like QwenPaw, decodes every TEXT value)
@example(how=("bytes", 49383, b"\x80"), rng=random.Random(0))
def test_history_commands_never_show_a_traceback_on_a_mutated_store(store, tmp_path_factory, how, rng):
    original, rows, extents = store
    mutated = _mutate(original, how, rng)
    ws = tmp_path_factory.mktemp("ws")
    (ws / "sessions").mkdir()
    builder.agent_json(ws, "scroll", retention=0)
    (ws / "history.db").write_bytes(mutated)
    aside = ws / "history.db.corrupt-20261201T000000"
    shutil.copyfile(ws / "history.db", aside)
    for args in (("check", "--deep"), ("salvage",)):
        run = run_cli("-w", str(ws), "history", *args, "--json")
        assert "Traceback" not in run.stderr and "internal error" not in run.stderr, (how, args, run.stderr)
        assert run.code in (0, 1), (how, args, run.code, run.stderr)
        assert run.json()["status"] in ("ok", "problems")
    conn = sqlite3.connect(f"file:{ws / 'history.db'}?mode=ro", uri=True)
    # the live store keeps its own damage when quick_check passes (QwenPaw keeps using it, and a merge adds to it):
    # a TEXT value the mutation made invalid UTF-8 is read as bytes here, and is no intact row
    conn.text_factory = lambda raw: raw.decode("utf-8", "surrogateescape")
    try:
        live = set(conn.execute("SELECT * FROM conversation_history"))
    except sqlite3.OperationalError as exc:  # an empty file stays empty when there was nothing to merge
        assert "no such table" in str(exc) and not _intact(original, mutated, extents), (how, run.stdout[:1500])
        live = set()
    finally:
        conn.close()
    assert {rows[s] for s in _intact(original, mutated, extents)} <= live, how
    assert os.path.exists(aside)
