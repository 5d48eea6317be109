"""`compact` on QwenPaw 2.x native sessions: the corpus's real compaction reproduced (dialog/ byte for byte), the
summary rendered with AgentScope's template, tool pairs never separated, and the 1.x safety rules (spec §4.3, §10)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path


from helpers import REPO, invoke
from qwenpaw2_support import builder, copy_corpus, name_agent_as_the_generator, needs_gen2_corpus
from tests.core.compaction.gen2.test_compact2_check import _block, _msg, conversation_of_bytes, write_ws
from validators import agentscope_python

# AgentScope's summary_template, copied from agentscope/agent/_config.py L119-135 @as2.0.10 (not from qwenmem)
TEMPLATE = ("<system-info>Here is a summary of your previous work\n# Task Overview\n{task_overview}\n\n"
            "# Current State\n{current_state}\n\n# Important Discoveries\n{important_discoveries}\n\n"
            "# Next Steps\n{next_steps}\n\n# Context to Preserve\n{context_to_preserve}</system-info>")


def pre_compaction_corpus(tmp_path: Path) -> tuple[Path, Path, bytes]:
    """The corpus with bob's session rewound to the moment QwenPaw compacted it: its context is the 22 messages of
    dialog/2026-12-01.jsonl (moved aside, returned as bytes), the reply c45468… in progress."""
    ws = copy_corpus(tmp_path)
    name_agent_as_the_generator(ws)
    dialog_file = ws / "dialog" / "2026-12-01.jsonl"
    original = dialog_file.read_bytes()
    dialog_file.unlink()
    dialog = [json.loads(line) for line in original.decode().splitlines()]
    doc = json.loads((ws / "sessions" / "console" / "bob_console--bob.json").read_text())
    st = doc["agent"]["state"]
    st["context"], st["summary"], st["reply_context"]["reply_id"] = dialog, "", dialog[-1]["id"]
    pre = ws / "sessions" / "console" / "bob_pre.json"
    pre.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return ws, pre, original


def dialog_last_id(dialog: bytes) -> str:
    return json.loads(dialog.decode().splitlines()[-1])["id"]


@needs_gen2_corpus
def test_corpus_compaction_writes_what_qwenpaw_wrote(tmp_path):
    ws, pre, qwenpaw_dialog = pre_compaction_corpus(tmp_path)
    before = pre.read_bytes()
    run = invoke("-w", str(ws), "compact", "console/bob_pre", "--json")
    assert run.code == 0, run.stderr
    r = run.json()["result"]["sessions"][0]
    assert r["status"] == "compacted" and r["tier2"]["detail"]["summarizer"] == "extractive"
    assert (ws / "dialog" / "2026-12-01.jsonl").read_bytes() == qwenpaw_dialog  # QwenPaw's offload, byte for byte
    st = json.loads(pre.read_text())["agent"]["state"]
    # all 22 compressed; the reply in progress goes on in a zero-block copy (same id, name, usage), as in QwenPaw's
    # own file, where that copy later received the reply's text
    qwenpaw_after = json.loads((ws / "sessions" / "console" / "bob_console--bob.json").read_text())["agent"]["state"]
    [kept] = st["context"]
    assert kept["content"] == [] and kept["id"] == qwenpaw_after["context"][0]["id"] == dialog_last_id(qwenpaw_dialog)
    assert {k: v for k, v in kept.items() if k not in ("content", "created_at", "usage")} == {
        k: v for k, v in qwenpaw_after["context"][0].items() if k not in ("content", "created_at", "usage")}
    assert kept["usage"] == json.loads(qwenpaw_dialog.decode().splitlines()[-1])["usage"]
    reminder = (f"\n<system-reminder>The compressed context is offloaded to '{ws / 'dialog' / '2026-12-01.jsonl'}', "
                "you can refer to it when needed.</system-reminder>")
    assert st["summary"].startswith("<system-info>Here is a summary of your previous work\n# Task Overview\n")
    assert st["summary"].endswith("</system-info>" + reminder)
    assert stat.S_IMODE(pre.stat().st_mode) == 0o600
    assert (ws / r["backup"]).read_bytes() == before
    # a rerun finds nothing to compress and writes nothing
    again = invoke("-w", str(ws), "compact", "console/bob_pre", "--force", "--json")
    assert again.json()["result"]["sessions"][0]["status"] == "unchanged"
    assert (ws / "dialog" / "2026-12-01.jsonl").read_bytes() == qwenpaw_dialog


def test_llm_summary_is_rendered_with_agentscope_template(tmp_path, llm_server):
    fields = {"task_overview": "Plan Berlin.", "current_state": "Notes read.", "important_discoveries": "Hotel: Mitte.",
              "next_steps": "Book tickets.", "context_to_preserve": "Keep answers short."}
    llm_server.set_script([{"content": "```json\n" + json.dumps(fields) + "\n```"}])
    ws = write_ws(tmp_path, conversation_of_bytes(40_000, n=20), "native")
    run = invoke("-w", str(ws), "compact", "console/t", "--max-input-length", "10000", "--system-tokens", "0",
                 "--tools-tokens", "0", "--llm-base-url", llm_server.base_url, "--llm-model", "scripted", "--llm-api-key", "sk-test", "--json")
    assert run.code == 0, run.stderr
    st = json.loads((ws / "sessions" / "console" / "t.json").read_text())["agent"]["state"]
    head, _, tail = st["summary"].partition("\n<system-reminder>")
    assert head == TEMPLATE.format(**fields)
    assert tail.startswith("The compressed context is offloaded to '")
    prompt = llm_server.chat_requests()[0]["body"]["messages"][1]["content"]
    assert "write a continuation summary" in prompt and "task_overview" in prompt


def test_llm_failure_writes_nothing(tmp_path, llm_server):
    llm_server.set_script([{"content": "not json at all"}])
    ws = write_ws(tmp_path, conversation_of_bytes(40_000, n=20), "native")
    path = ws / "sessions" / "console" / "t.json"
    before = path.read_bytes()
    run = invoke("-w", str(ws), "compact", "console/t", "--max-input-length", "10000", "--llm-base-url",
                 llm_server.base_url, "--llm-model", "scripted", "--llm-api-key", "sk-test")
    assert run.code != 0
    assert path.read_bytes() == before and not (ws / "dialog").exists()


def test_no_tool_call_is_separated_from_its_result(tmp_path):
    clock = builder.Clock()
    msgs = conversation_of_bytes(30_000, n=8)
    content = [_block("thinking about it", 50)]
    for i in range(4):  # one reply: call, result, call, result … text; results of 1200 bytes (300 tokens)
        content += [builder.tool_call_block(f"call_{i}", "shell", {"n": i}, clock),
                    builder.tool_result_block(f"call_{i}", "shell", "r" * 1200, clock)]
    content.append(_block("done", 51))
    msgs.append(_msg("assistant", content, 60))
    ws = write_ws(tmp_path, msgs, "native")
    run = invoke("-w", str(ws), "compact", "console/t", "--max-input-length", "10000", "--system-tokens", "0",
                 "--tools-tokens", "0", "--json")
    assert run.code == 0, run.stderr
    st = json.loads((ws / "sessions" / "console" / "t.json").read_text())["agent"]["state"]
    compressed = [json.loads(line) for line in next((ws / "dialog").glob("*.jsonl")).read_text().splitlines()]
    for side in (st["context"], compressed):
        calls = {b["id"] for m in side for b in m["content"] if b["type"] == "tool_call"}
        results = {b["id"] for m in side for b in m["content"] if b["type"] == "tool_result"}
        assert results <= calls, side
    # the reply was split: some of its blocks on each side, every block exactly once
    kept = [m for m in st["context"] if m["id"] == msgs[-1]["id"]]
    gone = [m for m in compressed if m["id"] == msgs[-1]["id"]]
    assert kept and gone
    assert [b["id"] for b in gone[0]["content"] + kept[0]["content"]] == [b["id"] for b in content]


def test_dry_run_writes_nothing_and_changed_underneath_is_refused(tmp_path, monkeypatch):
    ws = write_ws(tmp_path, conversation_of_bytes(40_000, n=20), "native")
    path = ws / "sessions" / "console" / "t.json"
    before = path.read_bytes()
    dry = invoke("-w", str(ws), "compact", "console/t", "--max-input-length", "10000", "--dry-run", "--json")
    assert dry.code == 0 and dry.json()["result"]["sessions"][0]["status"] == "dry-run"
    assert path.read_bytes() == before and not (ws / "dialog").exists()

    import qwenmem.core.compaction.gen2.run as run_mod

    real = run_mod.write_dialog

    def dialog_then_qwenpaw_writes(plan):
        real(plan)
        path.write_bytes(before.replace(b'"summary": ""', b'"summary": "x"'))

    monkeypatch.setattr(run_mod, "write_dialog", dialog_then_qwenpaw_writes)
    busy = invoke("-w", str(ws), "compact", "console/t", "--max-input-length", "10000")
    assert busy.code == 4, busy.stderr
    assert b'"summary": "x"' in path.read_bytes()  # QwenPaw's write survives
    lines = next((ws / "dialog").glob("*.jsonl")).read_text().splitlines()
    monkeypatch.setattr(run_mod, "write_dialog", real)
    path.write_bytes(before)
    ok = invoke("-w", str(ws), "compact", "console/t", "--max-input-length", "10000")
    assert ok.code == 0, ok.stderr
    assert next((ws / "dialog").glob("*.jsonl")).read_text().splitlines() == lines  # the rerun duplicated nothing


def test_scroll_session_without_history_db_is_skipped_not_damaged(tmp_path):
    msgs = conversation_of_bytes(40_000, n=20)
    ws = write_ws(tmp_path, msgs, "scroll", scroll=builder.scroll_state("console:t", msgs, {}, None, []))
    path = ws / "sessions" / "console" / "t.json"
    before = path.read_bytes()
    run = invoke("-w", str(ws), "compact", "console/t", "--max-input-length", "10000", "--json")
    r = run.json()["result"]["sessions"][0]
    assert r["status"] == "skipped" and "history.db" in r["error"]
    assert path.read_bytes() == before


@needs_gen2_corpus
def test_compacted_files_pass_agentscope_validation(tmp_path):
    as2_python = agentscope_python()
    ws, pre, _ = pre_compaction_corpus(tmp_path)
    assert invoke("-w", str(ws), "compact", "console/bob_pre").code == 0
    proc = subprocess.run([str(as2_python), str(REPO / "bench" / "peer" / "agentscope2_check.py"), str(pre),
                           str(ws / "dialog" / "2026-12-01.jsonl")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_compact_reads_a_1gb_sparse_2x_dialog_log_in_bounded_memory(tmp_path):
    """The 2.x sibling of test_security_resources' 1.x test: the shared de-dup scan reads past a 1 GiB line."""
    import resource  # noqa: F401  (the launcher below uses it; Linux only, like the 1.x test)
    import sys

    ws = write_ws(tmp_path, conversation_of_bytes(40_000, n=20), "native")
    dialog = ws / "dialog"
    dialog.mkdir()
    log = dialog / "2026-12-01.jsonl"  # the date of every message's created_at
    with open(log, "wb") as fh:
        fh.truncate(1 << 30)  # 1 GiB of NULs, no newline, taking no disk
    launcher = ("import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)"
                ".returncode; print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    proc = subprocess.run([sys.executable, "-c", launcher, sys.executable, "-m", "qwenmem", "-w", str(ws), "compact",
                           "console/t", "--max-input-length", "10000", "--system-tokens", "0"],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=600,
                          check=False)
    code, maxrss_kib = (int(v) for v in proc.stdout.split())
    assert code == 0, proc.stderr
    assert maxrss_kib / 1024 < 400, f"compact peaked at {maxrss_kib / 1024:.0f} MiB on a 1 GiB sparse dialog log"
    assert log.stat().st_size > 1 << 30  # and it appended the compressed messages
