"""Benchmark `qwenmem dream` (deterministic mode) and record it in bench/RESULTS.md, section "dream".

Run once:  /work/main/.venv/bin/python bench/speed/dream_bench.py
Cases: the three real MEMORY.md files with their daily logs; a synthetic 1,411-entry, ~660 KB MEMORY.md with 64
exact duplicates (the size reported in phantombot#410); the same with near-duplicate detection by the real
all-MiniLM-L6-v2 model; and the cold wall time of the CLI on the sample workspace.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from bench._results import update_section  # noqa: E402

from qwenmem.core.dream.consolidate import consolidate  # noqa: E402

REAL = ROOT.parent / "shared" / "corpus" / "real"
CASES = {"DrifterM__swqhyjs__fda458a": "2026-03-12", "zzjmay123__aiWorkflow__fb53935": "2026-04-04",
         "agentemateofg__digital-brain__4af1256": "2026-03-13"}


def best_of(fn, runs: int = 5) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def synthetic(entries: int = 1411, duplicates: int = 64, seed: int = 410) -> str:
    rng = random.Random(seed)
    words = ("deploy staging pool postgres pgbouncer worker queue retry cache token budget user prefers answers "
             "english chinese travel berlin hotel meeting report invoice backup cron timezone").split()
    facts = []
    for i in range(entries - duplicates):
        body = " ".join(rng.choice(words) for _ in range(rng.randint(60, 80)))
        facts.append(f"- fact {i}: {body}.")
    facts += rng.sample(facts, duplicates)
    rng.shuffle(facts)
    sections = ["# Long-Term Memory\n"]
    for s in range(0, len(facts), 200):
        sections.append(f"\n## Notes {s // 200 + 1}\n" + "\n".join(facts[s:s + 200]) + "\n")
    return "".join(sections)


def main() -> None:
    rows = ["| case | MEMORY.md | entries | removed | merged | replaced | added | time (best of 5) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]

    def row(name, text, out, seconds, entries):
        counts = {a: sum(c.action == a for c in out.changes) for a in ("removed", "merged", "replaced", "added")}
        rows.append(f"| {name} | {len(text.encode()):,} B | {entries} | {counts['removed']} | {counts['merged']} | "
                    f"{counts['replaced']} | {counts['added']} | {seconds * 1000:.1f} ms |")

    from qwenmem.core.dream.markdown import parse

    for name, day in CASES.items():
        text = (REAL / name / "MEMORY.md").read_text(encoding="utf-8")
        log = (REAL / name / "memory" / f"{day}.md").read_text(encoding="utf-8")
        seconds, out = best_of(lambda: consolidate(text, log, day))
        row(f"real `{name.split('__')[0]}` + log {day}", text, out, seconds, len(parse(text).items))
    big = synthetic()
    seconds, out = best_of(lambda: consolidate(big, None, "2026-11-30"))
    row("synthetic phantombot#410 size (64 exact dups)", big, out, seconds, len(parse(big).items))

    from dream_embedder import MiniLMEmbedder

    t = time.perf_counter()
    embedder = MiniLMEmbedder()
    load = time.perf_counter() - t
    seconds, out = best_of(lambda: consolidate(big, None, "2026-11-30", embedder, 0.9), runs=1)
    row("same + near-dups, all-MiniLM-L6-v2 on CPU", big, out, seconds, len(parse(big).items))

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        shutil.copytree(ROOT / "qwenmem" / "sample" / "workspace", ws)
        cmd = [sys.executable, "-m", "qwenmem", "dream", "-w", str(ws), "--mode", "deterministic", "--date",
               "2026-11-26", "--dry-run", "--quiet"]
        cli, _ = best_of(lambda: subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True))
    md = "\n".join(rows) + (f"\n\nModel load for the near-duplicate case: {load:.1f} s (not included above). "
                            f"Cold CLI `qwenmem dream --dry-run` on the sample workspace: {cli * 1000:.0f} ms "
                            "(best of 5, includes interpreter start).\n\nCommand: `python bench/speed/dream_bench.py`.")
    update_section("dream", md)
    print(md)


if __name__ == "__main__":
    main()
