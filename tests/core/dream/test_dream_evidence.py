"""The lexical evidence dream needs before it removes or flags an entry (qwenmem.core.dream.evidence)."""

from __future__ import annotations

import pytest

from qwenmem.core.dream.consolidate import consolidate
from qwenmem.core.dream.evidence import restates, same_subject, subject_key


@pytest.mark.parametrize("loser, keeper", [
    ("For work, the user prefers short answers in English.", "The user prefers short answers in English for work."),
    ("Backups run nightly at 02:00 via cron.", "Backups run nightly at 02:00 via cron, and are kept for 30 days."),
    ("**时区**: Asia/Shanghai", "**时区**: Asia/Shanghai（北京时间）"),
    ("通过飞书通知用户，每日 08:00 发布。", "每日 08:00 发布，通过飞书通知用户。"),
    ("The budget is 12,000 EUR.", "The budget is 12,000 EUR for 2026."),
])
def test_restatements(loser, keeper):
    assert restates(loser, keeper)


@pytest.mark.parametrize("loser, keeper", [
    ("Alice owns the billing service.", "Alice's manager owns the billing service."),
    ("Alice reports to Bob.", "Bob reports to Alice since 2024."),
    ("Alice reports to Bob.", "Alice reports on Bob's team progress every week."),
    ("The user likes coffee.", "The user no longer likes coffee."),
    ("用户喜欢咖啡。", "用户不喜欢咖啡。"),
    ("**端口**: 8080", "**管理端口**: 8080"),
    ("**姓名**: 周振江", "**配偶**: 张月皎 | **孩子**: 蔡麒铭"),
    ("状态: ✅ 已启用", "状态: ❌ 已启用"),
    ("Server A has 16 GB.", "Server A has 16.5 GB."),
])
def test_not_restatements(loser, keeper):
    assert not restates(loser, keeper)


def test_keys():
    assert subject_key("**姓名**: 周振江") == "姓名"
    assert subject_key("Staging Postgres runs on 10.0.3.7:5432") is None
    assert subject_key("see https://example.com") is None


def test_same_subject_needs_the_same_key_or_nearly_the_same_words():
    assert same_subject("**定时**: 每日 08:00", "**定时**: 每日 09:00")
    assert not same_subject("**姓名**: 周振江", "**配偶**: 张月皎")
    assert same_subject("The connection pool limit of the production database is 100.",
                        "The production database connection pool limit is 200.")
    assert not same_subject("Server A has 16 GB of RAM.", "Server B has 32 GB of RAM.")


def test_without_a_model_a_substring_under_another_key_or_negated_stays():
    """The textual containment rule (no model needed) removed "端口: 8080 (staging)" as part of "管理端口: …"."""
    memory = ("# M\n\n## Ports\n- **端口**: 8080（staging 环境）\n- **管理端口**: 8080（staging 环境）\n\n"
              "## Pool\n- pgbouncer pools the staging connections\n- pgbouncer no longer pools the staging connections\n")
    out = consolidate(memory, None, "2026-01-01")
    assert out.text == memory and out.changes == []
