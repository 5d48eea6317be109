"""How many rows `qwenmem history salvage` gets back from damaged history.db stores: the rows still on the damaged
file's pages (an independent page-level reading, from the intact original's layout) against the rows recovered by
the old fallback (SQLite's b-tree scan, the code before the page reader: git commit OLD_COMMIT) and by qwenmem's
page reader (issue 23 item 2).

    python bench/quality/history_salvage_bench.py --make-venv /tmp/qwenpaw2-venv    # once: qwenpaw==2.2.2.post1 (+5 deps)
    python bench/quality/history_salvage_bench.py --qwenpaw-python /tmp/qwenpaw2-venv/bin/python [--rows 6028] [--write]

The intact original is the generated 2.x corpus's history.db (written by QwenPaw 2.2.2.post1, ../shared/corpus/
generated/qwenpaw-2.2.2, read from a copy) grown by `--rows` more rows with QwenPaw's own `HistoryStore.append` /
`append_many` (bench/peer/history_qwenpaw_driver.py), so every page is laid out by QwenPaw's code. Damaged stores, each
as the live history.db (QwenPaw has not restarted yet) unless "set aside" says otherwise:

* table root page overwritten with random bytes; one interior page below it overwritten;
* truncated at 50 % of its size; three random pages overwritten (seeded);
* WAL-only rows: QwenPaw appends more rows and the store and its -wal are copied while it is open (its close would
  checkpoint), then set aside as `.corrupt-<ts>` with that -wal beside it, as QwenPaw's rename does (spec §3.6);
* a real `.corrupt-<ts>`: the truncated store opened by QwenPaw's own `HistoryStore`, which renames it aside and
  starts an empty one.

"Rows on pages" = rows whose leaf cell and whole overflow chain lie on bytes the damage left intact, from the
intact original's dbstat layout and the cells' byte extents (for the WAL case: every committed row, read by SQLite
from a copy). Recovered = rows in the live store afterwards that are byte-identical to an original row; rows that
are not (invented or half-read) are counted separately and must be 0. Only copies are opened.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "generated" / "qwenpaw-2.2.2" / "root" / "workspaces" / "default"
DRIVER = HERE.parent / "peer" / "history_qwenpaw_driver.py"
QWENPAW = ["qwenpaw==2.2.2.post1"]
# what HistoryStore's import chain needs (qwenpaw's full dependency tree is not needed for scroll/history.py)
QWENPAW_DEPS = ["python-dotenv", "apscheduler", "pydantic", "shortuuid", "pyyaml", "json-repair"]
PAGE = 4096
OLD_COMMIT = "4e4baa8"  # main before the page reader: salvage without a sqlite3 shell fell back to the b-tree scan
WORKSPACE_FILES = ("agent.json", "chats.json", "jobs.json")


def make_venv(where: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    pip = [str(where / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--no-deps", *QWENPAW], check=True)
    subprocess.run([*pip, *QWENPAW_DEPS], check=True)
    print(f"ready: {where / 'bin' / 'python'}")


def driver(py: str, *args: str) -> dict:
    env = dict(os.environ, HOME=tempfile.mkdtemp(prefix="qwenpaw-home-"))  # QwenPaw writes logs under ~
    out = subprocess.run([py, str(DRIVER), *args], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def copy_db(src: Path, dest: Path) -> None:
    """The file and its -wal, as plain bytes (never opened with SQLite where it lies)."""
    shutil.copyfile(src, dest)
    os.chmod(dest, 0o600)
    if Path(f"{src}-wal").is_file() and Path(f"{src}-wal").stat().st_size:
        shutil.copyfile(Path(f"{src}-wal"), Path(f"{dest}-wal"))


def rows_of(db: Path) -> set[tuple]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return set(conn.execute("SELECT * FROM conversation_history"))
    finally:
        conn.close()


def _varint(buf: bytes, at: int) -> tuple[int, int]:
    value = 0
    for i in range(9):
        byte = buf[at + i]
        if i == 8:
            return (value << 8) | byte, at + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    raise AssertionError("unreachable")


def _cell_ends(data: bytes, pageno: int) -> list[int]:
    """For each cell of a table leaf page, in cell-pointer order: the offset in the page where its bytes end
    (file format: varint payload size, varint rowid, local payload, 4-byte first overflow page)."""
    usable = PAGE - data[20]
    page = data[(pageno - 1) * PAGE:pageno * PAGE]
    head = 100 if pageno == 1 else 0
    assert page[head] == 0x0D, (pageno, page[head])
    ncell = int.from_bytes(page[head + 3:head + 5], "big")
    x, m = usable - 35, (usable - 12) * 32 // 255 - 23
    ends = []
    for i in range(ncell):
        at = int.from_bytes(page[head + 8 + 2 * i:head + 10 + 2 * i], "big")
        size, at = _varint(page, at)
        _, at = _varint(page, at)
        if size <= x:
            ends.append(at + size)
        else:
            k = m + (size - m) % (usable - 4)
            ends.append(at + (k if k <= x else m) + 4)
    return ends


@dataclass
class Cell:
    leaf: int
    end: int  # where its bytes end inside the leaf page
    overflow: set[int]


def layout(db: Path) -> dict[int, Cell]:
    """seq -> where its leaf cell and its overflow chain lie (dbstat of the intact store plus the cells' own byte
    extents). Leaf cells are in seq order along the in-order paths."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        pages = conn.execute("SELECT path, pageno, pagetype, ncell FROM dbstat WHERE name = 'conversation_history' "
                             "ORDER BY path").fetchall()
        seqs = [r[0] for r in conn.execute("SELECT seq FROM conversation_history ORDER BY seq")]
    finally:
        conn.close()
    data = db.read_bytes()
    overflow: dict[str, set[int]] = {}
    for path, pageno, kind, _ in pages:
        if kind == "overflow":
            overflow.setdefault(path.split("+")[0], set()).add(pageno)
    out: dict[int, Cell] = {}
    it = iter(seqs)
    for path, pageno, kind, ncell in pages:
        if kind == "leaf":
            ends = _cell_ends(data, pageno)
            assert len(ends) == ncell
            for cell in range(ncell):
                out[next(it)] = Cell(pageno, ends[cell], overflow.get(f"{path}{cell:03x}", set()))
    return out


