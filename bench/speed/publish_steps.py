"""Publish steps per command, before and after issue 24 (items 4-6): each command runs under strace on a fresh copy
of the 2.x corpus (../shared/corpus/generated/qwenpaw-2.2.2), and tests/publish_trace.py counts its renames, links,
mkdirs and fsyncs and the gaps in the protocol. `--old REF` also runs the code of that git ref (e.g. the commit
before the fix) from a `git archive` copy, for the "before" column.

    python bench/speed/publish_steps.py --old 4e4baa8 --write
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

import publish_trace as pt  # noqa: E402
from tests.contract.test_publish_trace import ENV, GEN2_COMMANDS, _gen2  # noqa: E402


def _row(name: str, rep: pt.Report) -> str:
    c, k = rep.counts, rep.kinds()
    return (f"{c['rename']} | {c['link']} | {c['mkdir']} | {c['fsync_file']} | {c['fsync_dir']} | "
            f"{k['unsynced-source']} | {k['unsynced-file']} | {k['mkdir-not-synced']} | "
            f"{k['entry-not-synced'] - k['mkdir-not-synced']} | {k['order']}")


def measure(repo: Path) -> dict[str, pt.Report]:
    out = {}
    for name, (args, prepare) in sorted(GEN2_COMMANDS.items()):
        with tempfile.TemporaryDirectory() as tmp:
            ws = _gen2(Path(tmp))
            if prepare:
                prepare(ws)
            traced = pt.trace_cli(ws, *args, env=ENV, repo=repo)
            if traced.code not in (0, 1):
                raise SystemExit(f"{name}: exit {traced.code}: {traced.stderr}")
            out[name] = traced.report
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", help="a git ref to measure as 'before'")
    ap.add_argument("--write", action="store_true", help="record the table in bench/RESULTS.md")
    a = ap.parse_args()
    runs = {"after": measure(REPO)}
    if a.old:
        with tempfile.TemporaryDirectory() as old:
            subprocess.run(f"git -C {REPO} archive {a.old} | tar -x -C {old}", shell=True, check=True)
            runs = {"before": measure(Path(old)), **runs}
    head = ("| command | code | renames | links | mkdirs | file fsyncs | dir fsyncs | unsynced rename/link sources "
            "| written, never fsynced | mkdirs not fsynced in parent | other names not fsynced in dir | "
            "published before a dependency was durable |\n|---|---|" + "---|" * 10)
    lines = [head]
    for name in sorted(GEN2_COMMANDS):
        for label, reports in runs.items():
            lines.append(f"| {name} | {label} | {_row(name, reports[name])} |")
    with open("/proc/loadavg") as fh:
        load = fh.read().split()[:3]
    table = "\n".join(lines)
    print(table)
    args = " ".join(f"`{n}`: `qwenmem {' '.join(GEN2_COMMANDS[n][0])}`" for n in sorted(GEN2_COMMANDS))
    note = (f"## Publish steps per command (issue 24, items 4-6)\n\n`python bench/speed/publish_steps.py"
            f"{' --old ' + a.old if a.old else ''} --write` (strace -f of each command on a fresh copy of the 2.x "
            f"corpus; counts and gaps as tests/publish_trace.py defines them; load average {' '.join(load)}). "
            f"Commands: {args}. \"before\" is {a.old or '-'}; the gaps columns must be 0 after (the test "
            "tests/contract/test_publish_trace.py fails otherwise).\n\n" + table)
    if a.write:
        sys.path.insert(0, str(REPO))
        from bench._results import update_section

        update_section("publish-steps", note)


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    main()
