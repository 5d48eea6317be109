"""Links out of a QwenPaw 2.x workspace (issue 24 §1-2): history.db and its sidecars, ReMe notes and digests.

Each case plants the link in a copy of the generated 2.2.2 corpus, runs the real CLI, and checks: exit 6 (UNSAFE_LINK),
one line naming the link on stderr, and the outside files byte-identical with nothing new beside them (SQLite would
leave a -shm or -journal there if it had opened the store).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from helpers import invoke
from qwenpaw2_support import copy_corpus, needs_gen2_corpus

from qwenmem.cli.errors import ExitCode

pytestmark = needs_gen2_corpus


def tree_digest(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(d.rglob("*"))}


@pytest.fixture(scope="module")
def corpus_copy(tmp_path_factory) -> Path:
    return copy_corpus(tmp_path_factory.mktemp("gen2"))


@pytest.fixture
def ws(tmp_path, corpus_copy) -> Path:
    dest = tmp_path / "default"
    shutil.copytree(corpus_copy, dest, symlinks=True)
    return dest


@pytest.fixture
def outside(tmp_path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    return d


def _move_out(ws: Path, outside: Path, name: str) -> Path:
    target = outside / Path(name).name
    os.replace(ws / name, target)
    (ws / name).symlink_to(target, target_is_directory=target.is_dir())
    return target


def _assert_refused(run, link: Path, outside: Path, before: dict[str, str]) -> None:
    assert run.code == ExitCode.UNSAFE_LINK, (run.code, run.stdout, run.stderr)
    errors = [line for line in run.stderr.splitlines() if "outside the workspace" in line]
    assert errors and all(f"{link}: a link to " in line for line in errors), run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    assert tree_digest(outside) == before  # not written, and no -shm / -journal made beside it


HISTORY_COMMANDS = [("info",), ("sessions", "list"), ("sessions", "list", "--json"),
                    ("sessions", "show", "console/alice_console--alice", "--history"),
                    ("compact", "--all", "--summarizer", "extractive", "--force"),
                    ("compact", "--all", "--check"), ("doctor",), ("sessions", "repair", "--all"),
                    ("history", "check"), ("history", "salvage"), ("history", "rebuild-fts", "--force")]


@pytest.mark.parametrize("args", HISTORY_COMMANDS, ids=" ".join)
def test_a_history_db_linked_outside_is_refused_by_every_command(ws, outside, args):
    for side in ("-wal", "-shm"):
        Path(f"{ws / 'history.db'}{side}").unlink(missing_ok=True)
    _move_out(ws, outside, "history.db")
    before = tree_digest(outside)
    run = invoke("-w", str(ws), *args)
    _assert_refused(run, ws / "history.db", outside, before)


@pytest.mark.parametrize("sidecar", ["-wal", "-shm", "-journal"])
@pytest.mark.parametrize("args", [("info",), ("sessions", "list"), ("compact", "--all", "--summarizer", "extractive",
                                                                     "--force")], ids=" ".join)
def test_a_history_sidecar_linked_outside_is_refused(ws, outside, sidecar, args):
    name = f"history.db{sidecar}"
    if not (ws / name).exists():
        (ws / name).write_bytes(b"")
    if sidecar != "-wal":
        (ws / name).unlink()
        (outside / name).write_bytes(b"")
        (ws / name).symlink_to(outside / name)
    else:
        _move_out(ws, outside, name)
    before = tree_digest(outside)
    db_before = hashlib.sha256((ws / "history.db").read_bytes()).hexdigest()
    run = invoke("-w", str(ws), *args)
    _assert_refused(run, ws / name, outside, before)
    assert hashlib.sha256((ws / "history.db").read_bytes()).hexdigest() == db_before


MARKER = "OUTSIDE_MARKER_24b2"

LINKED = {"memory/<date>/": "memory/2026-12-01", "a note": "memory/2026-12-01/berlin-trip-planning.md",
          "digest/": "digest", "a digest file": "digest/personal/berlin-trip.md"}


@pytest.mark.parametrize("args", [("reindex", "--embedder", "none"), ("snapshot",),
                                  ("dream", "--mode", "deterministic", "--no-embeddings", "--dry-run", "--date", "2026-12-01")],
                         ids=" ".join)
@pytest.mark.parametrize("what", list(LINKED))
def test_reme_notes_and_digests_linked_outside_are_named_by_every_command(ws, outside, what, args):
    rel = LINKED[what]
    target = _move_out(ws, outside, rel)
    for p in [target, *target.rglob("*")] if target.is_dir() else [target]:
        if p.is_file():
            p.write_text(p.read_text() + f"\n- {MARKER} the outside copy\n")
    before = tree_digest(outside)
    run = invoke("-w", str(ws), *args)
    _assert_refused(run, ws / rel, outside, before)
    assert MARKER not in run.stdout + run.stderr
    for p in (ws / ".qwenmem").rglob("*"):
        if p.is_file() and not p.is_symlink():
            assert MARKER.encode() not in p.read_bytes(), p
