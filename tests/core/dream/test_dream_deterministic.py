"""`qwenmem dream` without an LLM, on the sample workspace and on real users' MEMORY.md files."""

from __future__ import annotations


import pytest

from helpers import invoke
from dream_fixtures import REAL_MEMORY, protected_blocks, real_workspace, tree
from qwenmem.core.dream.consolidate import consolidate
from qwenmem.core.dream.markdown import parse


def _dream(ws, *args):
    return invoke("dream", "-w", str(ws), "--mode", "deterministic", *args)


def test_sample_dedupes_replaces_and_promotes(sample_ws):
    before = (sample_ws / "MEMORY.md").read_text(encoding="utf-8")
    run = _dream(sample_ws, "--date", "2026-11-26", "--json")
    assert run.code == 0, run.stderr
    result = run.json()["result"]
    after = (sample_ws / "MEMORY.md").read_text(encoding="utf-8")
    # the front matter and every heading survive
    assert after.startswith(before[:before.index("# Long-Term Memory")])
    for heading in ("# Long-Term Memory", "## Infrastructure", "## Preferences", "## Projects"):
        assert heading + "\n" in after
    # exact and spacing-only duplicates are gone, one copy stays
    assert after.count("Staging Postgres runs on 10.0.3.7:5432 behind pgbouncer.") == 1
    assert after.count("The user prefers short answers") == 1
    # the day's log raised the pool limit from 100 to 200: the old value is replaced in place
    assert "连接池上限为 100。" not in after
    infra = after[after.index("## Infrastructure"):after.index("## Preferences")]
    assert "生产数据库连接池上限调整为 200（之前是 100）。" in infra
    # the other facts and the reflection are promoted under a dated heading
    dated = after[after.index("## 2026-11-26"):]
    assert "- 订单服务在高峰期出现写入延迟。" in dated and "- 修改连接池配置后要同步更新监控告警阈值。" in dated
    actions = sorted(c["action"] for c in result["changes"])
    assert actions == ["added", "added", "removed", "removed", "replaced"]
    assert result["status"] == "changed" and result["backup"].startswith("backup/memory_backup_")


def test_second_run_has_nothing_to_do_and_writes_nothing(sample_ws):
    assert _dream(sample_ws, "--date", "2026-11-26").code == 0
    snapshot = tree(sample_ws)
    run = _dream(sample_ws, "--date", "2026-11-26")
    assert run.code == 0
    assert "nothing to do" in run.stdout
    assert tree(sample_ws) == snapshot


def test_only_memory_md_and_backup_dir_change(sample_ws):
    before = tree(sample_ws)
    assert _dream(sample_ws, "--date", "2026-11-27").code == 0
    after = tree(sample_ws)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert "MEMORY.md" in changed
    assert all(k == "MEMORY.md" or k.startswith("backup/") or k == ".qwenmem/lock" for k in changed), changed
    assert all(k in after for k in before), "a dream must never delete a file"


def test_dry_run_prints_a_diff_and_writes_nothing(sample_ws):
    snapshot = tree(sample_ws)
    run = _dream(sample_ws, "--date", "2026-11-26", "--dry-run")
    assert run.code == 0
    assert run.stdout.startswith("--- a/MEMORY.md\n+++ b/MEMORY.md\n")
    assert "-- 生产数据库连接池上限为 100。" in run.stdout and "+## 2026-11-26" in run.stdout
    assert tree(sample_ws) == snapshot


def test_contained_entry_merges_into_the_longer_one_from_the_log(sample_ws):
    run = _dream(sample_ws, "--date", "2026-11-27", "--json")
    after = (sample_ws / "MEMORY.md").read_text(encoding="utf-8")
    infra = after[after.index("## Infrastructure"):after.index("## Preferences")]
    assert "- Fix: restart pgbouncer with `systemctl restart pgbouncer`, then the workers reconnect." in infra
    assert "- Restart pgbouncer with" not in after
    merged = [c for c in run.json()["result"]["changes"] if c["action"] == "merged"]
    assert len(merged) == 1 and merged[0]["old"] == "- Restart pgbouncer with `systemctl restart pgbouncer`."


@pytest.mark.parametrize("name", sorted(REAL_MEMORY))
def test_real_memory_files_keep_code_tables_headings_and_every_entry(tmp_path, name):
    ws = real_workspace(tmp_path, name)
    before = (ws / "MEMORY.md").read_text(encoding="utf-8")
    run = _dream(ws, "--date", REAL_MEMORY[name], "--promote", "all", "--json")
    assert run.code == 0, run.stderr
    after = (ws / "MEMORY.md").read_text(encoding="utf-8")
    # none of these curated files contains a duplicate, so every original line is still there, in order
    old_lines = before.splitlines()
    it = iter(after.splitlines())
    assert all(any(line == other for other in it) for line in old_lines)
    assert protected_blocks(before) == protected_blocks(after)[:len(protected_blocks(before))]
    old_headings = [h.title for h in parse(before).headings]
    assert [h.title for h in parse(after).headings][:len(old_headings)] == old_headings
    assert f"## {REAL_MEMORY[name]}" in after
    assert not [c for c in run.json()["result"]["changes"] if c["action"] in ("removed", "merged")]


def test_real_chinese_footer_stays_last(tmp_path):
    ws = real_workspace(tmp_path, "zh")
    assert _dream(ws, "--date", "2026-02-19", "--promote", "all").code == 0
    after = (ws / "MEMORY.md").read_text(encoding="utf-8")
    assert after.rstrip().endswith("*由小爪为阿明整理*")
    assert after.index("## 2026-02-19") < after.index("*最后更新: 2026-02-20*")
    assert "\n\n\n" not in after


