"""`compact` reads each session file once: every open of a session file during a real run is recorded (a
Python audit hook sees each `open`, also the confined `os.open` relative to a directory descriptor) together with
the functions on the stack, so each read is accounted for. The only reads allowed besides the one load are the
write-time safety checks (the file must still be what was read: `ensure_unchanged`; the original copied to
backup/: `copy_preserving`). Before, the CLI pre-check, the generation sniff, the check and the post-write
verification each read the file again (10 opens for one compacted 1.x session, 2-3 per session for --check)."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

import pytest

from helpers import invoke
from tests.core.compaction.gen2.test_compact2_check import conversation_of_bytes, write_ws

KEY = "console/default_1764235442381"
SAFETY = {"ensure_unchanged", "copy_preserving"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND
_recording: list[list[tuple[str, int, set[str]]]] = []  # the active recorder (a list of events), if any
_hooked = False


def _hook(event: str, args: tuple) -> None:
    if event != "open" or not _recording:
        return
    path, mode, flags = args
    if not isinstance(path, (str, bytes, os.PathLike)):
        return  # os.fdopen of a descriptor already opened (and recorded)
    if mode is not None:  # builtins.open: its mode string decides
        writes = any(c in str(mode) for c in "wax+")
    else:
        writes = bool((flags or 0) & _WRITE_FLAGS)
    stack: set[str] = set()
    frame = sys._getframe(1)
    while frame is not None:
        stack.add(frame.f_code.co_name)
        frame = frame.f_back
    _recording[0].append((os.path.basename(os.fsdecode(path)), 1 if writes else 0, stack))


@pytest.fixture
def opens():
    """The opens of the next invocations: (file name, 1 if for writing, functions on the stack)."""
    global _hooked
    if not _hooked:  # an audit hook cannot be removed: one for the whole process, idle unless a test records
        sys.addaudithook(_hook)
        _hooked = True
    events: list[tuple[str, int, set[str]]] = []
    _recording.append(events)
    yield events
    _recording.clear()


def _reads(events: list, name: str) -> list[set[str]]:
    return [stack for n, writes, stack in events if n == name and not writes]


def _account(events: list, name: str) -> Counter:
    """Each read of `name`: a load (load_session), a safety check, or something else (a defect)."""
    kinds: Counter = Counter()
    for stack in _reads(events, name):
        kinds["load" if "load_session" in stack else "safety" if stack & SAFETY else "other"] += 1
    return kinds


def _session_files(ws: Path) -> list[str]:
    return sorted(p.name for p in (ws / "sessions").rglob("*.json"))


def test_check_and_dry_run_read_each_session_file_once(sample_ws, opens):
    files = _session_files(sample_ws)
    assert len(files) == 4  # three healthy 1.x sessions and a damaged one
    for args in (["--check", "--all"], ["--all", "--dry-run", "--summarizer", "extractive"]):
        opens.clear()
        run = invoke("-w", str(sample_ws), "compact", *args, "--max-input-length", "1200")
        assert run.code in (0, 1), run.stderr
        for name in files:
            assert len(_reads(opens, name)) == 1, (args, name, _account(opens, name))


def test_a_1x_compaction_reads_its_session_once_before_writing(sample_ws, opens):
    name = "default_1764235442381.json"
    run = invoke("-w", str(sample_ws), "compact", KEY, "--max-input-length", "1200", "--summarizer", "extractive",
                 "--json")
    assert run.code == 0, run.stderr
    assert run.json()["result"]["sessions"][0]["status"] == "compacted"
    kinds = _account(opens, name)
    assert kinds["load"] == 1 and kinds["other"] == 0, kinds


def test_a_2x_compaction_and_check_read_the_session_once(tmp_path, opens):
    ws = write_ws(tmp_path, conversation_of_bytes(40_000, n=20), "native")
    args = ["-w", str(ws), "compact", "console/t", "--max-input-length", "10000", "--system-tokens", "0"]
    check = invoke(*args, "--check")
    assert check.code == 0, check.stderr
    assert len(_reads(opens, "t.json")) == 1, _account(opens, "t.json")
    opens.clear()
    run = invoke(*args, "--json")
    assert run.code == 0, run.stderr
    assert run.json()["result"]["sessions"][0]["status"] == "compacted"
    kinds = _account(opens, "t.json")
    assert kinds["load"] == 1 and kinds["other"] == 0, kinds
    assert json.loads((ws / "sessions" / "console" / "t.json").read_text())["agent"]["state"]["summary"]


def test_one_counter_per_run(sample_ws, monkeypatch):
    """The token counter is built once per run, not per session or per tier: before, the run, each session and
    each session's check built their own (three sessions: seven counters)."""
    from qwenmem.core import tokens

    built: list[float] = []
    real = tokens.EstimateCounter.__init__

    def counting(self, divisor: float = 4) -> None:
        built.append(divisor)
        real(self, divisor)

    monkeypatch.setattr(tokens.EstimateCounter, "__init__", counting)
    run = invoke("-w", str(sample_ws), "compact", "--all", "--dry-run", "--summarizer", "extractive",
                 "--max-input-length", "1200", "--json")
    assert run.code == 1, run.stderr  # the damaged session is skipped
    assert sum(s["status"] != "skipped" for s in run.json()["result"]["sessions"]) == 3
    assert len(built) == 1
