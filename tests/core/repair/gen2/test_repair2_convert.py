"""`sessions repair --convert-1x`: a 1.x session file in a 2.x workspace converted as QwenPaw 2.x loads it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path


from helpers import SHARED, invoke
from qwenpaw2_support import copy_corpus, needs_gen2_corpus
from validators import agentscope_python, optional_agentscope_python
from qwenmem.core.repair.gen2.diagnose import validation_problems

BENCH = Path(__file__).resolve().parents[4] / "bench" / "peer"
REAL = SHARED / "corpus" / "real"

# a 1.x conversation in the shape the real files have, with what the converter must translate (spec §2.6)
GEN1 = {"agent": {"memory": {"content": [
    [{"id": "u1aaaaaaaaaaaaaaaaaaaa", "name": "user", "role": "user",
      "content": [{"type": "text", "text": "Plan the Berlin trip"},
                  {"type": "image", "source": {"type": "url", "url": "https://x.test/map.png"}}],
      "metadata": {}, "timestamp": "2026-05-20 09:00:00.000"}, ["compressed"]],
    [{"id": "a1aaaaaaaaaaaaaaaaaaaa", "name": "QwenPaw", "role": "assistant",
      "content": [{"type": "tool_use", "id": "call_1", "name": "memory_search", "input": {"query": "Berlin"},
                   "raw_input": "{\"query\": \"Berlin\"}"}],
      "metadata": None, "timestamp": "2026-05-20 09:00:01.000", "invocation_id": "x"}, ["compressed"]],
    [{"id": "s1aaaaaaaaaaaaaaaaaaaa", "name": "system", "role": "system",
      "content": [{"type": "tool_result", "id": "call_1", "name": "memory_search",
                   "output": [{"type": "text", "text": "booked 12-16 June"}]}],
      "metadata": {}, "timestamp": "2026-05-20 09:00:02.000"}, []],
    [{"id": "a2aaaaaaaaaaaaaaaaaaaa", "role": "assistant", "content": "It is booked for 12-16 June.",
      "metadata": {}, "timestamp": "2026-05-20 09:00:03.000"}, []],
], "_compressed_summary": "## Goal\n- Plan the Berlin trip"}, "toolkit": {"active_groups": []}, "name": "QwenPaw",
    "_sys_prompt": "..."}}


def _healthy_for_gen1() -> dict:
    """GEN1 with nothing the 1.x rules would repair (its last message has no name: 1.x's loader refuses it)."""
    doc = json.loads(json.dumps(GEN1))
    doc["agent"]["memory"]["content"][3][0]["name"] = "QwenPaw"
    return doc


def _workspace(tmp_path: Path, files: dict[str, dict]) -> Path:
    ws = tmp_path / "ws"
    (ws / "sessions").mkdir(parents=True)
    (ws / "sessions" / ".synced.json").write_text("{}")  # a 2.x marker
    for rel, doc in files.items():
        path = ws / "sessions" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        path.chmod(0o644)
        os.utime(path, (time.time() - 3600,) * 2)
    return ws


def _repair(ws: Path, *args: str):
    return invoke("-w", str(ws), "sessions", "repair", *args, "--json")


def test_dry_run_reports_the_conversion_and_writes_nothing(tmp_path):
    ws = _workspace(tmp_path, {"discord/old.json": GEN1})
    before = (ws / "sessions" / "discord" / "old.json").read_bytes()
    run = _repair(ws, "--all", "--convert-1x", "--dry-run")
    f = run.json()["result"]["files"][0]
    assert f["status"] == "would_repair" and f["classes"] == ["gen1_in_gen2_workspace"]
    text = " ".join(f["actions"])
    assert "4 message(s) into agent.state.context" in text
    assert "2 message(s) marked compressed come back into the live context" in text
    assert "invocation_id (1)" in text  # the key AgentScope 2.0 drops is named
    assert (ws / "sessions" / "discord" / "old.json").read_bytes() == before
    assert not (ws / ".qwenmem" / "quarantine").exists()


def test_convert_writes_what_qwenpaw_loads_and_keeps_the_original(tmp_path):
    ws = _workspace(tmp_path, {"discord/old.json": GEN1})
    path = ws / "sessions" / "discord" / "old.json"
    before = path.read_bytes()
    run = _repair(ws, "--all", "--convert-1x")
    assert run.code == 0, run.err
    f = run.json()["result"]["files"][0]
    assert f["status"] == "repaired"
    assert (ws / f["quarantined"]).read_bytes() == before
    assert path.stat().st_mode & 0o777 == 0o600
    data = path.read_bytes()
    assert validation_problems(data) == []
    agent = json.loads(data)["agent"]
    assert set(agent) == {"state", "mode_state"} and agent["mode_state"] == {}
    state = agent["state"]
    assert state["summary"] == "## Goal\n- Plan the Berlin trip"
    ctx = state["context"]
    # every message, the compressed ones included, in order; the 1.x timestamps kept verbatim
    assert [m["id"] for m in ctx] == ["u1aaaaaaaaaaaaaaaaaaaa", "a1aaaaaaaaaaaaaaaaaaaa", "s1aaaaaaaaaaaaaaaaaaaa",
                                      "a2aaaaaaaaaaaaaaaaaaaa"]
    assert ctx[0]["created_at"] == "2026-05-20 09:00:00.000" and "timestamp" not in ctx[0]
    image = ctx[0]["content"][1]
    assert image["type"] == "data" and image["source"] == {"type": "url", "url": "https://x.test/map.png",
                                                             "media_type": "image/png"}
    call = ctx[1]["content"][0]
    assert (call["type"], call["id"], call["input"], call["state"]) == ("tool_call", "call_1",
                                                                        '{"query": "Berlin"}', "pending")
    assert ctx[1]["metadata"] == {} and "invocation_id" not in ctx[1]
    assert ctx[2]["role"] == "assistant" and ctx[2]["name"] == "system"  # a system message holding a tool_result
    assert ctx[2]["content"][0]["state"] == "running"  # AgentScope's default for a 1.x result
    assert ctx[3]["name"] == "assistant" and ctx[3]["content"][0]["text"] == "It is booked for 12-16 June."
    # converted once: a second run leaves it alone
    again = _repair(ws, "--all", "--convert-1x")
    assert again.json()["result"]["files"][0]["status"] == "ok" and path.read_bytes() == data
    back = invoke("-w", str(ws), "sessions", "restore", run.json()["result"]["run"])
    assert back.code == 0 and path.read_bytes() == before


def test_without_the_flag_the_file_is_only_reported(tmp_path):
    ws = _workspace(tmp_path, {"discord/old.json": _healthy_for_gen1()})
    before = (ws / "sessions" / "discord" / "old.json").read_bytes()
    f = _repair(ws, "--all").json()["result"]["files"][0]
    assert f["status"] == "warning" and "left as it is" in " ".join(f["notes"])
    assert (ws / "sessions" / "discord" / "old.json").read_bytes() == before


def test_a_file_qwenpaw_cannot_convert_is_left_alone_with_the_reason(tmp_path):
    doc = _healthy_for_gen1()
    doc["agent"]["memory"]["content"][0][0]["content"].append({"type": "audio", "source": {"type": "ftp"}})
    ws = _workspace(tmp_path, {"discord/odd.json": doc})
    before = (ws / "sessions" / "discord" / "odd.json").read_bytes()
    run = _repair(ws, "--all", "--convert-1x")
    f = run.json()["result"]["files"][0]
    assert f["status"] == "warning" and "not converted: unknown source type 'ftp'" in " ".join(f["notes"])
    assert (ws / "sessions" / "discord" / "odd.json").read_bytes() == before


def test_the_flag_changes_nothing_in_a_1x_workspace(tmp_path):
    ws = tmp_path / "ws1"
    path = ws / "sessions" / "old.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_healthy_for_gen1()))
    before = path.read_bytes()
    f = _repair(ws, "--all", "--convert-1x").json()["result"]["files"][0]
    assert f["status"] == "ok" and path.read_bytes() == before


def _real_gen1_sessions() -> list[Path]:
    return sorted(p for p in REAL.rglob("*.json*") if "sessions" in p.parts) if REAL.is_dir() else []


@needs_gen2_corpus
def test_real_1x_sessions_in_a_copy_of_the_2x_corpus_convert_and_validate(tmp_path):
    ws = copy_corpus(tmp_path)
    placed = {}
    for i, src in enumerate(_real_gen1_sessions()):
        dest = ws / "sessions" / "real" / f"{i:02d}.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        os.utime(dest, (time.time() - 3600,) * 2)
        placed[dest] = src.read_bytes()
    assert len(placed) >= 10
    run = _repair(ws, "--all", "--convert-1x")
    assert run.code == 0, run.err
    files = {f["path"]: f for f in run.json()["result"]["files"]}
    for dest, original in placed.items():
        f = files[dest.relative_to(ws).as_posix()]
        assert f["status"] == "repaired" and "gen1_in_gen2_workspace" in f["classes"], f
        assert (ws / f["quarantined"]).read_bytes() == original
        assert validation_problems(dest.read_bytes()) == [], dest
    for rel in ("discord/42_discord--dm--42.json", "telegram/7_telegram--7.json"):
        assert validation_problems((ws / "sessions" / rel).read_bytes()) == []
    as2_python = optional_agentscope_python()
    if as2_python is not None:
        out = subprocess.run([str(as2_python), str(BENCH / "agentscope2_validate.py"), *map(str, placed)],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stdout[:2000]


def test_the_conversion_equals_qwenpaws_own(tmp_path):
    as2_python = agentscope_python(qwenpaw=True)
    ws = _workspace(tmp_path, {"discord/old.json": GEN1})
    original = tmp_path / "original.json"
    original.write_bytes((ws / "sessions" / "discord" / "old.json").read_bytes())
    assert _repair(ws, "--all", "--convert-1x").code == 0
    out = subprocess.run([str(as2_python), str(BENCH / "agentscope2_convert.py"), str(original),
                          str(ws / "sessions" / "discord" / "old.json")], capture_output=True, text=True)
    pair = json.loads(out.stdout)["pairs"][0]
    assert pair["valid"] and pair["equal"], pair["difference"]
    assert pair["messages"] == 4
