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
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import REPO
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
run_repair(ws, list(iter_session_refs(ws)), REPAIR, checkpoint=kill_at, convert_gen1=sys.argv[4] == "convert")
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


def _repair_in_process(ws: Path, convert: bool = False) -> None:
    w = discover_workspace(ws)
    run = run_repair(w, list(iter_session_refs(w)), REPAIR, convert_gen1=convert)
    assert not run.changed_underneath, [f.notes for f in run.files]


def _reference(tmp_path: Path, ws: Path, convert: bool = False) -> dict[str, bytes]:
    ref = tmp_path / "reference"
    shutil.copytree(ws, ref)
    _repair_in_process(ref, convert)
    return _sessions(ref)


def _without_generated(data: bytes) -> bytes:
    """A converted 1.x file without what AgentScope generates on each conversion (block ids and times)."""
    doc = json.loads(data)

    def strip(blocks: object) -> None:
        for b in blocks if isinstance(blocks, list) else []:
            if isinstance(b, dict):
                b.pop("created_at", None)
                if b.get("type") not in ("tool_call", "tool_result"):
                    b.pop("id", None)
                strip(b.get("output"))

    for m in doc["agent"]["state"]["context"]:
        strip(m["content"])
    return json.dumps(doc, sort_keys=True).encode()


def _same(rel: str, a: bytes, b: bytes, converted: frozenset[str]) -> bool:
    if rel not in converted or a == b:
        return a == b
    try:
        return _without_generated(a) == _without_generated(b)
    except (ValueError, KeyError, TypeError):
        return False


def _temporaries(ws: Path) -> list[Path]:
    return [p for p in ws.rglob("*" + TEMP_SUFFIX)]


def _check_after_kill(ws: Path, old: dict[str, bytes], new: dict[str, bytes],
                      converted: frozenset[str] = frozenset()) -> str:
    """The invariants that hold at any moment; returns "old", "new" or "mixed" (some files done). A `converted`
    file's new version is the reference conversion up to the values generated on each conversion."""
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
        is_new = _same(rel, data, new[rel], converted) and data != old[rel]
        assert data == old[rel] or is_new, f"{rel} is neither the old nor the new version"
        if is_new:
            done += 1
            assert old[rel] in kept.get(rel, []), f"{rel} was replaced but the quarantine lacks the original"
    changing = sum(1 for rel in old if old[rel] != new[rel])
    return "old" if done == 0 else "new" if done == changing else "mixed"


def _finish_and_check(ws: Path, new: dict[str, bytes], converted: frozenset[str] = frozenset()) -> None:
    _repair_in_process(ws, convert=bool(converted))
    now = _sessions(ws)
    assert set(now) == set(new) and all(_same(r, now[r], new[r], converted) for r in new), \
        "a re-run did not finish the job"
    assert _temporaries(ws) == [], "a temporary was left that the next run does not clean"


def _kill_at(ws: Path, step: str, nth: int, convert: bool = False) -> int:
    proc = subprocess.run([sys.executable, "-c", KILLED_AT_STEP, str(ws), step, str(nth),
                           "convert" if convert else "-"], env=_env(),
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


# the moments around the rename in the default run; every step (and every file) in the full run
@pytest.mark.parametrize("step", [s if s in ("renaming", "replaced") else pytest.param(s, marks=pytest.mark.slow)
                                  for s in KILL_STEPS])
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
            if code == 0:  # finished before this pass: the later ones do not exist
                break


@pytest.mark.slow
def test_kill_at_random_moments_many(gen2_ws, tmp_path):
    outcomes = _random_kills(tmp_path, gen2_ws, trials=16, seed=1400)
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
    _random_kills(tmp_path, ws, trials=16, seed=1401)


def _with_gen1_files(root: Path) -> tuple[Path, frozenset[str]]:
    """The 2.x workspace plus 1.x files (one with compressed marks), for `--convert-1x` runs."""
    ws = _write_workspace(root, _damaged_files(turns=30))
    converted = []
    for i, n in enumerate((4, 40)):
        items = [[{"id": f"m{i}-{j:03d}-aaaaaaaaaaaaaa", "name": "user" if j % 2 == 0 else "QwenPaw",
                   "role": "user" if j % 2 == 0 else "assistant",
                   "content": [{"type": "text", "text": f"1.x message {j} " * 20}], "metadata": {},
                   "timestamp": f"2026-05-20 09:{j // 60:02d}:{j % 60:02d}.000"}, ["compressed"] if j < 2 else []]
                 for j in range(n)]
        doc = {"agent": {"memory": {"content": items, "_compressed_summary": "## Goal\n- old summary"},
                         "toolkit": {"active_groups": []}, "name": "QwenPaw", "_sys_prompt": "..."}}
        path = ws / "sessions" / "discord" / f"old{i}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        os.utime(path, (time.time() - 3600,) * 2)
        converted.append(path.relative_to(ws).as_posix())
    return ws, frozenset(converted)


@dataclass(frozen=True)
class _ConvertCase:
    """The 1.x-bearing workspace, its files before, and the reference conversion: made once per test."""
    pristine: Path
    old: dict[str, bytes]
    new: dict[str, bytes]
    converted: frozenset[str]


def _convert_case(tmp_path: Path) -> _ConvertCase:
    pristine, converted = _with_gen1_files(tmp_path / "pristine-1x")
    old = _sessions(pristine)
    new = _reference(tmp_path, pristine, convert=True)
    assert all(new[r] != old[r] for r in converted)
    return _ConvertCase(pristine, old, new, converted)


def _convert_trial(tmp_path: Path, case: _ConvertCase, step: str, nth: int) -> tuple[int, dict[str, bytes]]:
    """Kill a `--convert-1x` run at the `nth` pass of `step`; (its exit code, the converted files at the kill)."""
    ws = _trial(tmp_path, case.pristine, f"convert-{step}-{nth}")
    code = _kill_at(ws, step, nth, convert=True)
    state = _check_after_kill(ws, case.old, case.new, case.converted)
    if code == 0:
        assert state == "new"
    killed = _sessions(ws)
    _finish_and_check(ws, case.new, case.converted)
    shutil.rmtree(ws)
    return code, {rel: killed[rel] for rel in case.converted}


@pytest.mark.parametrize("step", ["renaming"] + [pytest.param(s, marks=pytest.mark.slow) for s in ("quarantined", "replaced")])
def test_kill_during_a_convert_1x_run_leaves_old_or_converted(tmp_path, step):
    # files are written in name order: console/ (5 written), then discord/old0 and old1: kill while writing old1
    code, at_kill = _convert_trial(tmp_path, _convert_case(tmp_path), step, 7)
    assert code == -signal.SIGKILL
    assert json.loads(at_kill["sessions/discord/old0.json"])["agent"].get("state"), "old0 was converted"
    assert ("state" in json.loads(at_kill["sessions/discord/old1.json"])["agent"]) == (step == "replaced")


@pytest.mark.slow
def test_kill_at_every_checkpoint_of_a_convert_1x_run(tmp_path):
    case = _convert_case(tmp_path)
    for step in KILL_STEPS:
        for nth in range(1, 11):
            code, _ = _convert_trial(tmp_path, case, step, nth)
            if code == 0:  # the run finished before its nth pass of `step`: no later pass exists either
                break
        else:
            raise AssertionError(f"a run still reached its 10th {step!r}: the loop no longer covers every pass")
