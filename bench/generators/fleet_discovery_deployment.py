"""Generate a fleet deployment for the discovery bench (bench/speed/fleet_discovery.py): N agent workspaces in
one directory, mixed 1.x and 2.x, some damaged, hard-linked so 10,000 take a minute (fleet_deployment.py copies).

    python bench/generators/fleet_discovery_deployment.py /tmp/qm-fleet-deploy --count 10000 [--share-2x 0.3] [--damaged 0.05]

* 1.x: `wsNNNNN/`, the bundled sample workspace (qwenmem/sample/workspace).
* 2.x: `rootNNNNN/`, a QwenPaw root (config.json, workspaces/default/) made from the generated 2.x corpus
  workspace (corpus/generated/qwenpaw-2.2.2/root), history.db included.
* damaged (a share of both): agent.json cut in the middle, or a session file cut in the middle.

Files are hard links to one writable template copy kept in `DIR/.templates` (a dot-folder, which discovery skips),
so 10,000 workspaces take a minute and little disk; a damaged file is a file of its own. Because the links share
their data, use the deployment for discovery and read-only commands (`--dry-run`, doctor, `--check`) only: a
command that writes in place (SQLite writes history.db pages in place) would write every workspace's copy.
The corpus itself is copied, never linked, so nothing run here can touch it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import stat
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "qwenmem" / "sample" / "workspace"
CORPUS_2X = Path(os.environ.get("QWENMEM_SHARED", REPO.parent / "shared")) / "corpus/generated/qwenpaw-2.2.2/root"


def _writable_copy(source: Path, dest: Path) -> None:
    shutil.copytree(source, dest, symlinks=True)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def templates(base: Path) -> tuple[Path, Path]:
    one, two = base / ".templates" / "1x", base / ".templates" / "2x"
    if not one.exists():
        _writable_copy(SAMPLE, one)
    if not two.exists():
        if not CORPUS_2X.is_dir():
            sys.exit(f"the 2.x corpus workspace is not at {CORPUS_2X} (set QWENMEM_SHARED)")
        _writable_copy(CORPUS_2X, two)
        for sidecar in two.rglob("history.db-*"):  # a closed database: the -wal/-shm of the generating run
            sidecar.unlink()
    return one, two


def _link_tree(source: Path, dest: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(source):
        target = dest / Path(dirpath).relative_to(source)
        target.mkdir(parents=True, exist_ok=True)
        for name in filenames:
            os.link(Path(dirpath) / name, target / name)


def _cut(path: Path) -> None:
    """Replace a hard link by a file of its own holding the first half of the data (a crash mid-write)."""
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data[: len(data) // 2])


def _damage(ws: Path, rng: random.Random, session: Path) -> str:
    if rng.random() < 0.5:
        _cut(ws / "agent.json")
        return "agent.json"
    _cut(session)
    return "session"


def _first_session(ws: Path) -> Path:
    return next(p for p in sorted((ws / "sessions").rglob("*.json")))


def generate(base: Path, count: int, share_2x: float, damaged: float, seed: int = 27) -> dict[str, int]:
    """Make the deployment (skipped when one of this size and mix is there already); return what it holds."""
    marker = base / f".generated-{count}-{share_2x}-{damaged}"
    if marker.exists():
        return json.loads(marker.read_text())
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    one, two = templates(base)
    rng = random.Random(seed)
    counts = {"1.x": 0, "2.x": 0, "damaged": 0}
    for i in range(count):
        if rng.random() < share_2x:
            root = base / f"root{i:05d}"
            _link_tree(two, root)
            ws, counts["2.x"] = root / "workspaces" / "default", counts["2.x"] + 1
        else:
            ws = base / f"ws{i:05d}"
            _link_tree(one, ws)
            counts["1.x"] += 1
        if rng.random() < damaged:
            _damage(ws, rng, _first_session(ws))
            counts["damaged"] += 1
    marker.write_text(json.dumps(counts))
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--share-2x", type=float, default=0.3)
    ap.add_argument("--damaged", type=float, default=0.05)
    args = ap.parse_args()
    start = time.perf_counter()
    counts = generate(args.dir, args.count, args.share_2x, args.damaged)
    print(f"{args.dir}: {counts} in {time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
