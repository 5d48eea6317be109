"""`compact --check` on QwenPaw 2.x files: AgentScope's count, the native and scroll thresholds at their boundaries
(expected numbers computed here from the spec's formulas, independently of qwenmem), and the real native
compaction of the generated corpus (spec qwenpaw2-workspace.md §4.2-4.4)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from helpers import invoke
from qwenpaw2_support import builder, copy_corpus, name_agent_as_the_generator, needs_gen2_corpus


def _block(text: str, i: int) -> dict:
    return {"type": "text", "text": text, "id": f"b{i:030d}", "created_at": "2026-12-01T10:00:00.000001",
            "finished_at": None}


def _msg(role: str, blocks: list, i: int, metadata: dict | None = None) -> dict:
    return {"name": "user" if role == "user" else "QwenPaw", "content": blocks, "role": role, "id": f"m{i:031d}",
            "metadata": metadata or {}, "created_at": f"2026-12-01T10:00:{i % 60:02d}.000001", "usage": None,
            "finished_at": None, "finished_reason": None, "structured_output": None, "error": None}


def conversation_of_bytes(total: int, n: int = 10) -> list[dict]:
    """n alternating user/assistant messages whose texts add up to exactly `total` UTF-8 bytes (one 'é' = 2 bytes
    in the first message, so multibyte text is counted in bytes, not characters)."""
    sizes = [total // n] * n
    sizes[-1] += total - sum(sizes)
    msgs = []
    for i, size in enumerate(sizes):
        text = ("é" + "x" * (size - 2)) if i == 0 else "y" * size
        assert len(text.encode()) == size
        msgs.append(_msg("user" if i % 2 == 0 else "assistant", [_block(text, i)], i,
                         {"qwenpaw_tag": "external_user_query"} if i % 2 == 0 else None))
    return msgs


def write_ws(tmp_path: Path, context: list[dict], strategy: str, summary="", scroll: dict | None = None) -> Path:
    ws = tmp_path / "ws"
    (ws / "sessions" / "console").mkdir(parents=True)
    builder.agent_json(ws, strategy=strategy)
    st = builder.state("console:t", context, summary)
    doc = builder.document(st, scroll)
    (ws / "sessions" / "console" / "t.json").write_text(builder.dumps(doc), encoding="utf-8")
    return ws


def check_json(ws: Path, *extra: str) -> dict:
    run = invoke("-w", str(ws), "compact", "--check", "console/t", "--json", "--system-tokens", "0",
                 "--tools-tokens", "0", *extra)
    assert run.code == 0, run.stderr
    sessions = run.json()["result"]["sessions"]
    assert len(sessions) == 1
    return sessions[0]


def agentscope_tokens(nbytes: int, data_blocks: int = 0) -> int:
    """Spec §4.2, written out: 2000 per data block plus one rounding of bytes / 4."""
    return 2000 * data_blocks + math.floor(nbytes / 4 + 0.5)


# ---------------------------------------------------------------------------------------------- native boundary

C = 10_000


@pytest.mark.parametrize("delta,compacts", [(-1, False), (0, True), (1, True)])
def test_native_triggers_at_tokens_equal_to_trigger(tmp_path, delta, compacts):
    trigger = 0.8 * C  # 8000: AgentScope skips only when tokens < trigger
    nbytes = int(trigger + delta) * 4
    ws = write_ws(tmp_path, conversation_of_bytes(nbytes), "native")
    r = check_json(ws, "--max-input-length", str(C))
    assert r["strategy"] == "native"
    assert r["terms"]["total"] == agentscope_tokens(nbytes) == trigger + delta
    assert r["trigger"] == pytest.approx(trigger)
    assert r["reserve"] == pytest.approx(0.1 * C)
    assert r["would_compact"] is compacts


def test_native_kept_part_fits_the_reserve_and_the_next_message_would_not(tmp_path):
    msgs = conversation_of_bytes(40_000, n=20)  # 2000 bytes = 500 tokens each; reserve 1000 tokens
    ws = write_ws(tmp_path, msgs, "native")
    r = check_json(ws, "--max-input-length", str(C))
    reserve = 0.1 * C
    # walk from the newest: stop at the first suffix whose count reaches the reserve (>=), then split it by blocks
    k = len(msgs) - 1
    while k >= 0 and agentscope_tokens(2000 * (len(msgs) - k)) < reserve:
        k -= 1
    # the boundary message has one block; keeping it would exceed the reserve (count > reserve) → compressed
    boundary_kept = agentscope_tokens(2000 * (len(msgs) - k)) <= reserve
    first_kept = k if boundary_kept else k + 1
    assert r["kept_ids"] == [m["id"] for m in msgs[first_kept:]]
    assert r["removed_ids"] == [m["id"] for m in msgs[:first_kept]]
    assert r["would_compact"] is True


def test_native_counts_summary_data_blocks_and_tool_input(tmp_path):
    clock = builder.Clock()
    call = builder.tool_call_block("call_1", "read_file", {"path": "notes.md"}, clock)
    result = builder.tool_result_block("call_1", "read_file", "line one\nline two", clock)
    data = {"type": "data", "id": "d" * 32, "source": {"type": "url", "url": "file:///x.png", "media_type": "image/png"},
            "name": "x.png", "created_at": "2026-12-01T10:00:00.000001", "finished_at": None}
    msgs = [_msg("user", [_block("hello", 0), data], 0), _msg("assistant", [call, result, _block("done", 2)], 1)]
    summary = "<system-info>Here is a summary</system-info>"
    ws = write_ws(tmp_path, msgs, "native", summary=summary)
    r = check_json(ws, "--max-input-length", str(C), "--system-tokens", "10")
    nbytes = 40 + len(summary.encode()) + len("hello") + len(call["input"].encode()) + len(
        "line one\nline two") + len("done")
    assert r["terms"]["total"] == agentscope_tokens(nbytes, data_blocks=1)
    assert r["terms"]["data_blocks"] == 1


def test_native_never_keeps_a_tool_result_without_its_call(tmp_path):
    clock = builder.Clock()
    big = "z" * 6000  # the result alone is 1500 tokens > reserve 1000: result and call go together
    call = builder.tool_call_block("call_9", "shell", {"cmd": "ls"}, clock)
    result = builder.tool_result_block("call_9", "shell", big, clock)
    msgs = conversation_of_bytes(32_000, n=8) + [_msg("assistant", [call, result, _block("ok", 99)], 99)]
    ws = write_ws(tmp_path, msgs, "native")
    r = check_json(ws, "--max-input-length", str(C))
    assert r["would_compact"] is True
    # the boundary message keeps only its text block: its call and result are both compressed
    assert r["boundary_blocks"] == [2, 3]
    assert r["kept_ids"] == [msgs[-1]["id"]]


# ---------------------------------------------------------------------------------------------- scroll boundary


def scroll_ws(tmp_path: Path, msgs: list[dict], in_history: int | None = None) -> Path:
    ws = write_ws(tmp_path, msgs, "scroll", scroll=builder.scroll_state("console:t", msgs, {}, None, []))
    conn = builder.create_history_db(ws / "history.db")
    rows = builder.rows_for("console:t", msgs[: len(msgs) if in_history is None else in_history])
    builder.insert_rows(conn, rows)
    conn.commit()
    conn.close()
    return ws


@pytest.mark.parametrize("delta,evicts", [(-1, False), (0, False), (1, True)])
def test_scroll_evicts_only_above_the_trigger(tmp_path, delta, evicts):
    trigger = 0.8 * C  # scroll returns unless tokens > trigger
    nbytes = int(trigger + delta) * 4
    ws = scroll_ws(tmp_path, conversation_of_bytes(nbytes, n=20))
    r = check_json(ws, "--max-input-length", str(C))
    assert r["strategy"] == "scroll"
    assert r["terms"]["total"] == trigger + delta
    assert r["would_compact"] is evicts
    assert r["hard_limit"] == C - min(4096, max(1, int(0.05 * C)))


@pytest.mark.parametrize("h,ratio", [(9000, 0.1), (50_000, 0.05), (1_000_000, 0.1), (64, 0.1), (200_000, 0.3)])
def test_scroll_reserve_and_hard_limit_formulas(h, ratio):
    from qwenmem.core.compaction.gen2 import scroll

    # written out by cases instead of min/max chains
    floor = 10_000 if 0.1 * h > 10_000 else 0.1 * h
    want = ratio * h if ratio * h > floor else floor
    want = 40_000 if want > 40_000 else want
    out_reserve = int(h * 0.05)
    out_reserve = 1 if out_reserve < 1 else (4096 if out_reserve > 4096 else out_reserve)
    assert scroll.reserve_tokens(h, ratio) == pytest.approx(want)
    assert scroll.hard_limit(h) == h - out_reserve


def test_scroll_keeps_the_active_turn_and_announces_rows_to_write(tmp_path):
    msgs = conversation_of_bytes(48_000, n=20)
    ws = scroll_ws(tmp_path, msgs, in_history=6)
    r = check_json(ws, "--max-input-length", str(C))
    assert r["would_compact"] is True and r["not_in_history"] == 14
    assert any("no rows in history.db yet" in n for n in r["notices"])
    # the active turn: the newest real user message (index 18) and its reply stay live whatever the reserve
    assert msgs[18]["id"] in r["kept_ids"] and msgs[19]["id"] in r["kept_ids"]
    assert r["removed_ids"] == [m["id"] for m in msgs[: len(r["removed_ids"])]]
    # the evicted part ends before a user message: no reply is separated from its question
    assert msgs[len(r["removed_ids"])]["role"] == "user"
    (ws / "history.db").unlink()  # no store: nothing may leave the file
    gone = check_json(ws, "--max-input-length", str(C))
    assert gone["would_compact"] is False and any("not readable" in n for n in gone["notices"])


# ---------------------------------------------------------------------------------------------- the real corpus


@needs_gen2_corpus
def test_corpus_native_compaction_point_agrees_with_qwenpaw(tmp_path):
    """bob's native session was compacted by QwenPaw at C=9000 inside the reply c45468…: the context then was the
    22 messages now in dialog/2026-12-01.jsonl. QwenPaw compressed all of them and kept a zero-block copy of the
    reply c45468… (same id; it holds only the text written after the compaction)."""
    ws = copy_corpus(tmp_path)
    name_agent_as_the_generator(ws)
    dialog = [json.loads(line) for line in (ws / "dialog" / "2026-12-01.jsonl").read_text().splitlines()]
    after = json.loads((ws / "sessions" / "console" / "bob_console--bob.json").read_text())["agent"]["state"]
    assert after["context"][0]["id"] == dialog[-1]["id"]  # the reply that was split
    doc = json.loads((ws / "sessions" / "console" / "bob_console--bob.json").read_text())
    doc["agent"]["state"]["context"] = dialog
    doc["agent"]["state"]["summary"] = ""
    doc["agent"]["state"]["reply_context"]["reply_id"] = dialog[-1]["id"]
    pre = ws / "sessions" / "console" / "bob_pre.json"
    pre.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    run = invoke("-w", str(ws), "compact", "--check", str(pre), "--json")
    assert run.code == 0, run.stderr
    r = run.json()["result"]["sessions"][0]
    assert r["strategy"] == "native" and r["context_size"] == 9000
    assert r["would_compact"] is True
    assert r["removed_ids"] == [m["id"] for m in dialog]
    kept_now = {b["id"] for m in after["context"][:1] for b in m["content"]}
    # no block of the pre-compaction context was kept, only the reply's id, as QwenPaw's file shows
    assert r["kept_ids"] == [after["context"][0]["id"]] == [dialog[-1]["id"]]
    assert not kept_now & {b["id"] for b in dialog[-1]["content"]}
    # one step earlier (the reply held only its tool call) the corpus's agent did not compact. That agent was
    # wired without QwenPaw's tool set (its corpus SOURCES.md): with no tools and no system prompt, neither does
    # qwenmem. The agent QwenPaw's AgentBuilder makes sends ~9,700 tokens of prompt and tools at once: over the
    # 7,200 trigger by itself, so by default qwenmem compacts here, as that agent would.
    doc["agent"]["state"]["context"][-1]["content"] = dialog[-1]["content"][:1]
    pre.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    earlier = invoke("-w", str(ws), "compact", "--check", str(pre), "--json", "--system-tokens", "0",
                     "--tools-tokens", "0").json()["result"]["sessions"][0]
    assert earlier["would_compact"] is False, earlier["reason"]
    default = invoke("-w", str(ws), "compact", "--check", str(pre), "--json").json()["result"]["sessions"][0]
    assert default["would_compact"] is True and default["terms"]["system"] + default["terms"]["tools"] > 7200


@needs_gen2_corpus
def test_corpus_check_names_strategies_and_what_is_not_stored(tmp_path):
    ws = copy_corpus(tmp_path)
    run = invoke("-w", str(ws), "compact", "--check", "console/bob_console--bob")
    assert run.code == 0, run.stderr
    assert "strategy native" in run.stdout and "C = 9,000" in run.stdout
    assert "stores neither the system prompt nor the tool schemas" in " ".join(run.stdout.split())  # wrapped
    alice = invoke("-w", str(ws), "compact", "--check", "console/alice_console--alice", "--json").json()
    r = alice["result"]["sessions"][0]
    assert r["strategy"] == "scroll" and r["hard_limit"] == 9000 - 450 and r["reserve"] == 900
    assert r["not_in_history"] == 0


def test_json_keys_of_a_2x_check_are_pinned(tmp_path):
    ws = write_ws(tmp_path, conversation_of_bytes(4000), "native")
    r = check_json(ws)
    assert set(r) == {
        "key", "path", "generation", "strategy", "strategy_source", "context_size", "context_source", "trigger_ratio",
        "reserve_ratio", "trigger", "reserve", "hard_limit", "terms", "message_count", "would_compact", "reason",
        "kept_ids", "removed_ids", "boundary_id", "boundary_blocks", "keep_tokens", "not_in_history", "notices",
        "tokenizer", "prunable_outputs", "tokens_after_prune", "artifacts_named", "artifacts_missing",
        "artifacts_expiring"}
    assert set(r["terms"]) == {"system", "system_source", "tools", "tools_source", "summary", "messages",
                               "data_blocks", "total"}
    assert r["generation"] == "2.x"
