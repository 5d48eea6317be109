"""QwenPaw 2.x reading speed: cold `sessions list` and `sessions show --history` on a generated bench workspace
(1,000 scroll sessions, history.db of 1,000,000 rows, one session of 20,000 rows).

    python bench/qwenpaw2_bench.py [--dest /tmp/qwenpaw2_bench] [--runs 5]
Targets (issue 13): `sessions list` median ≤ 1.5 s; `sessions show --history` of the 20,000-row session ≤ 1 s.
Each run is a fresh `python -m qwenmem` process; the data lives outside the repository.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _results import update_section  # noqa: E402
from qwenpaw2_gen import generate  # noqa: E402
from sessions_list_bench import run_once  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dest", type=Path, default=Path("/tmp/qwenpaw2_bench"))
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    ws = a.dest / "workspace"
    if not (ws / "history.db").is_file():
        t = time.perf_counter()
        facts = generate(a.dest, 1000, 1_000_000, 20_000)
        print(f"generated {json.dumps(facts)} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    db_mb = (ws / "history.db").stat().st_size / 2**20
    cases = [("`sessions list`", ["sessions", "list"]), ("`sessions list --json`", ["sessions", "list", "--json"]),
             ("`sessions show console:user0000 --history`", ["sessions", "show", "console:user0000", "--history"]),
             ("`sessions show console:user0000 --history --json`",
              ["sessions", "show", "console:user0000", "--history", "--json"])]
    lines = ["| command | median | range | peak RSS |", "|---|---|---|---|"]
    for label, args in cases:
        walls, rss = [], []
        for _ in range(a.runs):
            w, r = run_once(["-w", str(ws), *args])
            walls.append(w)
            rss.append(r)
        med = statistics.median(walls)
        print(f"{label}: median {med:.2f}s ({min(walls):.2f}-{max(walls):.2f}), peak RSS {max(rss):.0f} MiB",
              file=sys.stderr)
        lines.append(f"| {label} | {med:.2f} s | {min(walls):.2f}–{max(walls):.2f} s | {max(rss):.0f} MiB |")
    text = ("QwenPaw 2.x workspace from `bench/qwenpaw2_gen.py`: 1,000 scroll session files (20-message live tail "
            f"each), `history.db` of 1,000,000 rows ({db_mb:.0f} MiB), one session of 20,000 rows. {a.runs} cold "
            "processes each, output to /dev/null. Targets: list ≤ 1.5 s, show --history ≤ 1 s.\n\n"
            "Command: `python bench/qwenpaw2_bench.py`\n\n" + "\n".join(lines))
    update_section("qwenpaw2-read", "## QwenPaw 2.x: sessions list / show --history\n\n" + text)


if __name__ == "__main__":
    main()
