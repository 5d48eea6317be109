"""`qwenmem compact` end to end: real sample workspace, real scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import invoke, run_cli
from qwenmem.core.compaction.gen1.threshold import tool_ids_aligned

CONSOLE = "sessions/console/default_1764235442381.json"
KEY = "console/default_1764235442381"
GOOD = "## Goal\n- fix the staging deploy\n\n## Progress\n### Done\n- [x] read deploy.log\n\n## Next Steps\n1. restart pgbouncer"
# M=1200: T=960, R=120. Tier 1 cuts the old 4 KB tool output first; the rest is still over the threshold.
SMALL = ["--max-input-length", "1200"]


def _llm(server, *extra):
    return ["--llm-base-url", server.base_url, "--llm-model", "scripted", "--llm-api-key", "sk-test", *extra]


def _est(text: str) -> int:
    return int(len(text.encode("utf-8")) / 4 + 0.5) if text else 0


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
            and ".qwenmem" not in p.parts}


def _messages(path: Path) -> list:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return [item[0] for item in doc["agent"]["memory"]["content"]]


def test_check_reports_the_spec_numbers(sample_ws):
    run = invoke("compact", "--check", "--all", "--json", "-w", str(sample_ws))
    assert run.code == 0, run.stderr
    doc = run.json()
    by_key = {s["key"]: s for s in doc["result"]["sessions"]}
    session = json.loads((sample_ws / CONSOLE).read_text(encoding="utf-8"))
    report = by_key[KEY]
    system = _est(session["agent"]["_sys_prompt"])
    assert report["tokens"]["system"] == system and report["tokens"]["summary"] == 0
    assert report["budget"]["threshold"] == 104857 and report["budget"]["reserve"] == 13107
    assert report["budget"]["left"] == 104857 - system
    assert report["room"] == report["budget"]["left"] - report["tokens"]["messages"]
    assert report["would_compact"] is False and len(report["kept_ids"]) == 8
    assert any("77_telegram" in w for w in doc["warnings"])  # the truncated sample file is reported, not fatal


def test_check_with_flags_names_what_it_would_keep(sample_ws):
    run = invoke("compact", "--check", KEY, "--max-input-length", "1500", "--json", "-w", str(sample_ws))
    report = run.json()["result"]["sessions"][0]
    assert report["budget"]["threshold"] == 1200 and report["budget"]["reserve"] == 150
    assert report["would_compact"] is True
    ids = [m["id"] for m in _messages(sample_ws / CONSOLE)]
    kept = report["kept_ids"]
    assert kept == ids[len(ids) - len(kept):] and report["removed_ids"] == ids[: len(ids) - len(kept)]


def test_compact_with_llm_writes_every_tier(sample_ws, llm_server):
    # tiers 2 and 3 ask concurrently, so answer by prompt rather than by arrival order
    llm_server.set_script([{"content": lambda req: "### Facts\n- staging Postgres refused connections"
                            if "daily memory log" in req["messages"][0]["content"] else GOOD}])
    original = (sample_ws / CONSOLE).read_bytes()
    before = _messages(sample_ws / CONSOLE)
    run = invoke("compact", KEY, *SMALL, *_llm(llm_server), "--json", "-w", str(sample_ws))
    assert run.code == 0, run.stderr
    report = run.json()["result"]["sessions"][0]
    assert report["status"] == "compacted"
    doc = json.loads((sample_ws / CONSOLE).read_text(encoding="utf-8"))
    assert doc["agent"]["memory"]["_compressed_summary"] == GOOD
    kept = _messages(sample_ws / CONSOLE)
    removed_ids = report["removed_ids"]
    assert [m["id"] for m in kept] == [m["id"] for m in before][len(removed_ids):]
    assert tool_ids_aligned(kept) and removed_ids
    # tier 1: the old shell output now points at its offloaded full text
    offloads = list((sample_ws / "tool_results").glob("*.txt"))
    assert len(offloads) == 1
    # dialog: one line per removed message, same dicts, sorted by timestamp, no marks
    lines = (sample_ws / "dialog" / "2026-11-27.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == removed_ids
    assert all(not line.startswith("[") for line in lines)
    # tier 3 ran alongside tier 2 and landed in today's log with a marker
    notes = [p for p in (sample_ws / "memory").glob("*.md") if "qwenmem:compact" in p.read_text(encoding="utf-8")]
    assert len(notes) == 1 and "staging Postgres refused" in notes[0].read_text(encoding="utf-8")
    # the original bytes are kept; the new file is one line, keeps unknown keys and non-ASCII text
    backups = list((sample_ws / ".qwenmem" / "backups").rglob("default_1764235442381.json"))
    assert len(backups) == 1 and backups[0].read_bytes() == original
    written = (sample_ws / CONSOLE).read_bytes()
    assert b"\n" not in written and set(doc["agent"]) == set(json.loads(original)["agent"])
    # the summarizer saw the removed conversation, in QwenPaw's format
    first = llm_server.chat_requests()[0]["body"]["messages"][1]["content"]
    assert first.startswith("# conversation\n[2026-11-27 09:14:02.381] user:\n[text]: The deploy failed")


FAILURES = {
    "timeout": [{"delay": 3, "content": GOOD}],
    "http_error": [{"status": 500}],
    "malformed": [{"raw": b"this is not json"}],
    "empty": [{"empty": True}],
    "no_sections": [{"content": "The user fixed the deploy."}],
    "too_long": [{"content": "## Goal\n" + "- padding\n" * 3000}],
    "lone_surrogate": [{"raw": b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": '
                               b'[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", '
                               b'"content": "## Goal\\n- half an emoji \\ud83d"}}]}'}],
}


@pytest.mark.parametrize("kind", sorted(FAILURES))
def test_llm_failure_leaves_everything_untouched(sample_ws, llm_server, kind):
    llm_server.set_script(FAILURES[kind])
    before = _tree(sample_ws)
    # a real process, so its stderr is ours alone (the test server's threads log to this process's stderr)
    run = run_cli("compact", KEY, *SMALL, *_llm(llm_server, "--llm-timeout", "0.5", "--llm-retries", "0"),
                  "-w", str(sample_ws))
    assert run.code == 5, (run.stdout, run.stderr)
    assert run.stderr.startswith("error:") and len(run.stderr.strip().splitlines()) == 1
    assert _tree(sample_ws) == before


def test_rerun_after_a_crash_does_not_duplicate_dialog_or_daily_note(sample_ws, llm_server):
    llm_server.set_script([{"content": GOOD}])
    original = (sample_ws / CONSOLE).read_bytes()
    assert invoke("compact", KEY, *SMALL, *_llm(llm_server), "-w", str(sample_ws)).code == 0
    dialog = (sample_ws / "dialog" / "2026-11-27.jsonl").read_bytes()
    notes = {p: p.read_bytes() for p in (sample_ws / "memory").glob("*.md")}
    # the crash: dialog and the daily log were written, the session file never was
    (sample_ws / CONSOLE).write_bytes(original)
    assert invoke("compact", KEY, *SMALL, *_llm(llm_server), "-w", str(sample_ws)).code == 0
    assert (sample_ws / "dialog" / "2026-11-27.jsonl").read_bytes() == dialog
    assert {p: p.read_bytes() for p in (sample_ws / "memory").glob("*.md")} == notes


def test_session_changed_underneath_is_refused(sample_ws, llm_server):
    path = sample_ws / CONSOLE

    def concurrent_writer(request):
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["agent"]["memory"]["content"].append(doc["agent"]["memory"]["content"][-1])
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        return GOOD

    llm_server.set_script([{"content": concurrent_writer}])
    run = invoke("compact", KEY, *SMALL, *_llm(llm_server), "--no-longterm", "-w", str(sample_ws))
    assert run.code == 4, run.stderr
    assert len(_messages(path)) == 9  # QwenPaw's write survives
    assert not (sample_ws / "dialog").exists()


def test_without_llm_the_extractive_summarizer_says_so(sample_ws):
    run = invoke("compact", KEY, *SMALL, "-w", str(sample_ws))
    assert run.code == 0, run.stderr
    assert "extractive" in run.stderr
    summary = json.loads((sample_ws / CONSOLE).read_text(encoding="utf-8"))["agent"]["memory"]["_compressed_summary"]
    for heading in ("## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress",
                    "### Blocked", "## Key Decisions", "## Next Steps", "## Critical Context"):
        assert heading in summary
    assert "ECONNREFUSED" in summary and "dialog/2026-11-27.jsonl" in summary


def test_summarizer_llm_without_configuration_is_a_usage_error(sample_ws):
    run = invoke("compact", KEY, "--summarizer", "llm", "-w", str(sample_ws))
    assert run.code == 2 and "needs an LLM" in run.stderr


def test_dry_run_writes_nothing_and_names_the_split(sample_ws):
    before = _tree(sample_ws)
    run = invoke("compact", KEY, *SMALL, "--dry-run", "--json", "-w", str(sample_ws))
    assert run.code == 0, run.stderr
    report = run.json()["result"]["sessions"][0]
    assert report["status"] == "dry-run" and report["removed_ids"] and report["kept_ids"]
    assert report["context_tokens_after"] < report["context_tokens_before"]
    assert _tree(sample_ws) == before and not (sample_ws / ".qwenmem").exists()


def test_below_threshold_nothing_happens_unless_forced(sample_ws):
    before = (sample_ws / CONSOLE).read_bytes()
    run = invoke("compact", KEY, "--no-prune", "-w", str(sample_ws))
    assert run.code == 0 and (sample_ws / CONSOLE).read_bytes() == before
    forced = invoke("compact", KEY, "--no-prune", "--force", "--reserve-ratio", "0.001", "--json", "-w", str(sample_ws))
    assert forced.code == 0, forced.stderr
    assert forced.json()["result"]["sessions"][0]["status"] == "compacted"


def test_busy_workspace_exits_4(sample_ws):
    from qwenmem.core.fsio import exclusive_lock

    with exclusive_lock(sample_ws / ".qwenmem" / "lock"):
        run = invoke("compact", KEY, *SMALL, "-w", str(sample_ws))
    assert run.code == 4 and "lock" in run.stderr


def test_damaged_session_is_refused_with_a_hint(sample_ws):
    run = invoke("compact", "telegram/77_telegram--77", "--force", "-w", str(sample_ws))
    assert run.code == 3 and "repair" in run.stderr


def test_all_compacts_the_healthy_sessions_and_skips_the_damaged_one(sample_ws):
    run = invoke("compact", "--all", "--force", "--reserve-ratio", "0.0005", "--json", "-w", str(sample_ws))
    assert run.code == 1, run.stderr  # partial: one session could not be compacted
    assert run.json()["status"] == "problems"
    statuses = {s["key"]: s["status"] for s in run.json()["result"]["sessions"]}
    assert statuses["telegram/77_telegram--77"] == "skipped"
    assert statuses[KEY] == "compacted"


ENVELOPE = {"qwenmem_json", "command", "status", "result", "warnings", "errors"}
CHECK_ROW = {"key", "path", "generation", "config_layout", "tokenizer", "tokens", "budget", "message_count", "legacy_compressed",
             "would_compact", "reason", "room", "kept_ids", "removed_ids", "keep_tokens", "aligned", "fallback",
             "prunable_outputs", "tokens_after_prune", "health", "problems"}
BUDGET = {"config_layout", "max_input_length", "threshold_ratio", "reserve_ratio", "threshold", "reserve",
          "system_tokens", "summary_tokens", "fixed_tokens", "left", "blocked"}
REPORT = {"key", "path", "status", "check", "tier1", "tier2", "tier3", "kept_ids", "removed_ids",
          "context_tokens_before", "context_tokens_after", "backup", "warnings", "error", "error_kind"}
TIER_DETAIL = {
    "tier1": {"outputs_cut", "outputs_recut", "bytes_removed", "offload_files", "skipped"},
    "tier2": {"reason", "threshold", "reserve", "summarizer", "chunks", "llm_calls", "summary_tokens_before",
              "summary_tokens_after", "removed_messages", "kept_messages", "aligned", "fallback", "dialog_files",
              "dialog_lines", "dialog_already_present"},
    "tier3": {"path", "duplicate", "written", "chars"},
}


def test_json_contract(sample_ws):
    check = invoke("compact", "--check", KEY, "--json", "-w", str(sample_ws)).json()
    assert set(check) == ENVELOPE and check["command"] == "compact check"
    assert set(check["result"]) == {"workspace", "config_layout", "sessions"}
    row = check["result"]["sessions"][0]
    assert set(row) == CHECK_ROW and set(row["budget"]) == BUDGET
    assert set(row["tokens"]) == {"system", "summary", "messages", "tool_outputs"}
    for extra in ([], SMALL):  # not compacting, and compacting
        doc = invoke("compact", KEY, *extra, "--dry-run", "--json", "-w", str(sample_ws)).json()
        assert set(doc) == ENVELOPE and doc["command"] == "compact"
        assert set(doc["result"]) == {"workspace", "dry_run", "sessions"}
        report = doc["result"]["sessions"][0]
        assert set(report) == REPORT and set(report["check"]) == CHECK_ROW
        for tier, keys in TIER_DETAIL.items():
            assert set(report[tier]) == {"ran", "tokens_before", "tokens_after", "detail"}
            assert set(report[tier]["detail"]) == keys, tier


def test_llm_from_environment_variables(sample_ws, llm_server, monkeypatch):
    llm_server.set_script([{"content": GOOD}])
    monkeypatch.setenv("QWENMEM_LLM_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("QWENMEM_LLM_MODEL", "env-model")
    run = invoke("compact", KEY, *SMALL, "--no-longterm", "-w", str(sample_ws))
    assert run.code == 0, run.stderr
    assert llm_server.chat_requests()[0]["body"]["model"] == "env-model"


def test_llm_from_qwenpaws_provider_config(sample_ws, llm_server, tmp_path, monkeypatch):
    llm_server.set_script([{"content": GOOD}])
    secret = tmp_path / "secret"
    (secret / "providers" / "custom").mkdir(parents=True)
    (secret / "providers" / "custom" / "local.json").write_text(json.dumps(
        {"id": "local", "base_url": llm_server.base_url, "api_key": "sk-provider",
         "models": [{"id": "qwen-local", "max_input_length": 1200}]}), encoding="utf-8")
    agent = json.loads((sample_ws / "agent.json").read_text(encoding="utf-8"))
    agent["active_model"] = {"provider_id": "local", "model": "qwen-local"}
    (sample_ws / "agent.json").write_text(json.dumps(agent), encoding="utf-8")
    monkeypatch.setenv("QWENPAW_SECRET_DIR", str(secret))
    # no --max-input-length: M = 1200 comes from the provider's model entry, as QwenPaw reads it
    run = invoke("compact", KEY, "--no-longterm", "--json", "-w", str(sample_ws))
    assert run.code == 0, run.stderr
    report = run.json()["result"]["sessions"][0]
    assert report["check"]["budget"]["max_input_length"] == 1200 and report["status"] == "compacted"
    request = llm_server.chat_requests()[0]["body"]
    assert request["model"] == "qwen-local"


def test_summarize_when_compact_false_skips_tier3(sample_ws):
    agent = json.loads((sample_ws / "agent.json").read_text(encoding="utf-8"))
    agent["running"]["reme_light_memory_config"]["summarize_when_compact"] = False
    (sample_ws / "agent.json").write_text(json.dumps(agent), encoding="utf-8")
    notes_before = sorted(p.name for p in (sample_ws / "memory").glob("*.md"))
    run = invoke("compact", KEY, *SMALL, "--json", "-w", str(sample_ws))
    assert run.code == 0 and run.json()["result"]["sessions"][0]["tier3"]["ran"] is False
    assert sorted(p.name for p in (sample_ws / "memory").glob("*.md")) == notes_before


def test_a_transient_http_error_is_retried(sample_ws, llm_server):
    llm_server.set_script([{"status": 503}, {"content": GOOD}])
    run = invoke("compact", KEY, *SMALL, *_llm(llm_server, "--llm-retries", "1"), "--no-longterm",
                 "-w", str(sample_ws))
    assert run.code == 0, run.stderr
    assert len(llm_server.chat_requests()) == 2
    assert json.loads((sample_ws / CONSOLE).read_text(encoding="utf-8"))["agent"]["memory"]["_compressed_summary"] == GOOD


def test_prune_only_cuts_tool_outputs_and_keeps_every_message(sample_ws):
    before = _messages(sample_ws / CONSOLE)
    run = invoke("compact", KEY, *SMALL, "--prune-only", "--json", "-w", str(sample_ws))
    assert run.code == 0, run.stderr
    assert run.json()["result"]["sessions"][0]["status"] == "pruned"
    after = _messages(sample_ws / CONSOLE)
    assert [m["id"] for m in after] == [m["id"] for m in before]
    assert "<<<TRUNCATED>>>" in json.dumps(after, ensure_ascii=False) and not (sample_ws / "dialog").exists()


def test_a_huge_daily_log_stops_compaction_before_any_write(sample_ws, llm_server):
    from datetime import date, timedelta

    for offset in (-1, 0, 1):  # whichever day the user's time zone says it is
        with open(sample_ws / "memory" / f"{date.today() + timedelta(days=offset)}.md", "wb") as fh:
            fh.truncate(1024 ** 3)  # sparse 1 GiB

    def state():  # the sparse files by size and mtime: reading 3 GiB to compare them would be the test's own bug
        return {str(p.relative_to(sample_ws)): (p.read_bytes() if p.stat().st_size < 2**20 else p.stat().st_mtime_ns)
                for p in sorted(sample_ws.rglob("*")) if p.is_file() and ".qwenmem" not in p.parts}

    before = state()
    llm_server.set_script([{"content": GOOD}, {"content": GOOD}])
    run = invoke("compact", KEY, *SMALL, *_llm(llm_server), "-w", str(sample_ws))
    assert run.code == 3 and "--no-longterm" in run.stderr and "Traceback" not in run.stderr
    assert state() == before
    assert invoke("compact", KEY, *SMALL, *_llm(llm_server), "--no-longterm", "-w", str(sample_ws)).code == 0


def _generation_values(doc: object) -> list[str]:
    """Every value of a `generation` key anywhere in a JSON document."""
    found: list[str] = []
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found += [v for k, v in node.items() if k == "generation" and not isinstance(v, dict)]
            stack += list(node.values())
        elif isinstance(node, list):
            stack += node
    return found


def test_generation_means_only_the_qwenpaw_generation(sample_ws):
    """`generation` is 1.x or 2.x wherever compact --check and info say it; the agent.json key layout has its own
    name (it used to be `generation: current|legacy` beside `generation: 2.x`)."""
    check = invoke("compact", "--check", "--all", "--json", "-w", str(sample_ws)).json()
    info = invoke("info", "--json", "-w", str(sample_ws)).json()
    values = _generation_values(check) + _generation_values(info)
    assert values and set(values) <= {"1.x", "2.x", "mixed"}, values
    assert check["result"]["config_layout"] in ("current", "legacy")
    assert all(s["config_layout"] == check["result"]["config_layout"] for s in check["result"]["sessions"])
    names = [row["name"] for row in info["result"]["settings"]]
    assert "config_layout" in names and "generation" not in names