@dataclass
class Damage:
    lost: set[int]  # pages destroyed whole
    cut_page: int = 0  # the page a truncation runs through (0: none) ...
    cut_at: int = 0  # ... and how many of its bytes are left

    def readable(self, cell: Cell) -> bool:
        """Its bytes all survive: a page-level scan can read this row."""
        if cell.overflow & self.lost or cell.overflow & {self.cut_page}:
            return False
        if cell.leaf == self.cut_page:
            return cell.end <= self.cut_at
        return cell.leaf not in self.lost


def _table_pages(original: Path) -> tuple[int, list[int]]:
    conn = sqlite3.connect(f"file:{original}?mode=ro", uri=True)
    try:
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'conversation_history'").fetchone()
        interior = [n for (n,) in conn.execute("SELECT pageno FROM dbstat WHERE name = 'conversation_history' AND "
                                               "pagetype = 'internal' ORDER BY pageno")]
    finally:
        conn.close()
    return root, interior


def damage(original: Path, dest: Path, case: str, seed: int) -> Damage:
    data = bytearray(original.read_bytes())
    pages = len(data) // PAGE
    rng = random.Random(seed)
    root, interior = _table_pages(original)
    if case == "truncated at 50 %":
        cut = len(data) // 2
        dest.write_bytes(bytes(data[:cut]))
        return Damage(set(range(cut // PAGE + 2, pages + 1)), cut // PAGE + 1, cut % PAGE)
    if case == "table root page overwritten":
        lost = {root}
    elif case == "one interior page overwritten":
        lost = {rng.choice([n for n in interior if n != root])}
    else:
        lost = set(rng.sample(range(2, pages + 1), 3))
    for p in lost:
        data[(p - 1) * PAGE:p * PAGE] = rng.randbytes(PAGE)
    dest.write_bytes(bytes(data))
    return Damage(lost)


def old_code(tmp: Path) -> Path:
    """The qwenmem package as it was before the page reader (git archive of OLD_COMMIT)."""
    where = tmp / "old"
    where.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", OLD_COMMIT, "qwenmem"], capture_output=True,
                             check=True)
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive.stdout, check=True)
    return where


def salvage(ws: Path, code: Path) -> tuple[dict, int]:
    env = dict(os.environ, PYTHONPATH=str(code), QWENMEM_SQLITE3="/nonexistent")  # the old code: no shell
    run = subprocess.run([sys.executable, "-m", "qwenmem", "-w", str(ws), "history", "salvage", "--json"],
                         capture_output=True, text=True, env=env, cwd=code)  # `-m` puts the cwd first on sys.path
    if run.returncode not in (0, 1):
        raise SystemExit(f"salvage failed ({run.returncode}): {run.stderr}")
    return json.loads(run.stdout)["result"], run.returncode


def workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "sessions").mkdir(parents=True)
    for name in WORKSPACE_FILES:
        shutil.copyfile(CORPUS / name, ws / name)
    return ws


