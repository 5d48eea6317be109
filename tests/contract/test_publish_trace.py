"""Every write of the real commands follows the publish protocol (issue 24, items 4-6), checked on an strace of
the command (tests/publish_trace.py says what counts as a gap): temp fsynced before its rename or link, the
directory fsynced after it, every directory made fsynced in its parent, and nothing published before what it names
is durable. Runs on copies of the 2.x corpus written by QwenPaw 2.2.2's own code, and on the 1.x sample.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import publish_trace as pt
from helpers import SAMPLE
from qwenpaw2_support import copy_corpus, needs_gen2_corpus

pytestmark = pytest.mark.skipif(pt.STRACE is None, reason="strace is not installed (apt-get install strace)")

ENV = {"NO_COLOR": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _gen2(tmp_path: Path) -> Path:
    return copy_corpus(tmp_path)


def _damage_a_session(ws: Path) -> None:
    session = sorted((ws / "sessions").rglob("*.json"))[0]
    session.write_bytes(session.read_bytes()[:-40])  # cut: repair rebuilds it and keeps the original


def _corrupt_copy_beside_history(ws: Path) -> None:
    shutil.copyfile(ws / "history.db", ws / "history.db.corrupt-20260101T000000")
    wal = Path(f"{ws / 'history.db'}-wal")
    if wal.exists():
        shutil.copyfile(wal, ws / "history.db.corrupt-20260101T000000-wal")


def _second_snapshot_after_change(ws: Path) -> None:
    """A first snapshot, then a changed note: the traced one reuses deduplicated objects and writes new ones."""
    run = subprocess.run([sys.executable, "-m", "qwenmem", "-w", str(ws), "snapshot"], capture_output=True,
                         text=True, env={**os.environ, **ENV, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert run.returncode == 0, run.stderr
    note = sorted((ws / "memory").rglob("*.md"))[0]
    note.write_text(note.read_text() + "\n- one more fact\n")


def _snapshot_then_lose_a_day(ws: Path) -> None:
    """A snapshot, then a day's folder of notes deleted: the traced restore makes the folder again."""
    _second_snapshot_after_change(ws)
    shutil.rmtree(ws / "memory" / "2026-12-01")


GEN2_COMMANDS = {
    "repair": (["sessions", "repair", "--all"], _damage_a_session),
    "compact": (["compact", "--all", "--force", "--summarizer", "extractive"], None),
    "dream": (["dream", "--mode", "deterministic", "--no-embeddings", "--date", "2026-12-01"], None),  # the corpus's day
    "reindex": (["reindex", "--embedder", "none"], None),
    "snapshot": (["snapshot"], _second_snapshot_after_change),
    "snapshot-restore": (["snapshot", "restore"], _snapshot_then_lose_a_day),
    "history-salvage": (["history", "salvage"], _corrupt_copy_beside_history),
}


@needs_gen2_corpus
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(GEN2_COMMANDS))
def test_every_publish_of_a_2x_command_is_durable(name, tmp_path):
    args, prepare = GEN2_COMMANDS[name]
    ws = _gen2(tmp_path)
    if prepare:
        prepare(ws)
    traced = pt.trace_cli(ws, *args, env=ENV)
    assert traced.code in (0, 1), traced.stderr
    assert "Traceback" not in traced.stderr
    assert traced.report.counts["rename"] + traced.report.counts["link"] > 0, "the command published nothing"
    assert traced.report.violations == [], "\n".join(traced.report.violations)


SAMPLE_COMMANDS = {
    "repair": ["sessions", "repair", "--all"],
    "compact": ["compact", "--all", "--force", "--summarizer", "extractive"],
    "dream": ["dream", "--mode", "deterministic", "--no-embeddings"],
}


@pytest.mark.parametrize("name", sorted(SAMPLE_COMMANDS))
def test_every_publish_of_a_1x_command_is_durable(name, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(SAMPLE, ws)
    traced = pt.trace_cli(ws, *SAMPLE_COMMANDS[name], env=ENV)
    assert traced.code in (0, 1), traced.stderr
    assert traced.report.counts["rename"] + traced.report.counts["link"] > 0, "the command published nothing"
    assert traced.report.violations == [], "\n".join(traced.report.violations)


# --- the checker itself finds each kind of gap (so the tests above can fail) ------------------------------------

_BAD_WRITERS = {
    "unsynced-source": """
        open(ws + "/.t", "w").write("x")
        os.replace(ws + "/.t", ws + "/a")
        fsync_dir(ws)
    """,
    "entry-not-synced": """
        with open(ws + "/.t", "w") as fh:
            fh.write("x"); fh.flush(); os.fsync(fh.fileno())
        os.replace(ws + "/.t", ws + "/a")
    """,
    "mkdir-not-synced": """
        os.makedirs(ws + "/new/dir")
        with open(ws + "/new/dir/.t", "w") as fh:
            fh.write("x"); fh.flush(); os.fsync(fh.fileno())
        os.replace(ws + "/new/dir/.t", ws + "/new/dir/a")
        fsync_dir(ws + "/new/dir")
    """,
    "order": """
        with open(ws + "/obj", "w") as fh:
            fh.write("object")  # never fsynced before the manifest that names it
        with open(ws + "/.m", "w") as fh:
            fh.write("manifest"); fh.flush(); os.fsync(fh.fileno())
        os.replace(ws + "/.m", ws + "/manifest")
        fsync_dir(ws)
    """,
}


def _trace_script(ws: Path, body: str) -> pt.Report:
    script = ws.parent / "writer.py"
    script.write_text("import os, sys\nws = sys.argv[1]\n"
                      "def fsync_dir(d):\n    fd = os.open(d, os.O_RDONLY); os.fsync(fd); os.close(fd)\n"
                      + textwrap.dedent(body))
    log = ws.parent / "trace.log"
    before = pt.names_under(ws)
    subprocess.run([pt.STRACE, "-f", "-qq", "-y", "-s", "0", "-o", str(log), "-e", f"trace={pt.TRACED}",
                    sys.executable, str(script), str(ws)], check=True, capture_output=True)
    return pt.check(pt.parse(log.read_text()), ws, before)


@pytest.mark.parametrize("gap", sorted(_BAD_WRITERS))
def test_the_checker_finds_each_kind_of_gap(gap, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    report = _trace_script(ws, _BAD_WRITERS[gap])
    assert gap in report.kinds(), report.violations


def test_the_checker_passes_the_protocol(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    report = _trace_script(ws, """
        os.makedirs(ws + "/new")
        fsync_dir(ws)
        with open(ws + "/new/.t", "w") as fh:
            fh.write("x"); fh.flush(); os.fsync(fh.fileno())
        os.replace(ws + "/new/.t", ws + "/new/a")
        fsync_dir(ws + "/new")
    """)
    assert report.violations == [] and report.counts["rename"] == 1


def test_summary_is_one_line(tmp_path):
    rep = pt.Report()
    assert "\n" not in rep.summary() and json.dumps(dict(rep.counts)) == "{}"
