"""Compaction internals through the library API: concurrency of tiers 2 and 3, chunking, dates, dialog rules."""

from __future__ import annotations

import json
import threading
import time
from datetime import date, datetime, timezone
from pathlib import Path

import pytest

from compact_fixtures import say, session_doc, user
from helpers import CORPUS_REAL, invoke, needs_shared
from qwenmem.core.compaction import dialog as dialog_mod
from qwenmem.core.compaction.gen1.formatting import chunk_messages, format_message
from qwenmem.core.compaction.options import CompactOptions
from qwenmem.core.compaction.run import compact_sessions
from qwenmem.core.compaction.gen1.threshold import compute_budget, plan_compaction, tool_ids_aligned
from qwenmem.core.llm import LLMConfig
from qwenmem.core.sessions import iter_session_refs, load_session
from qwenmem.core.settings import load_settings
from qwenmem.core.tokens import get_counter, message_tokens
from qwenmem.core.workspace import discover_workspace

GOOD = "## Goal\n- g\n\n## Next Steps\n1. n"
EST = get_counter("estimate", 4)


def _workspace(tmp_path: Path, messages: list, summary: str = "", agent: dict | None = None,
               config: dict | None = None) -> Path:
    ws = tmp_path / "ws"
    (ws / "sessions" / "console").mkdir(parents=True)
    (ws / "sessions" / "console" / "default_1.json").write_text(json.dumps(session_doc(messages, summary)),
                                                                encoding="utf-8")
    (ws / "agent.json").write_text(json.dumps(agent or {"language": "en"}), encoding="utf-8")
    if config is not None:
        (ws / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return ws


def _long_chat(n: int = 20, tokens: int = 300) -> list:
    msgs = []
    for i in range(n):
        stamp = f"2026-05-20 10:{i:02d}:00.000"
        msgs.append(user(text=f"question {i} " + "q" * (tokens * 4 - 12), ts=stamp) if i % 2 == 0
                    else say(text=f"answer {i} " + "a" * (tokens * 4 - 10), ts=stamp))
    return msgs


def _run(ws_dir: Path, **opts):
    ws = discover_workspace(ws_dir)
    settings = load_settings(ws)
    refs = list(iter_session_refs(ws))
    reports, _ = compact_sessions(ws, refs, settings, CompactOptions(**opts))
    return ws, reports[0]


def _llm(server, **kw) -> LLMConfig:
    return LLMConfig(server.base_url, "scripted", "sk-test", kw.get("timeout", 10.0), kw.get("retries", 0))


def test_tier3_runs_concurrently_with_tier2(tmp_path, llm_server):
    both_in_flight = threading.Event()
    arrivals = []

    def reply(request):
        arrivals.append(request)
        if len(arrivals) == 1:
            both_in_flight.wait(5)  # returns early only if the other tier's request arrives meanwhile
        else:
            both_in_flight.set()
        system = request["messages"][0]["content"]
        return "- a fact worth keeping" if "daily memory log" in system else GOOD

    llm_server.set_script([{"content": reply}])
    ws_dir = _workspace(tmp_path, _long_chat())
    ws, report = _run(ws_dir, max_input_length=2000, summarizer="llm", llm=_llm(llm_server), longterm=True)
    assert both_in_flight.is_set(), "tier 3 did not start while tier 2 was waiting for the LLM"
    assert report.status == "compacted" and report.tier3.detail.written


def test_history_larger_than_the_summarizer_budget_is_chunked_not_dropped(tmp_path, llm_server):
    llm_server.set_script([{"content": lambda req: GOOD + f"\n- call {len(llm_server.requests)}"}])
    msgs = _long_chat()
    ws, report = _run(_workspace(tmp_path, msgs), max_input_length=2000, summarizer="llm", llm=_llm(llm_server),
                      longterm=False)
    requests = [r["body"]["messages"][1]["content"] for r in llm_server.chat_requests()]
    assert len(requests) >= 3 and report.tier2.detail.chunks == len(requests)
    removed = [m for m in msgs if m["id"] in report.removed_ids]
    for msg in removed:  # every removed message reached the summarizer
        marker = msg["content"][0]["text"].split()[1]
        assert sum(f"question {marker} " in r or f"answer {marker} " in r for r in requests) == 1
    assert all("# previous-summary\n" + GOOD in r for r in requests[1:])  # each chunk updates the last result


def test_invalid_reply_is_retried_once_then_accepted(tmp_path, llm_server):
    llm_server.set_script([{"content": "no sections here"}, {"content": GOOD}])
    ws, report = _run(_workspace(tmp_path, _long_chat(4)), force=True, reserve_ratio=0.004, summarizer="llm",
                      llm=_llm(llm_server), longterm=False)
    assert report.status == "compacted" and report.tier2.detail.chunks == 1
    assert report.tier2.detail.llm_calls == 2 and len(report.removed_ids) == 3


def test_extra_instruction_reaches_the_summarizer(tmp_path, llm_server):
    llm_server.set_script([{"content": GOOD}])
    _run(_workspace(tmp_path, _long_chat(6)), max_input_length=1000, summarizer="llm", llm=_llm(llm_server),
         longterm=False, extra_instruction="focus on the database")
    assert llm_server.chat_requests()[0]["body"]["messages"][1]["content"].endswith(
        "# extra-instruction\nfocus on the database")


def test_daily_note_is_dated_in_the_users_timezone(tmp_path):
    ws_dir = _workspace(tmp_path, _long_chat(6), config={"user_timezone": "Asia/Shanghai"})
    late_utc = datetime(2026, 5, 20, 23, 30, tzinfo=timezone.utc)  # already 07:30 on the 21st in Shanghai
    ws, report = _run(ws_dir, max_input_length=1000, summarizer="extractive", longterm=True, now=late_utc)
    assert report.tier3.detail.path == "memory/2026-05-21.md"
    text = (ws_dir / "memory" / "2026-05-21.md").read_text(encoding="utf-8")
    assert text.startswith("# 2026-05-21\n") and "(07:30)" in text and "question 0" in text


def test_extractive_summary_keeps_the_previous_summary(tmp_path):
    previous = "## Goal\n- migrate the billing service\n\n## Key Decisions\n- **use Postgres 16**: LTS"
    ws_dir = _workspace(tmp_path, _long_chat(6), summary=previous)
    _run(ws_dir, max_input_length=2000, force=True, reserve_ratio=0.2, summarizer="extractive", longterm=False)
    doc = json.loads((ws_dir / "sessions/console/default_1.json").read_text(encoding="utf-8"))
    summary = doc["agent"]["memory"]["_compressed_summary"]
    assert "- migrate the billing service" in summary and "**use Postgres 16**: LTS" in summary
    assert "question 0" in summary


def test_format_matches_qwenpaws_summarizer_input():
    msg = {"id": "m", "name": "Paw", "role": "assistant", "timestamp": "2026-05-20 09:14:04.902", "content": [
        {"type": "thinking", "thinking": "line one\nline two"},
        {"type": "tool_use", "id": "t", "name": "read_file", "input": {"file_path": "a.md"}},
        {"type": "text", "text": "z" * 1001}]}
    assert format_message(msg) == ('[2026-05-20 09:14:04.902] Paw:\n[think]: line one line two\n'
                                   '[tool_use]: read_file params={"file_path": "a.md"}\n[text]: ' + "z" * 1000 + "...")
    assert format_message(msg, include_thinking=False).count("[think]") == 0
    out = {"id": "r", "role": "system", "name": "system", "content": [
        {"type": "tool_result", "id": "t", "name": "read_file", "output": "head<<<TRUNCATED>>>\nnotice"}]}
    assert format_message(out) == "system:\n[tool_result]: read_file output=head"


def test_chunks_respect_the_budget_and_keep_order():
    msgs = _long_chat(10, 100)
    chunks = chunk_messages(msgs, 250, EST)
    assert len(chunks) == 5 and all(EST.count(c) <= 250 for c in chunks)
    assert "".join(chunks).index("question 0") < "".join(chunks).index("answer 9")


def test_dialog_sorts_by_timestamp_names_files_by_date_and_skips_known_ids(tmp_path):
    a = user(ts="2026-05-21 08:00:00.000")
    b = say(ts="2026-05-20 23:59:59.000")
    weird = say(ts="../../etc 12:00")
    plan = dialog_mod.plan_dialog(tmp_path, [a, b, weird], today=date(2026, 1, 2))
    assert [p.name for p in plan.files] == ["2026-01-02.jsonl", "2026-05-20.jsonl", "2026-05-21.jsonl"]
    dialog_mod.write_dialog(plan)
    assert json.loads((tmp_path / "2026-05-20.jsonl").read_text(encoding="utf-8")) == b
    again = dialog_mod.plan_dialog(tmp_path, [a, b], today=date(2026, 1, 2))
    assert again.count == 0 and again.already_present == 2


def test_dialog_lines_are_exact_qwenpaw_lines(tmp_path):
    msg = user(text="你好，世界", ts="2026-05-20 09:00:00.000")
    dialog_mod.write_dialog(dialog_mod.plan_dialog(tmp_path, [msg]))
    assert (tmp_path / "2026-05-20.jsonl").read_bytes() == (json.dumps(msg, ensure_ascii=False) + "\n").encode()


# ---- the real corpus

PAIR = "sessions/ou_975690183c044ff01e03b1d66fb98df9_6fb98df9.json"


def _real(path: Path) -> list:
    return [it[0] for it in json.loads(path.read_text(encoding="utf-8"))["agent"]["memory"]["content"]]


@needs_shared
def test_real_before_state_is_below_qwenpaws_threshold_and_after_state_fits_the_reserve():
    before_doc = json.loads((CORPUS_REAL / "zzjmay123__aiWorkflow__c70a43d" / PAIR).read_text(encoding="utf-8"))
    before = _real(CORPUS_REAL / "zzjmay123__aiWorkflow__c70a43d" / PAIR)
    after = _real(CORPUS_REAL / "zzjmay123__aiWorkflow__f1d82e0" / PAIR)
    tokens = [message_tokens(m, EST) for m in before]
    budget = compute_budget("current", 131072, 0.8, 0.1, before_doc["agent"]["_sys_prompt"],
                            before_doc["agent"]["memory"]["_compressed_summary"], EST)
    assert not plan_compaction(before, tokens, budget).would_compact
    # QwenPaw compacted later, in the unseen 18 minutes; what survived is tool-aligned and within R
    assert not {m["id"] for m in after} & {m["id"] for m in before}
    assert tool_ids_aligned(after) and sum(message_tokens(m, EST) for m in after) <= budget.reserve


@needs_shared
@pytest.mark.parametrize("source", ["zzjmay123__aiWorkflow__c70a43d", "jownda__llm-wiki-builder__276e7d8"])
def test_real_sessions_compact_load_and_offload_everything(tmp_path, source):
    ws_dir = tmp_path / "ws"
    (ws_dir / "sessions").mkdir(parents=True)
    for src in (CORPUS_REAL / source / "sessions").glob("*.json"):
        (ws_dir / "sessions" / src.name).write_bytes(src.read_bytes())
    run = invoke("compact", "--all", "--max-input-length", "32768", "--summarizer", "extractive", "--json",
                 "-w", str(ws_dir))
    assert run.code == 0, run.stderr
    compacted = [s for s in run.json()["result"]["sessions"] if s["status"] == "compacted"]
    assert compacted
    ws = discover_workspace(ws_dir)
    for report in compacted:
        ref = next(r for r in iter_session_refs(ws) if r.key == report["key"])
        loaded = load_session(ref)
        assert loaded.health != "corrupt" and tool_ids_aligned(loaded.session.messages())
        original = _real(CORPUS_REAL / source / "sessions" / ref.path.name)
        removed = [m for m in original if m["id"] in set(report["removed_ids"])]
        assert len(removed) == len(report["removed_ids"])
        assert dialog_mod.all_in_dialog(ws_dir / "dialog", removed) == []


def test_legacy_agent_json_uses_the_legacy_formulas(tmp_path):
    agent = {"running": {"max_input_length": 131072, "context_compact": {"memory_compact_ratio": 0.75}}}
    ws_dir = _workspace(tmp_path, _long_chat(4), summary="s", agent=agent)
    run = invoke("compact", "--check", "--all", "--json", "-w", str(ws_dir))
    report = run.json()["result"]["sessions"][0]
    sys_prompt = "You are Paw."
    assert report["generation"] == "1.x" and report["config_layout"] == "legacy" and report["budget"]["threshold"] == 98304
    assert report["budget"]["fixed_tokens"] == int(len((sys_prompt + "s").encode()) / 4 + 0.5)


def test_a_dialog_path_outside_the_workspace_is_refused(tmp_path):
    agent = {"language": "en", "running": {"light_context_config": {"dialog_path": "../elsewhere"}}}
    ws_dir = _workspace(tmp_path, _long_chat(6), agent=agent)
    before = (ws_dir / "sessions/console/default_1.json").read_bytes()
    run = invoke("compact", "--all", "--max-input-length", "1000", "--summarizer", "extractive", "-w", str(ws_dir))
    assert run.code == 3 and "outside the workspace" in run.stderr
    assert (ws_dir / "sessions/console/default_1.json").read_bytes() == before
    assert not (tmp_path / "elsewhere").exists()


def test_dialog_keeps_two_different_messages_that_share_an_id(tmp_path):
    first = user(text="one", ts="2026-05-20 09:00:00.000")
    second = say(text="two", ts="2026-05-20 09:00:05.000")
    second["id"] = first["id"]
    dialog_mod.write_dialog(dialog_mod.plan_dialog(tmp_path, [first]))
    plan = dialog_mod.plan_dialog(tmp_path, [first, second])
    assert plan.count == 1 and plan.already_present == 1


def test_both_generations_share_one_bounded_dialog_scan(tmp_path):
    from qwenmem.core.compaction.gen2 import dialog as dialog2

    msg1 = user(text="one", ts="2026-05-20 09:00:00.000")
    msg2 = {"id": "m2", "role": "user", "created_at": "2026-05-20T09:00:01", "content": [{"type": "text", "id": "b1"}]}
    log = tmp_path / "2026-05-20.jsonl"
    deep = "[" * 100_000  # json raises RecursionError here, not JSONDecodeError: it is no message, not a crash
    log.write_text("\n".join([deep, "not json", json.dumps(msg1), json.dumps(msg2), '"no id"']) + "\n")
    keys1 = dialog_mod.existing_keys(log, dialog_mod.message_key)
    keys2 = dialog_mod.existing_keys(log, dialog2.line_key)
    assert dialog_mod.message_key(msg1, json.dumps(msg1)) in keys1
    assert dialog2.line_key(msg2, json.dumps(msg2)) in keys2
    assert dialog_mod.all_in_dialog(tmp_path, [msg1]) == [] and dialog2.missing_from_dialog(tmp_path, [msg2]) == []
    # a line without an id is kept as a digest (bounded per line), the same key in both generations
    assert dialog_mod.line_digest_key('"no id"') in keys1 & keys2 and len(keys1) == len(keys2) == 3


def test_several_sessions_are_summarized_concurrently_and_written_in_order(tmp_path, llm_server):
    """With a remote LLM, up to llm_concurrency sessions wait for their summary at once (bounded), each gets its
    own summary, and the writes happen one session at a time in the given order, whichever reply came first."""
    sessions = 6
    lock = threading.Lock()
    state = {"in_flight": 0, "peak": 0, "arrived": 0}
    four_waiting = threading.Event()

    def reply(request):
        text = request["messages"][1]["content"]
        marker = next(w for w in text.split() if w.startswith("sess"))
        with lock:
            state["in_flight"] += 1
            state["peak"] = max(state["peak"], state["in_flight"])
            state["arrived"] += 1
            order = state["arrived"]
            if state["in_flight"] >= 4:
                four_waiting.set()
        four_waiting.wait(5)  # returns early once four requests are in flight together
        time.sleep(0.1 * max(0, 5 - order))  # the first to arrive answers last
        with lock:
            state["in_flight"] -= 1
        return GOOD + f"\n- summary of {marker}"

    llm_server.set_script([{"content": reply}])
    ws_dir = tmp_path / "ws"
    (ws_dir / "sessions" / "console").mkdir(parents=True)
    (ws_dir / "agent.json").write_text(json.dumps({"language": "en"}), encoding="utf-8")
    for k in range(sessions):
        msgs = [user(text=f"sess{k} question {i} " + "q" * 1200, ts=f"2026-05-20 10:{i:02d}:0{k}.000") if i % 2 == 0
                else say(text=f"sess{k} answer {i} " + "a" * 1200, ts=f"2026-05-20 10:{i:02d}:0{k}.000")
                for i in range(8)]
        (ws_dir / "sessions" / "console" / f"s{k}.json").write_text(json.dumps(session_doc(msgs)), encoding="utf-8")
    ws = discover_workspace(ws_dir)
    refs = sorted(iter_session_refs(ws), key=lambda r: r.key, reverse=True)  # s5 … s0: not the file order
    reports, _ = compact_sessions(ws, refs, load_settings(ws), CompactOptions(
        max_input_length=2000, summarizer="llm", llm=_llm(llm_server), longterm=False))
    assert [r.key for r in reports] == [r.key for r in refs]
    assert all(r.status == "compacted" for r in reports), [(r.key, r.error) for r in reports]
    assert state["peak"] == 4  # concurrent, and never more than the bound
    for ref in refs:
        summary = json.loads(ref.path.read_text(encoding="utf-8"))["agent"]["memory"]["_compressed_summary"]
        assert f"- summary of sess{ref.path.stem[1:]}" in summary  # each session got its own reply
    lines = (ws_dir / "dialog" / "2026-05-20.jsonl").read_text(encoding="utf-8").splitlines()
    order = list(dict.fromkeys(json.loads(line)["content"][0]["text"].split()[0] for line in lines))
    assert order == [f"sess{ref.path.stem[1:]}" for ref in refs]  # appended in the given order