def _set_aside(py: str, live: Path) -> str:
    aside = driver(py, "open", str(live))["quarantined_to"]
    if not aside:
        raise SystemExit(f"QwenPaw did not set {live} aside (the damage missed every check)")
    return Path(aside).name


def run_case(original: Path, tmp: Path, kind: str, seed: int, real: bool, py: str, old: Path) -> dict:
    by_seq = {r[0]: r for r in rows_of(original)}
    pages_of = layout(original)
    out: dict = {"case": kind + (f" (seed {seed})" if kind == "three pages overwritten" else "")
                 + (", set aside by QwenPaw" if real else "")}
    for label, code in (("old", old), ("new", REPO)):
        ws = workspace(tmp / f"{kind}-{seed}-{real}-{label}")
        live = ws / "history.db"
        lost = damage(original, live, kind, seed)
        if real:
            out["set_aside_as"] = _set_aside(py, live)
        result, rc = salvage(ws, code)
        got = rows_of(live)
        exact = {r for r in got if by_seq.get(r[0]) == r}
        out["original"] = len(by_seq)
        out["on_pages"] = sum(1 for cell in pages_of.values() if lost.readable(cell))
        out[f"recovered_{label}"] = len(exact)
        out[f"invented_{label}"] = len(got) - len(exact)
        out[f"exit_{label}"] = rc
        out[f"action_{label}"] = result["action"]
        if label == "new" and result["sources"]:
            src = result["sources"][0]
            out["cut"] = src["partial_rows"]
            out["missing_named"] = len(src["missing_seqs"])
            out["lost_pages"] = src["lost_pages"]
    return out


def run_wal_case(original: Path, tmp: Path, py: str, old: Path, rows: int) -> dict:
    """Rows committed only in the -wal of a store QwenPaw set aside (renamed with its -wal)."""
    base = tmp / "wal-base.db"
    copy_db(original, base)
    snap = tmp / "wal-snapshot.db"
    grown = driver(py, "grow-open", str(base), str(rows), "7", str(snap))
    conn = sqlite3.connect(f"file:{snap}?mode=ro", uri=True)  # SQLite reads the copy's -wal (it may add a -shm)
    all_rows = {r[0]: r for r in conn.execute("SELECT * FROM conversation_history")}
    conn.close()
    only_wal = len(all_rows) - len(rows_of_main_only(snap, tmp))
    out: dict = {"case": f"WAL-only rows ({only_wal:,} rows committed only in the -wal), set aside with its -wal",
                 "original": len(all_rows), "on_pages": len(all_rows), "wal_rows_written": grown["written"]}
    for label, code in (("old", old), ("new", REPO)):
        ws = workspace(tmp / f"wal-{label}")
        aside = ws / "history.db.corrupt-20261201T120000"
        shutil.copyfile(snap, aside)
        shutil.copyfile(Path(f"{snap}-wal"), Path(f"{aside}-wal"))
        conn = sqlite3.connect(str(ws / "history.db"))  # the empty store QwenPaw starts after the rename
        conn.executescript(_EMPTY_SCHEMA)
        conn.close()
        result, rc = salvage(ws, code)
        got = rows_of(ws / "history.db")
        exact = {r for r in got if all_rows.get(r[0]) == r}
        out[f"recovered_{label}"] = len(exact)
        out[f"invented_{label}"] = len(got) - len(exact)
        out[f"exit_{label}"] = rc
        out[f"action_{label}"] = result["action"]
        if label == "new" and result["sources"]:
            src = result["sources"][0]
            out["cut"], out["missing_named"], out["lost_pages"] = (src["partial_rows"], len(src["missing_seqs"]),
                                                                   src["lost_pages"])
            out["from_wal"] = src["rows_from_wal"]
    return out


def rows_of_main_only(db: Path, tmp: Path) -> set[tuple]:
    """The rows of the main file alone (its -wal left out)."""
    alone = tmp / "main-only.db"
    shutil.copyfile(db, alone)
    return rows_of(alone)


def _schema_sql() -> str:
    sys.path.insert(0, str(REPO))
    from qwenmem.core.history.salvage import SCHEMA

    return SCHEMA


_EMPTY_SCHEMA = ""


