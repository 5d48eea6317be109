"""How many rows `qwenmem history salvage` gets back from damaged history.db stores, out of the rows a page-level scan
could read and out of the rows of the intact original (issue 14, "History database").

    python bench/history_salvage_bench.py --make-venv /tmp/qwenpaw2-venv    # once: qwenpaw==2.2.2.post1 (+5 deps)
    python bench/history_salvage_bench.py --qwenpaw-python /tmp/qwenpaw2-venv/bin/python [--rows 3000] [--write]

The intact original is the generated 2.x corpus's history.db (written by QwenPaw 2.2.2.post1, ../shared/corpus/
generated/qwenpaw-2.2.2, read from a copy) grown to `--rows` more rows by QwenPaw's own `HistoryStore.append` /
`append_many` (bench/history_qwenpaw_driver.py), so every page is laid out by QwenPaw's code. Damaged stores:

* truncated: the file cut at a seeded fraction of its size (not page-aligned);
* overwritten pages: random bytes over 3 pages at seeded positions (page 1, the schema, excluded), as the live store;
* overwritten interior page: random bytes over one seeded interior page of the table's b-tree (its leaves intact);
* real .corrupt-<ts>: a damaged copy opened by QwenPaw's own `HistoryStore` (quick_check fails, it renames the
  file aside and starts an empty store, spec §3.6); qwenmem then salvages the set-aside file into that live store.

For each: rows in the intact original; rows a page-level scan can read (the oracle: rows whose leaf cell and whole
overflow chain lie on pages the damage left intact, from the original's dbstat layout); rows qwenmem salvaged with
the page-level tool (sqlite3 `.recover`) and with the b-tree scan fallback; and rows salvaged that are not
byte-identical to an original row (invented or half-read; must be 0). Only copies are opened.
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
REPO = HERE.parent
CORPUS = REPO.parent / "shared" / "corpus" / "generated" / "qwenpaw-2.2.2" / "root" / "workspaces" / "default"
DRIVER = HERE / "history_qwenpaw_driver.py"
QWENPAW = ["qwenpaw==2.2.2.post1"]
# what HistoryStore's import chain needs (qwenpaw's full dependency tree is not needed for scroll/history.py)
QWENPAW_DEPS = ["python-dotenv", "apscheduler", "pydantic", "shortuuid", "pyyaml", "json-repair"]
PAGE = 4096
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


def damage(original: Path, dest: Path, case: str, seed: int) -> Damage:
    data = bytearray(original.read_bytes())
    pages = len(data) // PAGE
    rng = random.Random(seed)
    if case == "truncated":
        cut = int(len(data) * rng.uniform(0.2, 0.9))
        dest.write_bytes(bytes(data[:cut]))
        return Damage(set(range(cut // PAGE + 2, pages + 1)), cut // PAGE + 1, cut % PAGE)
    if case == "overwritten interior page":
        conn = sqlite3.connect(f"file:{original}?mode=ro", uri=True)
        interior = [n for (n,) in conn.execute("SELECT pageno FROM dbstat WHERE name = 'conversation_history' AND "
                                               "pagetype = 'internal' ORDER BY pageno")]
        conn.close()
        lost = {rng.choice(interior)}
    else:
        lost = set(rng.sample(range(2, pages + 1), 3))
    for p in lost:
        data[(p - 1) * PAGE:p * PAGE] = rng.randbytes(PAGE)
    dest.write_bytes(bytes(data))
    return Damage(lost)


def salvage(ws: Path, page_level: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    if not page_level:
        env["QWENMEM_SQLITE3"] = "/nonexistent"  # forces the b-tree scan fallback
    run = subprocess.run([sys.executable, "-m", "qwenmem", "-w", str(ws), "history", "salvage", "--json"],
                         capture_output=True, text=True, env=env)
    if run.returncode != 0:
        raise SystemExit(f"salvage failed ({run.returncode}): {run.stderr}")
    return json.loads(run.stdout)["result"]


def workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "sessions").mkdir(parents=True)
    for name in WORKSPACE_FILES:
        shutil.copyfile(CORPUS / name, ws / name)
    return ws


def run_case(original: Path, tmp: Path, kind: str, seed: int, real: bool, py: str | None) -> dict:
    by_seq = {r[0]: r for r in rows_of(original)}
    pages_of = layout(original)
    out: dict = {"case": ("real .corrupt-<ts> after " if real else "") + f"{kind} (seed {seed})"}
    for page_level in (True, False):
        ws = workspace(tmp / f"{kind}-{seed}-{real}-{page_level}")
        live = ws / "history.db"
        lost = damage(original, live, kind, seed)
        if real:
            assert py is not None
            aside = driver(py, "open", str(live))["quarantined_to"]
            if not aside:
                raise SystemExit(f"QwenPaw did not set {kind} seed {seed} aside (the damage missed every check)")
            out["set_aside_as"] = Path(aside).name
        result = salvage(ws, page_level)
        got = rows_of(live)
        exact = {r for r in got if by_seq.get(r[0]) == r}
        out["original"] = len(by_seq)
        out["page_level_readable"] = sum(1 for cell in pages_of.values() if lost.readable(cell))
        key = "tool" if page_level else "scan"
        out[f"salvaged_{key}"] = len(exact)
        out[f"invented_{key}"] = len(got) - len(exact)
        out[f"method_{key}"] = result["sources"][0]["method"] if result["sources"] else None
        out[f"partial_{key}"] = result["sources"][0]["partial_rows"] if result["sources"] else 0
        if page_level:
            out["tool"] = result["sources"][0]["tool"] if result["sources"] else None
            out["action"] = result["action"]
    return out


def table(results: list[dict]) -> str:
    lines = ["| damaged store | original rows | readable by a page-level scan | salvaged, sqlite3 `.recover` | "
             "salvaged, b-tree scan | reported as cut, not written (tool / scan) | not identical to an original row |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        pct = 100 * r["salvaged_tool"] / r["page_level_readable"] if r["page_level_readable"] else 100.0
        lines.append(f"| {r['case']} | {r['original']:,} | {r['page_level_readable']:,} | {r['salvaged_tool']:,} "
                     f"({pct:.1f} %) | {r['salvaged_scan']:,} | {r['partial_tool']} / {r['partial_scan']} | "
                     f"{r['invented_tool'] + r['invented_scan']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--make-venv", type=Path, help="create a venv with qwenpaw==2.2.2.post1 there, then exit")
    ap.add_argument("--qwenpaw-python", help="an interpreter with qwenpaw==2.2.2.post1 (see --make-venv)")
    ap.add_argument("--rows", type=int, default=3000, help="rows QwenPaw appends to the corpus store")
    ap.add_argument("--seeds", type=int, default=4, help="seeds per damage kind")
    ap.add_argument("--write", action="store_true", help="record the table in bench/RESULTS.md")
    args = ap.parse_args(argv)
    if args.make_venv:
        make_venv(args.make_venv)
        return 0
    if not args.qwenpaw_python:
        ap.error("--qwenpaw-python is required (make one with --make-venv DIR)")
    if not (CORPUS / "history.db").is_file():
        raise SystemExit(f"the generated 2.x corpus is missing: {CORPUS}")
    with tempfile.TemporaryDirectory(prefix="qwenmem-salvage-bench-") as tmp_name:
        tmp = Path(tmp_name)
        original = tmp / "original.db"
        copy_db(CORPUS / "history.db", original)
        grown = driver(args.qwenpaw_python, "grow", str(original), str(args.rows), "1")
        conn = sqlite3.connect(str(original))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        results = []
        for kind in ("truncated", "overwritten pages", "overwritten interior page"):
            for seed in range(1, args.seeds + 1):
                results.append(run_case(original, tmp, kind, seed, False, args.qwenpaw_python))
                print(json.dumps(results[-1]), flush=True)
        for kind, seed in (("truncated", 1), ("overwritten pages", 2), ("overwritten interior page", 1)):
            results.append(run_case(original, tmp, kind, seed, True, args.qwenpaw_python))
            print(json.dumps(results[-1]), flush=True)
        size = original.stat().st_size
        conn = sqlite3.connect(f"file:{original}?mode=ro", uri=True)
        interior = [n for (n,) in conn.execute("SELECT pageno FROM dbstat WHERE name = 'conversation_history' AND "
                                               "pagetype = 'internal' ORDER BY pageno")]
        conn.close()
    tools = sorted({r["tool"] for r in results if r.get("tool")})
    md = "\n".join([
        "## History database salvage (issue 14)", "",
        f"Command: `python bench/history_salvage_bench.py --qwenpaw-python /tmp/qwenpaw2-venv/bin/python --rows "
        f"{args.rows} --seeds {args.seeds} --write` (venv: `--make-venv /tmp/qwenpaw2-venv`).", "",
        f"Intact original: the generated corpus's history.db plus {grown['written']:,} rows in {grown['sessions']} "
        f"sessions appended by QwenPaw 2.2.2.post1's `HistoryStore` ({size / 2**20:.1f} MiB). Page-level tool: "
        f"{', '.join(tools) or 'none found'}. \"Readable by a page-level scan\" = rows whose leaf cell and whole "
        "overflow chain lie on pages the damage left intact (from the original's dbstat layout). Salvaged = rows "
        "in the live store after `qwenmem history salvage` that are byte-identical to an original row.", "",
        table(results), "",
        f"Reading: the table's b-tree has {len(interior)} interior pages (pages {', '.join(map(str, interior))} of "
        f"{size // PAGE:,}); a truncation that cuts the interior pages below the root leaves the b-tree scan only "
        "the subtrees still attached (none when all are cut), and a destroyed "
        "interior page hides its whole subtree from it, while `.recover` reads every leaf it finds (the scan's "
        "rows are added to the tool's, so it never gets fewer). \"Reported as cut\" are rows whose overflow chain "
        "the damage hit: their leaf cell reads with its tail missing, so qwenmem names them and does not write them "
        "(their bytes are in the quarantine); with overwritten pages they are exactly the rows the oracle counts "
        "as unreadable.", "",
    ])
    print(md)
    if args.write:
        sys.path.insert(0, str(HERE))
        from _results import update_section

        update_section("history-salvage", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
