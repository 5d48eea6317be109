"""A fleet deployment for `qwenmem fleet` benches: N agent workspaces in one directory, mixed 1.x and 2.x, some
damaged (fleet_throughput.py; named apart from any discovery generator).

    python bench/generators/fleet_deployment.py DEST --count 1000 [--seed 27]

Each entry of DEST is one of (by a seeded draw, in these shares):
  * 1.x, healthy (45%): the bundled sample workspace without its damaged session;
  * 1.x, damaged (15%): the bundled sample as it is (one truncated session, `telegram/77_telegram--77`);
  * 2.x, healthy (30%): a QwenPaw root copied from shared/corpus/generated/qwenpaw-2.2.2/root (agent `default`,
    history.db, sessions, ReMe's mem_metadata);
  * 2.x, damaged (10%): that root with one session file cut in half.
The corpus is only read. A `.generated` file records the count and seed, so a second call with the same ones is
free and one with others starts afresh.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "qwenmem" / "sample" / "workspace"
DAMAGED_1X = "sessions/telegram/77_telegram--77.json"
CORPUS_2X = Path("/work/shared/corpus/generated/qwenpaw-2.2.2/root")
CUT_2X = "workspaces/default/sessions/telegram/7_telegram--7.json"
KINDS = (("1x-healthy", 45), ("1x-damaged", 15), ("2x-healthy", 30), ("2x-damaged", 10))


def generate(dest: Path, count: int, seed: int = 27, corpus_2x: Path = CORPUS_2X) -> dict[str, int]:
    """Make (or reuse) the deployment; the number of entries of each kind."""
    marker = dest / ".generated"
    wanted = {"count": count, "seed": seed}
    if marker.exists() and json.loads(marker.read_text())["params"] == wanted:
        kinds: dict[str, int] = json.loads(marker.read_text())["kinds"]
        return kinds
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    rng = random.Random(seed)
    names, weights = zip(*KINDS)
    kinds = dict.fromkeys(names, 0)
    for i in range(count):
        kind = rng.choices(names, weights)[0]
        kinds[kind] += 1
        _make(dest / f"{kind[:2]}-{i:05d}", kind, corpus_2x)
    marker.write_text(json.dumps({"params": wanted, "kinds": kinds}))
    return kinds


def _make(path: Path, kind: str, corpus_2x: Path) -> None:
    if kind.startswith("1x"):
        shutil.copytree(SAMPLE, path)
        if kind == "1x-healthy":
            (path / DAMAGED_1X).unlink()
        return
    shutil.copytree(corpus_2x, path)
    if kind == "2x-damaged":
        cut = path / CUT_2X
        data = cut.read_bytes()
        cut.write_bytes(data[: len(data) // 2])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dest", type=Path)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=27)
    args = ap.parse_args()
    print(json.dumps(generate(args.dest, args.count, args.seed)))


if __name__ == "__main__":
    main()