def table(results: list[dict]) -> str:
    lines = ["| damaged store | original rows | rows on pages | old fallback (b-tree scan), exit | page reader, exit "
             "| cut (named, not written) | named missing / lost leaf pages | not identical to an original |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        pct = 100 * r["recovered_new"] / r["on_pages"] if r["on_pages"] else 100.0
        lines.append(f"| {r['case']} | {r['original']:,} | {r['on_pages']:,} | {r['recovered_old']:,}, "
                     f"{r['exit_old']} | {r['recovered_new']:,} ({pct:.1f} %), {r['exit_new']} | {r.get('cut', 0)} | "
                     f"{r.get('missing_named', 0)} / {r.get('lost_pages', 0)} | "
                     f"{r['invented_old'] + r['invented_new']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    global _EMPTY_SCHEMA
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--make-venv", type=Path, help="create a venv with qwenpaw==2.2.2.post1 there, then exit")
    ap.add_argument("--qwenpaw-python", help="an interpreter with qwenpaw==2.2.2.post1 (see --make-venv)")
    ap.add_argument("--rows", type=int, default=6028, help="rows QwenPaw appends to the corpus store")
    ap.add_argument("--wal-rows", type=int, default=150, help="rows QwenPaw appends that stay in the -wal")
    ap.add_argument("--write", action="store_true", help="record the table in bench/RESULTS.md")
    args = ap.parse_args(argv)
    if args.make_venv:
        make_venv(args.make_venv)
        return 0
    if not args.qwenpaw_python:
        ap.error("--qwenpaw-python is required (make one with --make-venv DIR)")
    if not (CORPUS / "history.db").is_file():
        raise SystemExit(f"the generated 2.x corpus is missing: {CORPUS}")
    _EMPTY_SCHEMA = _schema_sql()
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    with tempfile.TemporaryDirectory(prefix="qwenmem-salvage-bench-") as tmp_name:
        tmp = Path(tmp_name)
        old = old_code(tmp)
        original = tmp / "original.db"
        copy_db(CORPUS / "history.db", original)
        grown = driver(args.qwenpaw_python, "grow", str(original), str(args.rows), "1")
        conn = sqlite3.connect(str(original))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        results = []
        for kind, seed, real in (("table root page overwritten", 1, False), ("one interior page overwritten", 1, False),
                                 ("truncated at 50 %", 1, False), ("three pages overwritten", 1, False),
                                 ("three pages overwritten", 2, False), ("truncated at 50 %", 1, True)):
            results.append(run_case(original, tmp, kind, seed, real, args.qwenpaw_python, old))
            print(json.dumps(results[-1]), flush=True)
        results.append(run_wal_case(original, tmp, args.qwenpaw_python, old, args.wal_rows))
        print(json.dumps(results[-1]), flush=True)
        size = original.stat().st_size
        root, interior = _table_pages(original)
    md = "\n".join([
        "## History database salvage (issue 14, issue 23 item 2)", "",
        f"Command: `python bench/quality/history_salvage_bench.py --qwenpaw-python /tmp/qwenpaw2-venv/bin/python --rows "
        f"{args.rows} --wal-rows {args.wal_rows} --write` (venv: `--make-venv /tmp/qwenpaw2-venv`); load average at "
        f"the start {' '.join(load)} (busy shared machine: counts, not timings, are the result).", "",
        f"Intact original: the generated corpus's history.db plus {grown['written']:,} rows in {grown['sessions']} "
        f"sessions appended by QwenPaw 2.2.2.post1's `HistoryStore` ({size / 2**20:.1f} MiB, {size // PAGE:,} pages; "
        f"the table's root is page {root}, {len(interior)} interior pages). \"Rows on pages\" = rows whose leaf cell "
        "and whole overflow chain lie on bytes the damage left intact (from the original's dbstat layout). \"Old "
        f"fallback\" = `history salvage` of commit {OLD_COMMIT} without a `.recover`-capable sqlite3 (SQLite's b-tree "
        "scan), \"page reader\" = `history salvage` now (qwenmem's own reader of the file format, no sqlite3 shell); "
        "both count rows in the live store afterwards that are byte-identical to an original row. Exit 1 = partial: "
        "rows known to exist were not recovered (the old code said 0).", "",
        table(results), "",
        "Reading: a destroyed root or interior page hides the rows under it from the b-tree scan, and a cut file the "
        "subtrees whose interior pages were past the cut, while the page reader finds every leaf by its record shape. "
        "\"Cut\" rows are those whose leaf cell survives but whose overflow chain the damage hit: named by seq, not "
        "written, what could be read kept in the quarantine (`cut-rows.jsonl`). \"Named missing\" rows are those the "
        "store's indexes (or full-text table) name but no page holds whole, \"lost leaf pages\" leaves of the table "
        "the b-tree points at that are gone: either makes the run exit 1.", "",
    ])
    print(md)
    if args.write:
        sys.path.insert(0, str(HERE.parents[1]))
        from bench._results import update_section

        update_section("history-salvage", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