def test_default_promotes_only_fact_sections_of_a_real_log(tmp_path):
    ws = real_workspace(tmp_path, "en")
    run = _dream(ws, "--date", "2026-02-21", "--json")
    added = [c for c in run.json()["result"]["changes"] if c["action"] == "added"]
    log = (ws / "memory" / "2026-02-21.md").read_text(encoding="utf-8")
    decisions = log[log.index("Key Decisions"):]
    assert added and all(c["new"][2:] in decisions for c in added)
    assert "### Key Decisions:" in (ws / "MEMORY.md").read_text(encoding="utf-8")


def test_real_log_with_no_fact_headings_changes_nothing(tmp_path):
    ws = real_workspace(tmp_path, "zh")
    snapshot = tree(ws)
    run = _dream(ws, "--date", "2026-02-19")
    assert run.code == 0 and "nothing to do" in run.stdout
    assert tree(ws) == snapshot


def test_labels_repeated_under_different_parents_or_sections_are_not_duplicates():
    text = ("# M\n\n## Task A\n- 状态: ✅ 已启用\n- owner: ann\n\n## Task B\n- 状态: ✅ 已启用\n- owner: bob\n\n"
            "- parent one\n  - port: 80\n- parent two\n  - port: 80\n")
    assert consolidate(text, None, "2026-01-01").text == text


def test_long_statement_repeated_in_another_section_is_removed_once():
    text = "# M\n\n## A\n- The staging database lives on host db-7 in rack 3.\n\n## B\n- the staging database lives on host db-7, in rack 3\n"
    out = consolidate(text, None, "2026-01-01")
    assert out.text == "# M\n\n## A\n- The staging database lives on host db-7 in rack 3.\n\n## B\n"
    assert out.changes[0].line == 7 and "normalized duplicate" in out.changes[0].reason


def test_cjk_spacing_and_fullwidth_punctuation_duplicates():
    text = "## 偏好\n- 用户喜欢简短的回答，工作用英文。\n- 用户喜欢 简短的回答, 工作用英文\n"
    out = consolidate(text, None, "2026-01-01")
    assert out.text == "## 偏好\n- 用户喜欢简短的回答，工作用英文。\n"


def test_nested_duplicate_takes_its_children_with_it_and_code_inside_is_kept_elsewhere():
    text = "## S\n- deploy steps\n  - build\n  - push\n- deploy steps\n  - build\n  - push\n```\n- deploy steps\n- deploy steps\n```\n"
    out = consolidate(text, None, "2026-01-01")
    assert out.text == "## S\n- deploy steps\n  - build\n  - push\n```\n- deploy steps\n- deploy steps\n```\n"


def test_crlf_file_stays_crlf_and_missing_final_newline_is_handled():
    text = "# M\r\n\r\n## Facts\r\n- a fact that is long enough\r\n- a fact that is long enough"
    log = "# day\n\n## Facts\n- a brand new fact about the cluster\n"
    out = consolidate(text, log, "2026-02-02").text
    assert out == "# M\r\n\r\n## Facts\r\n- a fact that is long enough\r\n\r\n## 2026-02-02\r\n\r\n### Facts\r\n\r\n" \
                  "- a brand new fact about the cluster\r\n"


def test_facts_already_in_memory_are_not_promoted_again(sample_ws):
    log = sample_ws / "memory" / "2026-11-29.md"
    log.write_text("# 2026-11-29\n\n## Facts\n- Berlin trip booked for 12–16 June, hotel near Alexanderplatz\n",
                   encoding="utf-8")
    run = _dream(sample_ws, "--date", "2026-11-29", "--json")
    assert not [c for c in run.json()["result"]["changes"] if c["action"] == "added"]
    assert any("already in MEMORY.md" in s for s in run.json()["result"]["skipped"])


def test_missing_memory_md_is_created_from_the_log(sample_ws):
    (sample_ws / "MEMORY.md").unlink()
    run = _dream(sample_ws, "--date", "2026-11-27", "--json")
    assert run.code == 0
    text = (sample_ws / "MEMORY.md").read_text(encoding="utf-8")
    assert text.startswith("# Long-Term Memory\n\n## 2026-11-27\n")
    assert run.json()["result"]["backup"] is None


@pytest.mark.parametrize("old,new,replaced", [
    ("- Server A has 16 GB RAM.", "- Server B has 32 GB RAM.", False),
    ("- 服务器A内存16GB。", "- 服务器B内存32GB。", False),
    ("- The connection pool limit is 100.", "- The connection pool limit is now 200 (was 100).", True),
    # a changed word ("June" → "July") looks exactly like another subject ("A" → "B") to a deterministic rule,
    # so both entries are kept; only the LLM mode can tell these apart
    ("- Berlin trip booked for 12-16 June, hotel near Alexanderplatz.",
     "- Berlin trip booked for 3-5 July, hotel near Alexanderplatz.", False),
])
def test_replace_needs_the_same_subject_not_just_similar_text(old, new, replaced):
    out = consolidate(f"# M\n\n## Facts\n{old}\n", f"# d\n\n## Facts\n{new}\n", "2026-01-03")
    assert [c.action for c in out.changes] == (["replaced"] if replaced else ["added"])
    assert (old in out.text) is not replaced and new in out.text


def test_parent_becomes_a_duplicate_once_its_own_duplicate_child_is_gone():
    # found by the idempotence property: children are deduplicated first, then parents by what is left of them
    text = "## S\n- deploy steps\n  - build\n  - build\n- deploy steps\n  - build\n"
    out = consolidate(text, None, "2026-01-01")
    assert out.text == "## S\n- deploy steps\n  - build\n"
    assert consolidate(out.text, None, "2026-01-01").text == out.text
