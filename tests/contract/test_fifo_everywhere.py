"""A FIFO where a file should be never blocks qwenmem (issue 24 §10): not the library called in-process, as fleet's
workers call it, nor the CLI. Each case puts a FIFO (no writer: an open would block for ever) at one file qwenmem
reads, in a copy of the generated 2.2.2 workspace, and runs every fleet operation in one child process and then CLI
commands, each under a timeout guard.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from helpers import REPO, run_cli
from qwenpaw2_support import copy_corpus, needs_gen2_corpus

pytestmark = needs_gen2_corpus

LIBRARY = textwrap.dedent("""
    import sys
    from qwenmem.cli.app import fleet_command as parse_words
    from qwenmem.core.fleet.operations import OPERATIONS
    from qwenmem.core.workspace import discover_workspace
    for words in ["doctor", "sessions repair --check", "compact --check", "reindex --embedder none",
                  "dream --dry-run --mode deterministic", "history check"]:
        try:
            cmd = parse_words(words.split())
            OPERATIONS[cmd.name].run(discover_workspace(sys.argv[1], env={}), cmd.options)
            print(words, "ok", flush=True)
        except Exception as exc:  # a one-line domain error is fine; only a hang or a crash is not
            print(words, type(exc).__name__, flush=True)
""")

FILES = ["agent.json", "../../config.json", "chats.json", "MEMORY.md", "AGENTS.md",
         "sessions/console/alice_console--alice.json", "memory/2026-12-01.md",
         "memory/2026-12-01/berlin-trip-planning.md", "digest/personal/berlin-trip.md", "dialog/2026-12-01.jsonl",
         "history.db", "history.db-wal", ".qwenmem/index/CURRENT", ".qwenmem/index/<gen>/manifest.json"]
CLI = [("doctor",), ("info",), ("sessions", "list"), ("search", "berlin", "--mode", "text"), ("snapshot", "--dry-run"),
       ("compact", "--all", "--check"), ("history", "check")]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    ws = copy_corpus(tmp_path_factory.mktemp("gen2"))
    assert run_cli("-w", str(ws), "reindex", "--embedder", "none").code == 0
    return ws


@pytest.mark.parametrize("rel", FILES)
def test_a_fifo_in_place_of_a_file_never_blocks(tmp_path, indexed, rel):
    root = tmp_path / "root"
    shutil.copytree(indexed.parents[1], root, symlinks=True)
    ws = root / "workspaces" / "default"
    if "<gen>" in rel:
        rel = rel.replace("<gen>", (ws / ".qwenmem" / "index" / "CURRENT").read_text().strip())
    target = ws / rel
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    os.mkfifo(target)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    try:
        lib = subprocess.run([sys.executable, "-c", LIBRARY, str(ws)], env=env, capture_output=True, text=True,
                             timeout=90, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the library blocked on a FIFO at {rel}: {exc.stdout!r}")
    assert lib.returncode == 0 and "Traceback" not in lib.stderr, lib.stderr
    assert len(lib.stdout.splitlines()) == 6, lib.stdout
    for args in CLI:
        try:
            run = run_cli("-w", str(ws), *args, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"`qwenmem {' '.join(args)}` blocked on a FIFO at {rel}")
        assert "Traceback" not in run.stderr and "internal error" not in run.stderr, (args, run.stderr)
