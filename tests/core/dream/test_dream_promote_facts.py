"""dream promotes facts from the day's log: never qwenmem's own compaction note, questions or conversation."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from compact_fixtures import say, session_doc, user
from qwenmem.core.compaction.gen1.longterm import END_MARKER
from qwenmem.core.compaction.options import CompactOptions
from qwenmem.core.compaction.run import compact_sessions
from qwenmem.core.dream.consolidate import consolidate
from qwenmem.core.dream.run import DreamOptions, dream
from qwenmem.core.sessions import iter_session_refs
from qwenmem.core.settings import load_settings
from qwenmem.core.workspace import discover_workspace

DAY = "2026-05-20"
NOW = datetime(2026, 5, 20, 10, 30, tzinfo=timezone.utc)
QUESTION = "你觉得哪个方案更适合你的工作流？"


def _chat() -> list:
    """A conversation whose extractive note has Key Decisions, one of them a question put to the user."""
    msgs = []
    for i in range(8):
        stamp = f"{DAY} 10:{i:02d}:00.000"
        msgs.append(user(text=f"第 {i} 轮：我们讨论发布流程，请不要改动 cron 配置。" + "细节" * 150, ts=stamp))
        msgs.append(say(text=f"我们决定采用方案 A 做第 {i} 步。{QUESTION}" + "说明" * 150, ts=stamp))
    return msgs


def _compacted_workspace(tmp_path: Path) -> Path:
    ws_dir = tmp_path / "ws"
    (ws_dir / "sessions" / "console").mkdir(parents=True)
    (ws_dir / "sessions" / "console" / "default_1.json").write_text(json.dumps(session_doc(_chat())),
                                                                    encoding="utf-8")
    (ws_dir / "agent.json").write_text(json.dumps({"language": "zh"}), encoding="utf-8")
    (ws_dir / "memory").mkdir()
    (ws_dir / "memory" / f"{DAY}.md").write_text(
        f"# {DAY}\n\n## 决策\n- 发布流水线改用 GitHub Actions 运行。\n", encoding="utf-8")
    (ws_dir / "MEMORY.md").write_text("# Long-Term Memory\n\n## 项目\n- 小红书账号由 Jony 运营。\n",
                                      encoding="utf-8")
    ws = discover_workspace(ws_dir)
    reports, _ = compact_sessions(ws, list(iter_session_refs(ws)), load_settings(ws),
                                  CompactOptions(max_input_length=2000, summarizer="extractive", longterm=True,
                                                 now=NOW))
    assert reports[0].tier3.detail.path == f"memory/{DAY}.md"
    return ws_dir


def test_compaction_note_is_never_promoted_but_the_users_own_facts_are(tmp_path):
    ws_dir = _compacted_workspace(tmp_path)
    log = (ws_dir / "memory" / f"{DAY}.md").read_text(encoding="utf-8")
    # the real note carries decisions and the question (else this test would prove nothing)
    assert "### Key Decisions" in log and QUESTION in log and END_MARKER in log
    ws = discover_workspace(ws_dir)
    result = dream(ws, load_settings(ws), DreamOptions(date=DAY, use_embeddings=False, refresh_index=False))
    memory = (ws_dir / "MEMORY.md").read_text(encoding="utf-8")
    assert "- 发布流水线改用 GitHub Actions 运行。\n" in memory
    assert QUESTION not in memory and "方案 A" not in memory and "Compacted conversation" not in memory
    assert result.counts() == {"added": 1}


def test_user_section_after_a_note_is_still_read_up_to_the_end_marker():
    """QwenPaw may append a deeper heading after qwenmem's note; the end marker keeps it out of the note."""
    log = (f"# {DAY}\n\n## Compacted conversation console:default_1 (10:30)\n"
           "<!-- qwenmem:compact session=console:default_1 first=u1 last=a9 count=9 -->\n\n"
           "### Key Decisions\n- use plan A for step 1\n\n" + END_MARKER + "\n\n"
           "### Decisions\n- The release pipeline now runs on GitHub Actions.\n")
    out = consolidate("# M\n", log, DAY)
    assert "- The release pipeline now runs on GitHub Actions.\n" in out.text
    assert "plan A" not in out.text


def test_a_note_written_before_the_end_marker_runs_to_the_next_heading_of_its_level():
    log = (f"# {DAY}\n\n## Compacted conversation console:default_1 (10:30)\n"
           "<!-- qwenmem:compact session=console:default_1 first=u1 last=a9 count=9 -->\n\n"
           "### Key Decisions\n- use plan A for step 1\n\n### Critical Context\n- the cron job id is 7feb\n\n"
           "## Decisions\n- The release pipeline now runs on GitHub Actions.\n")
    out = consolidate("# M\n", log, DAY, promote="all")
    assert "GitHub Actions" in out.text
    assert "plan A" not in out.text and "7feb" not in out.text


def test_questions_greetings_and_dialogue_are_skipped_with_a_reason():
    log = (f"# {DAY}\n\n## Decisions\n"
           f"- {QUESTION}\n"
           "- Should we move the cron job to 09:00?\n"
           "- **Which database?** (asked the user)?\n"
           "- 你好，今天继续做发布系统。\n"
           "- User: can you check the deploy\n"
           "- 请问要保留旧的标题库吗\n"
           "- The user decided to keep the old title library.\n"
           "- 用户决定保留旧的标题库。\n")
    out = consolidate("# M\n", log, DAY)
    added = [c.new for c in out.changes if c.action == "added"]
    assert added == ["- The user decided to keep the old title library.", "- 用户决定保留旧的标题库。"]
    reasons = " | ".join(out.skipped)
    assert reasons.count("a question") == 3 and "a greeting" in reasons and "conversation" in reasons
