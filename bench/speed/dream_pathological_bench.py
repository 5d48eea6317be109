"""`dream --dry-run` on pathological MEMORY.md files (issue 10 item 6: one mutated file ran past 20 s).

Each shape once, in a fresh process, with the time it took; a shape that needs more than TIMEOUT s is reported as such.
Run: nice python bench/speed/dream_pathological_bench.py   (results go to bench/RESULTS.md by hand)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

TIMEOUT = 60
SHAPES = {
    "run of '['": "[" * 200_000,
    "run of blanks in an entry": "- a" + " " * 500_000 + "b",
    "run of blanks in a heading": "# a" + " " * 200_000 + "b\n- x",
    "blanks before an unclosed citation": "- fact" + " " * 300_000 + "(from [[x",
    "table row of blanks": "|" + " " * 200_000 + "x",
    "20,000 items nested up to 200 deep": "\n".join("  " * (i % 200) + "- item" for i in range(20_000)),
    "20,000 distinct entries": "\n".join(f"- fact number {i} about things" for i in range(20_000)),
}


def main() -> None:
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=repo + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name, text in SHAPES.items():
        with tempfile.TemporaryDirectory() as ws:
            with open(os.path.join(ws, "MEMORY.md"), "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
            start = time.perf_counter()
            try:
                code = subprocess.run([sys.executable, "-m", "qwenmem", "-w", ws, "dream", "--dry-run", "--quiet"],
                                      env=env, capture_output=True, timeout=TIMEOUT).returncode
                took = f"{time.perf_counter() - start:6.1f} s (exit {code})"
            except subprocess.TimeoutExpired:
                took = f"> {TIMEOUT} s"
        print(f"| {name} | {len(text):,} | {took} |")


if __name__ == "__main__":
    main()
