"""Crash injection: SIGKILL a real `sessions repair` of a QwenPaw 2.x workspace at each checkpoint and at random moments.

At a named step (qwenmem.core.repair.run.STEPS, plus "renaming": the temporary is written and fsynced, the rename
not done yet), a child process runs the repair with a checkpoint that kills it there; at random moments, the real
`qwenmem sessions repair --all` is killed from outside. Whatever the moment:
- every session file is byte-identical to the old or to the new (repaired) version, never anything else;
- whenever the new version is in place, the quarantine holds the old bytes, and every quarantined copy is the old
  bytes; the quarantine manifest, when there is one, is whole JSON;
- a re-run finishes the job (every file is the new version) and leaves no temporary behind.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO
from qwenpaw2_support import builder, copy_corpus, needs_gen2_corpus
from qwenmem.core.repair.run import REPAIR, STEPS, run_repair
from qwenmem.core.sessions import iter_session_refs
from qwenmem.core.tempnames import TEMP_SUFFIX
from qwenmem.core.workspace import discover_workspace

# the child: the core of `qwenmem sessions repair --all`, killed at the n-th time it passes step argv[2]
KILLED_AT_STEP = """
import os, signal, sys
from qwenmem.core.repair.run import REPAIR, run_repair
from qwenmem.core.sessions import iter_session_refs
from qwenmem.core.workspace import discover_workspace

step, nth, seen = sys.argv[2], int(sys.argv[3]), {}

def kill_at(name):
    seen[name] = seen.get(name, 0) + 1
    if name == step and seen[name] == nth:
        os.kill(os.getpid(), signal.SIGKILL)

if step == "renaming":  # the session's temporary is written and fsynced; the rename has not happened
    real_replace = os.replace
    def replace(src, dst, *args, **kwargs):
        if str(dst).endswith(".json") and os.path.basename(str(dst)) != "manifest.json":
            kill_at("renaming")
        return real_replace(src, dst, *args, **kwargs)
    os.replace = replace

