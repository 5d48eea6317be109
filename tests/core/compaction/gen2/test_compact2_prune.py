"""2.x tool-result pruning: QwenPaw's own cut reproduced from the corpus's artifact, the quoted-path notice and
qwenpaw_truncation metadata, no 100-byte slack, the oversized-line case, and notices pointing at deleted artifacts
(spec qwenpaw2-workspace.md §4.6, §2.3, §8.13)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers import invoke
from qwenpaw2_support import GEN2_WS, builder, copy_corpus, needs_gen2_corpus
from tests.core.compaction.gen2.test_compact2_check import _block, _msg, write_ws

ARTIFACT = "tool-result-d563ad694f0841d185771d597fabbf04.txt"


def _qwenpaw_result() -> dict:
    for line in (GEN2_WS / "dialog" / "2026-12-01.jsonl").read_text().splitlines():
        for b in json.loads(line)["content"]:
            if b["type"] == "tool_result" and ARTIFACT in json.dumps(b):
                return b
    raise AssertionError("corpus result not found")


def _result_block(text: str) -> dict:
    return {"type": "tool_result", "id": "call_1", "name": "lookup_notes", "output": [
        {"type": "text", "text": text, "id": "t" * 32, "created_at": "2026-12-01T09:00:00.000001", "finished_at": None}],
        "state": "success", "metadata": {}, "created_at": "2026-12-01T09:00:00.000001", "finished_at": None}


def _prune_one(text: str, max_bytes: int, cache: Path) -> dict:
    from qwenmem.core.compaction.gen2.prune import Limits, prune

    msg = _msg("assistant", [{"type": "tool_call", "id": "call_1", "name": "lookup_notes", "input": "{}",
                              "state": "finished", "suggested_rules": [], "created_at": None, "finished_at": None},
                             _result_block(text)], 1)
    prune([msg, _msg("user", [_block("next", 2)], 2), _msg("assistant", [_block("ok", 3)], 3)],
          Limits(recent_n=1, old_max_bytes=max_bytes, recent_max_bytes=max_bytes, cache_dir=cache))
    return msg["content"][1]


@needs_gen2_corpus
def test_cut_reproduces_qwenpaw_output_and_metadata(tmp_path):
    full = (GEN2_WS / "tool_results" / ARTIFACT).read_text()
    theirs = _qwenpaw_result()
    their_meta = theirs["metadata"]["qwenpaw_truncation"]["0"]
    ours = _prune_one(full, 3000, tmp_path)
    our_meta = ours["metadata"]["qwenpaw_truncation"]["0"]
    our_path = our_meta["file_path"]
    assert re.fullmatch(r"tool-result-[0-9a-f]{32}\.txt", Path(our_path).name)
    assert ours["output"][0]["text"].replace(our_path, their_meta["file_path"]) == theirs["output"][0]["text"]
    for key in ("version", "file_size_bytes", "total_lines", "start_line", "max_bytes", "excerpt_bytes", "read_from"):
        assert our_meta[key] == their_meta[key], key
    assert our_meta["notice"].replace(our_path, their_meta["file_path"]) == their_meta["notice"]
    # QwenPaw cut this result at 8000 bytes when it was recent and re-cut it at 3000 later: same text
    recent = _prune_one(full, 8000, tmp_path)
    from qwenmem.core.compaction.gen2.prune import Limits, prune

    msg = _msg("assistant", [recent], 1)
    prune([msg], Limits(recent_n=1, old_max_bytes=3000, recent_max_bytes=3000, cache_dir=tmp_path))
    path = recent["metadata"]["qwenpaw_truncation"]["0"]["file_path"]
    assert msg["content"][0]["output"][0]["text"].replace(path, their_meta["file_path"]) == theirs["output"][0]["text"]


def test_no_slack_and_the_oversized_line(tmp_path):
    exact = _prune_one("a\n" * 1500, 3000, tmp_path)  # 3000 bytes: kept as is
    assert "qwenpaw_truncation" not in exact["metadata"]
    over = _prune_one("a\n" * 1500 + "b", 3000, tmp_path)  # 3001 bytes: cut (1.x allowed 100 bytes more)
    assert over["metadata"]["qwenpaw_truncation"]["0"]["read_from"] == 1501
    one_line = _prune_one("x" * 5000, 3000, tmp_path)
    meta = one_line["metadata"]["qwenpaw_truncation"]["0"]
    assert meta["read_from"] is None and meta["continuation_mode"] == "artifact"
    assert f'file_path="{meta["file_path"]}"' in one_line["output"][0]["text"]


def test_compact_writes_the_artifact_before_the_session(tmp_path):
    clock = builder.Clock()
    big = "".join(f"{i:04d} a line of tool output\n" for i in range(2000))
    msgs = [_msg("user", [_block("look", 0)], 0),
            _msg("assistant", [builder.tool_call_block("call_1", "shell", {"c": "ls"}, clock),
                               builder.tool_result_block("call_1", "shell", big, clock), _block("seen", 1)], 1)]
    msgs += [_msg("user" if i % 2 == 0 else "assistant", [_block(f"m{i}", i)], i) for i in range(2, 6)]
    ws = write_ws(tmp_path, msgs, "native")
    run = invoke("-w", str(ws), "compact", "console/t", "--json")
    assert run.code == 0, run.stderr
    r = run.json()["result"]["sessions"][0]
    assert r["status"] == "pruned" and r["tier1"]["detail"]["outputs_cut"] == 1
    block = json.loads((ws / "sessions" / "console" / "t.json").read_text())["agent"]["state"]["context"][1][
        "content"][1]
    meta = block["metadata"]["qwenpaw_truncation"]["0"]
    artifact = Path(meta["file_path"])
    assert artifact.parent == (ws / "tool_results").resolve() and artifact.read_text() == big
    assert meta["max_bytes"] == 3000 and len(block["output"][0]["text"].split("<<<TRUNCATED>>>")[0].encode()) <= 3000


@needs_gen2_corpus
def test_check_reports_notices_pointing_at_deleted_artifacts(tmp_path):
    ws = copy_corpus(tmp_path)
    doc = json.loads((ws / "sessions" / "console" / "bob_console--bob.json").read_text())
    named = re.findall(r"tool-result-[0-9a-f]{32}\.txt", json.dumps(doc))
    assert named
    before = invoke("-w", str(ws), "compact", "--check", "console/bob_console--bob", "--json").json()
    assert before["result"]["sessions"][0]["artifacts_missing"] == []  # found by name under the moved root
    (ws / "tool_results" / named[0]).unlink()
    after = invoke("-w", str(ws), "compact", "--check", "console/bob_console--bob", "--json").json()
    r = after["result"]["sessions"][0]
    assert len(r["artifacts_missing"]) == 1 and named[0] in r["artifacts_missing"][0]
    assert any("no longer exist" in n for n in r["notices"])