ws = discover_workspace(sys.argv[1])
run_repair(ws, list(iter_session_refs(ws)), REPAIR, checkpoint=kill_at)
"""
KILL_STEPS = ("locked", "alternatives", "quarantined", "renaming", "replaced", "recorded")


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _damaged_files(turns: int) -> dict[str, bytes]:
    """Healthy and damaged 2.x sessions (every damage a repair rewrites), plus a 1.x file a repair leaves alone."""
    clock = builder.Clock()

    def doc(sid: str, n: int) -> dict:
        return builder.document(builder.state(sid, builder.conversation(n, clock)))

    def raw(d: dict) -> bytes:
        return builder.dumps(d).encode("utf-8")

    big = raw(doc("big", turns))
    misplaced = doc("misplaced", 6)
    ctx = misplaced["agent"]["state"]["context"]
    tool_msg = next(i for i, m in enumerate(ctx) if any(b["type"] == "tool_result" for b in m["content"]))
    result = next(b for b in ctx[tool_msg]["content"] if b["type"] == "tool_result")
    ctx[tool_msg]["content"].remove(result)
    ctx.insert(tool_msg + 1, builder.msg("user", [result], clock))
    no_media = doc("no-media", 3)
    no_media["agent"]["state"]["context"][0]["content"].append(
        {"type": "data", "source": {"type": "url", "url": "https://x.test/a.png"}})
    string_content = doc("string", 4)
    string_content["agent"]["state"]["context"][1]["content"] = "a reply stored as a plain string"
    return {
        "console/healthy.json": raw(doc("healthy", 5)),
        "console/big_truncated.json": big[: len(big) * 2 // 3],
        "console/big_garbage.json": raw(doc("big2", turns)) + b"GARBAGE}}",
        "console/concatenated.json": raw(doc("c1", 3)) + raw(doc("c2", 4)),
        "console/bom.json": b"\xef\xbb\xbf" + raw(doc("bom", 3)),
        "console/misplaced.json": raw(misplaced),
        "telegram/no_media.json": raw(no_media),
        "telegram/string_content.json": raw(string_content),
    }


def _write_workspace(root: Path, files: dict[str, bytes]) -> Path:
    (root / "sessions").mkdir(parents=True)
    (root / "sessions" / ".synced.json").write_text("{}")  # a 2.x marker
    an_hour_ago = time.time() - 3600  # a damaged file modified seconds ago is waited out as a save in progress
    for rel, data in files.items():
        path = root / "sessions" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (an_hour_ago, an_hour_ago))
    return root


def _sessions(ws: Path) -> dict[str, bytes]:
    return {p.relative_to(ws).as_posix(): p.read_bytes() for p in sorted((ws / "sessions").rglob("*.json"))
            if not p.name.startswith(".")}


def _repair_in_process(ws: Path) -> None:
    w = discover_workspace(ws)
    run = run_repair(w, list(iter_session_refs(w)), REPAIR)
    assert not run.changed_underneath, [f.notes for f in run.files]


def _reference(tmp_path: Path, ws: Path) -> dict[str, bytes]:
    ref = tmp_path / "reference"
    shutil.copytree(ws, ref)
    _repair_in_process(ref)
    return _sessions(ref)


def _temporaries(ws: Path) -> list[Path]:
    return [p for p in ws.rglob("*" + TEMP_SUFFIX)]


def _check_after_kill(ws: Path, old: dict[str, bytes], new: dict[str, bytes]) -> str:
    """The invariants that hold at any moment; returns "old", "new" or "mixed" (some files done)."""
    now = _sessions(ws)
    assert set(now) == set(old), "session files appeared or vanished"
    kept: dict[str, list[bytes]] = {}
    for run_dir in sorted((ws / ".qwenmem" / "quarantine").glob("*")):
        manifest = run_dir / "manifest.json"
        if manifest.exists():
            json.loads(manifest.read_bytes())  # written atomically: never half a document
        for p in run_dir.rglob("*"):
            rel = p.relative_to(run_dir).as_posix()
            if p.is_file() and rel.startswith("sessions/") and not p.name.endswith(TEMP_SUFFIX):
                kept.setdefault(rel, []).append(p.read_bytes())
    for rel, data in kept.items():
        assert rel in old and all(k == old[rel] for k in data), f"{rel}: the quarantine holds other bytes"
    done = 0
    for rel, data in now.items():
        assert data in (old[rel], new[rel]), f"{rel} is neither the old nor the new version"
        if data == new[rel] != old[rel]:
            done += 1
            assert old[rel] in kept.get(rel, []), f"{rel} was replaced but the quarantine lacks the original"
    changing = sum(1 for rel in old if old[rel] != new[rel])
    return "old" if done == 0 else "new" if done == changing else "mixed"


def _finish_and_check(ws: Path, new: dict[str, bytes]) -> None:
    _repair_in_process(ws)
    assert _sessions(ws) == new, "a re-run did not finish the job"
    assert _temporaries(ws) == [], "a temporary was left that the next run does not clean"


def _kill_at(ws: Path, step: str, nth: int) -> int:
    proc = subprocess.run([sys.executable, "-c", KILLED_AT_STEP, str(ws), step, str(nth)], env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, -signal.SIGKILL), proc.stderr
    return proc.returncode


def _kill_after(ws: Path, delay: float) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "qwenmem", "-w", str(ws), "sessions", "repair", "--all"],
                            env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=120)


@pytest.fixture
def gen2_ws(tmp_path):
    return _write_workspace(tmp_path / "pristine", _damaged_files(turns=60))


def _trial(tmp_path: Path, pristine: Path, name: str) -> Path:
    ws = tmp_path / name
    shutil.copytree(pristine, ws)
    return ws


def test_checkpoints_are_passed_in_order(gen2_ws, tmp_path):
    ws = _trial(tmp_path, gen2_ws, "order")
    seen: list[str] = []
    w = discover_workspace(ws)
    run_repair(w, list(iter_session_refs(w)), REPAIR, checkpoint=seen.append)
    assert seen[0] == "locked" and set(seen) == set(STEPS)
    per_file = [s for s in seen[1:] if s != "alternatives"]
    assert per_file == ["quarantined", "replaced", "recorded"] * (len(per_file) // 3)
    assert len(per_file) // 3 == 7  # every damaged file written once


@pytest.mark.parametrize("step", KILL_STEPS)
def test_kill_at_each_checkpoint_leaves_old_or_new_and_a_rerun_finishes(gen2_ws, tmp_path, step):
    old = _sessions(gen2_ws)
    new = _reference(tmp_path, gen2_ws)
    ws = _trial(tmp_path, gen2_ws, "trial")
    nth = 1 if step in ("locked", "alternatives") else 3
    assert _kill_at(ws, step, nth) == -signal.SIGKILL
    state = _check_after_kill(ws, old, new)
    assert state == ("old" if step in ("locked", "alternatives", "quarantined", "renaming") and nth == 1 else
                     "mixed"), state
    if step == "renaming":
        assert len(_temporaries(ws)) == 1  # the killed writer's temporary, for the next run to clean
    _finish_and_check(ws, new)


def test_kill_at_random_moments_short(gen2_ws, tmp_path):
    _random_kills(tmp_path, gen2_ws, trials=2, seed=14)


def _random_kills(tmp_path: Path, pristine: Path, trials: int, seed: int) -> dict[str, int]:
    old = _sessions(pristine)
    new = _reference(tmp_path, pristine)
    probe = _trial(tmp_path, pristine, "timing")
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "qwenmem", "-w", str(probe), "sessions", "repair", "--all"], env=_env(),
                   capture_output=True, check=True, timeout=120)
    full = time.monotonic() - started
    rng = random.Random(seed)
    outcomes = {"old": 0, "mixed": 0, "new": 0}
    for i in range(trials):
        ws = _trial(tmp_path, pristine, f"trial-{i}")
        _kill_after(ws, rng.uniform(0.0, full))
        outcomes[_check_after_kill(ws, old, new)] += 1
        _finish_and_check(ws, new)
        shutil.rmtree(ws)
    return outcomes


@pytest.mark.slow
def test_kill_at_every_checkpoint_of_every_file(gen2_ws, tmp_path):
    old = _sessions(gen2_ws)
    new = _reference(tmp_path, gen2_ws)
    changing = sum(1 for rel in old if old[rel] != new[rel])
    for step in KILL_STEPS:
        for nth in range(1, (1 if step == "locked" else changing) + 2):  # one past the last: the run completes
            ws = _trial(tmp_path, gen2_ws, f"{step}-{nth}")
            code = _kill_at(ws, step, nth)
            state = _check_after_kill(ws, old, new)
            if code == 0:
                assert state == "new", (step, nth)
            _finish_and_check(ws, new)
            shutil.rmtree(ws)


@pytest.mark.slow
def test_kill_at_random_moments_many(gen2_ws, tmp_path):
    outcomes = _random_kills(tmp_path, gen2_ws, trials=40, seed=1400)
    assert outcomes["mixed"] > 0, outcomes  # some kills landed while files were being written


@needs_gen2_corpus
@pytest.mark.slow
def test_kill_at_random_moments_in_the_generated_corpus(tmp_path):
    ws = copy_corpus(tmp_path / "corpus")
    for rel, data in _damaged_files(turns=40).items():
        path = ws / "sessions" / "damaged" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (time.time() - 3600,) * 2)
    _random_kills(tmp_path, ws, trials=25, seed=1401)
