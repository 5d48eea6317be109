#!/usr/bin/env python3
"""Write the project's own test fixtures into tests/fixtures/ (checked in; tests/project/test_fixtures_generated.py checks
that this script still produces exactly those bytes).

    python scripts/make_fixtures.py            # rewrite tests/fixtures/
    python scripts/make_fixtures.py --check    # exit 1 if the checked-in files differ

Everything here was written for qwenmem's tests: no file is copied from anywhere. The shapes follow the QwenPaw 1.x
(CoPaw) session format: {"agent": {"memory": {"content": [[Msg, marks], ...], "_compressed_summary"}, "toolkit",
"name", "_sys_prompt"}}, one line, ensure_ascii=False; the older bare-Msg items; plan mode's plan_notebook.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import datetime, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
OWNED = ("sessions", "dialog", "memory", "root")  # the sub-directories this script writes (others have their own)
SHORTUUID = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

ZH_LINES = ["先看一下服务器的磁盘占用，再决定要不要清理日志。", "定时任务每天早上八点推送一次天气和日程。",
            "飞书机器人的回调地址需要在后台重新配置。", "小红书的草稿已经整理好，等你确认标题。",
            "数据库连接池上限调到一百二十以后，超时明显减少。", "帮我把这周的会议纪要归档到知识库。",
            "用户更喜欢简短的中文回复，列表不要超过五条。", "检查一下备份脚本是不是还在正常运行。"]
EN_LINES = ["Check the disk usage on the build host before pruning the logs.",
            "The nightly job syncs the calendar and posts a short digest.",
            "The webhook for the chat bot returns 502 after the proxy restart.",
            "Draft the release notes from the merged pull requests of this week.",
            "The user prefers short answers with at most five bullet points.",
            "Rotate the staging certificates before they expire on Friday."]
ID_LINES = ["Tolong cek status server sebelum jam sembilan.", "Jadwal rapat dipindah ke hari Kamis sore."]


class Writer:
    def __init__(self, seed: int, agent_name: str, start: str):
        self.rng = random.Random(seed)
        self.agent_name = agent_name
        self.clock = datetime.strptime(start, "%Y-%m-%d %H:%M:%S")

    def uid(self) -> str:
        return "".join(self.rng.choice(SHORTUUID) for _ in range(22))

    def call_id(self) -> str:
        return "call_" + "".join(self.rng.choice("0123456789abcdef") for _ in range(24))

    def ts(self) -> str:
        self.clock += timedelta(seconds=self.rng.randint(2, 90), milliseconds=self.rng.randint(0, 999))
        return self.clock.strftime("%Y-%m-%d %H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}"

    def msg(self, role: str, content, metadata=None) -> dict:
        name = {"user": "user", "assistant": self.agent_name, "system": "system"}[role]
        return {"id": self.uid(), "name": name, "role": role, "content": content,
                "metadata": {} if metadata is None else metadata, "timestamp": self.ts()}

    def text(self, role: str, text: str, metadata=None) -> dict:
        return self.msg(role, [{"type": "text", "text": text}], metadata)

    def tool_call(self, command: str, thinking: str | None = None, metadata=None) -> tuple[dict, str]:
        cid = self.call_id()
        blocks = [{"type": "thinking", "thinking": thinking}] if thinking else []
        blocks.append({"type": "tool_use", "id": cid, "name": "execute_shell_command", "input": {"command": command},
                       "raw_input": json.dumps({"command": command}, ensure_ascii=False)})
        return self.msg("assistant", blocks, metadata), cid

    def tool_result(self, cid: str, output: str, metadata=None) -> dict:
        return self.msg("system", [{"type": "tool_result", "id": cid, "name": "execute_shell_command",
                                    "output": [{"type": "text", "text": output}]}], metadata)

    def paragraph(self, lines: list[str], n: int) -> str:
        return "\n".join(self.rng.choice(lines) for _ in range(n))


def session_doc(items: list, summary: str, name: str, sys_prompt: str, **extra) -> dict:
    agent = {"memory": {"content": items, "_compressed_summary": summary}, "toolkit": {"active_groups": []}}
    agent.update(extra)
    agent["name"] = name
    agent["_sys_prompt"] = sys_prompt
    return {"agent": agent}


def dumps(doc) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode("utf-8")


def healthy_small() -> bytes:
    """Four messages in Chinese; both replies have an empty block list (legal, and an edge case for display)."""
    w = Writer(11, "小爪", "2026-03-01 20:15:00")
    msgs = [w.text("user", "你好，今天有什么安排？"), w.msg("assistant", []),
            w.text("user", "提醒我晚上九点给妈妈打电话。"), w.msg("assistant", [])]
    return dumps(session_doc([[m, []] for m in msgs], "", "小爪", "# AGENTS.md\n你是小爪，一个中文助理。"))


def unanswered_call() -> bytes:
    """22 messages, English and Indonesian, 8 tool calls and 7 results: one call in the middle was never answered.
    One reply is a plain string, as QwenPaw writes when the user interrupts."""
    w = Writer(22, "Scout", "2026-03-20 07:30:00")
    msgs = [w.text("user", "BOOTSTRAP: read BOOTSTRAP.md and introduce yourself, then wait for instructions.")]
    commands = ["uptime", "df -h /", "systemctl status nginx", "tail -n 20 /var/log/nginx/error.log",
                "free -m", "ls ~/reports", "cat ~/reports/weekly.txt", "date"]
    for i, command in enumerate(commands):
        if i in (1, 2, 5, 7):
            msgs.append(w.text("user", w.rng.choice(ID_LINES)))
        call, cid = w.tool_call(command, thinking=f"Run {command} to answer.")
        msgs.append(call)
        if i != 3:  # the unanswered one
            msgs.append(w.tool_result(cid, f"$ {command}\n" + w.paragraph(EN_LINES, 3)))
    msgs.insert(10, w.msg("assistant", "I noticed you interrupted me. What should I do next?"))
    msgs.append(w.text("assistant", "All checks are done: nginx is up and the disk has room."))
    assert len(msgs) == 22, len(msgs)
    return dumps(session_doc([[m, []] for m in msgs], "", "Scout", "# AGENTS.md\nYou are Scout."))


def long_tool_session() -> bytes:
    """47 messages, about 90 KB, Chinese and English, thinking blocks, 21 answered tool calls, a Chinese summary and
    QwenPaw's truncation notices in long tool outputs."""
    w = Writer(47, "QA助手", "2026-04-04 09:00:00")
    msgs: list = []
    while len(msgs) < 44:
        msgs.append(w.text("user", w.paragraph(ZH_LINES, 2)))
        for _ in range(3 if len(msgs) < 40 else 1):
            call, cid = w.tool_call(f"python tools/report.py --part {len(msgs)}", thinking=w.rng.choice(EN_LINES))
            body = "\n".join(f"{i:04d} | " + w.rng.choice(ZH_LINES + EN_LINES) for i in range(40))
            if w.rng.random() < 0.3:
                body += ("\n<<<TRUNCATED>>>\nThe output above was truncated.\nIf the current content is not enough, "
                         f"call `read_file` with file_path=tool_results/{w.uid().lower()}.txt start_line=41 to read more.")
            msgs += [call, w.tool_result(cid, body)]
        msgs.append(w.msg("assistant", [{"type": "thinking", "thinking": "整理结论。"},
                                        {"type": "text", "text": w.paragraph(ZH_LINES, 3)}]))
    msgs = msgs[:46] + [w.text("assistant", "今天的检查都完成了，明天继续。")]
    summary = ("## 目标\n- 完成知识库问答助手的配置检查\n\n## 进展\n### 已完成\n- [x] 检查了定时任务和飞书回调\n"
               "### 进行中\n- [ ] 整理报告\n\n## 关键决定\n- **保留中文回复**：用户要求\n\n## 下一步\n1. 复查日志\n"
               + "\n".join(f"- 备注 {i}：" + w.rng.choice(ZH_LINES) for i in range(30)))
    return dumps(session_doc([[m, []] for m in msgs], summary, "QA助手", "# AGENTS.md\n你是 QA助手。"))


def truncated_backup() -> bytes:
    """A backup cut off mid-write, inside the 184th item after `"timestamp": `: 183 complete items (user 61,
    assistant 91, system 31), all marked "compressed", metadata null: the older CoPaw mark-based compaction."""
    w = Writer(183, "如意", "2026-03-16 08:00:00")
    msgs: list = []
    for turn in range(61):
        msgs.append(w.text("user", "心跳检查：" + w.rng.choice(ZH_LINES), metadata=None))
        if turn < 31:
            call, cid = w.tool_call("git status --short", metadata=None)
            msgs += [call, w.tool_result(cid, w.paragraph(ZH_LINES, 2), metadata=None)]
        else:
            msgs.append(w.text("assistant", w.rng.choice(ZH_LINES), metadata=None))
            msgs.append(w.text("assistant", "HEARTBEAT_OK", metadata=None))
    assert [sum(m["role"] == r for m in msgs) for r in ("user", "assistant", "system")] == [61, 91, 31]
    nxt = w.text("user", "心跳检查：继续。", metadata=None)
    doc = session_doc([[m, ["compressed"]] for m in msgs] + [[nxt, ["compressed"]]], "", "如意", "# AGENTS.md\n如意")
    data = dumps(doc)
    cut = data.rindex(b'"timestamp": ') + len(b'"timestamp": ')
    return data[:cut]


def legacy_bare_items() -> bytes:
    """The older memory shape: bare Msg dicts without marks (QwenPaw still loads them)."""
    w = Writer(5, "Friday", "2026-02-10 18:00:00")
    msgs = [w.text("user", "What did we decide about the garden fence?"),
            w.text("assistant", "You chose the wooden fence; the installer comes on Saturday."),
            w.msg("user", "thanks"), w.text("assistant", "You're welcome.")]
    return dumps(session_doc(msgs, "", "Friday", "# AGENTS.md\nYou are Friday."))


def legacy_compressed_marks() -> bytes:
    """A CoPaw session from before 2026-03-17: compacted messages stay with the "compressed" mark, and a summary."""
    w = Writer(6, "Friday", "2026-03-02 10:00:00")
    msgs = [w.msg("user", "hello"), w.text("assistant", "Hi! How can I help?"), w.text("user", "continue the plan")]
    items = [[msgs[0], ["compressed"]], [msgs[1], ["compressed"]], [msgs[2], []]]
    return dumps(session_doc(items, "## Goal\n- Plan the week\n", "Friday", "# AGENTS.md\nYou are Friday."))


def plan_mode_session() -> bytes:
    """A current session with plan mode on (plan_notebook), an unknown extra key, and a summary after compaction."""
    w = Writer(7, "QwenPaw", "2026-05-21 16:40:00")
    call, cid = w.tool_call("pytest -q tests/unit")
    msgs = [w.text("user", "OK, now run the tests again."), call,
            w.tool_result(cid, "....F..\nFAILED tests/unit/test_cache.py::test_expiry"),
            w.text("assistant", "One test fails: the cache entry does not expire.")]
    doc = session_doc([[m, []] for m in msgs], "## Goal\n- Fix the failing unit test\n", "QwenPaw",
                      "# AGENTS.md\nYou are QwenPaw.", plan_notebook={"storage": {"plans": {}}, "current_plan": None})
    doc["agent"]["x_future_key"] = {"kept": True}
    return dumps(doc)


def dialog_log() -> bytes:
    """dialog/2026-04-09.jsonl: 19 offloaded messages, one Msg per line (no marks), Chinese."""
    w = Writer(19, "小爪", "2026-04-09 06:00:00")
    lines = [w.text("user", "每日巡检开始，检查网站首页和客服页面是否能打开。")]
    while len(lines) < 19:
        call, cid = w.tool_call("curl -sI https://example.invalid/")
        lines += [call, w.tool_result(cid, "HTTP/1.1 200 OK\n" + w.rng.choice(ZH_LINES))]
        lines.append(w.text("assistant", w.rng.choice(ZH_LINES)))
    lines = lines[:19]
    return "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in lines).encode("utf-8")


# ---- long-term memory: Chinese, English, mixed

MEMORY_ZH = """# 长期记忆

## 环境
- 主机：家里的 NAS，系统 Debian 12
- 备份盘挂载在 /mnt/backup，每周日凌晨同步

## 常用命令
- 查看容器：`docker ps --format '{{.Names}}'`
- 重启照片服务：`docker restart photos`

## 偏好
- 回复用中文，简短，先给结论
- 时间一律按北京时间

## 项目
- 家庭相册整理：已完成 2025 年的照片去重
- 记账脚本：每月一号生成上月报表

## 联系人
- 阿明：负责家里的网络设备

---
*最后更新: 2026-02-20*
*由小爪为阿明整理*
"""

DAILY_ZH = """# 2026-02-19

## 上午
- 检查了 NAS 的磁盘温度，最高 41 度
- 照片服务重启了一次，原因是内存不足

## 下午
- 帮阿明查了路由器的固件版本
- 整理了二月的账单，发现两笔重复扣款

## 晚上
- 提醒阿明周末去换滤芯
"""

MEMORY_EN = """---
name: long-term memory
updated: 2026-02-21
---
# Long-Term Memory

## Setup
| service | host | port |
|---|---|---|
| grafana | nas.local | 3000 |
| paperless | nas.local | 8010 |

```json
{"backup": {"target": "/mnt/backup", "weekday": "sunday"}}
```

## Preferences
- Answers in English, short, conclusion first
- Dates as YYYY-MM-DD

## Projects
- Garden: the wooden fence was installed in January
  - the gate latch still sticks in wet weather
- Reading list: finish the book on distributed systems by March

# Archive
- The old VPS was shut down in December
"""

DAILY_EN = """# 2026-02-21

## Timeline
- 08:10 checked the grafana alerts, nothing new
- 12:30 paperless imported 14 scanned letters
- 18:45 the backup job took 42 minutes

### Key Decisions:
- Keep the nightly backup at 02:00; moving it clashed with the media scan
- The user prefers a weekly digest on Sunday evening instead of daily ones
"""

MEMORY_MIXED = """# Long-Term Memory

## 工作流 Workflows
- 定时任务：每天 08:00 推送天气和日程 (cron `0 8 * * *`)
- 飞书机器人：回调地址在后台的「事件订阅」里配置
- 小红书草稿：先存到 drafts/，确认标题后再发布

## 技术栈 Stack
- Python 3.11 + FastAPI，部署在 staging.example.invalid
- Postgres 16，连接池上限 120

## 经验 Lessons
- The webhook returns 502 right after a proxy restart; wait 30 seconds
- 数据库迁移前先做快照
"""

DAILY_MIXED = """# 2026-04-04

## 今日记录
- 定时任务推送延迟了十分钟，原因是时区配置写成了 UTC
- 飞书回调恢复正常
- 小红书新草稿两篇，等待确认

## 反思
- 时区要统一写在 config.json 的 user_timezone 里
"""


def memory_sets() -> dict[str, bytes]:
    out = {}
    for name, memory, day, log in (("zh", MEMORY_ZH, "2026-02-19", DAILY_ZH), ("en", MEMORY_EN, "2026-02-21", DAILY_EN),
                                   ("mixed", MEMORY_MIXED, "2026-04-04", DAILY_MIXED)):
        out[f"memory/{name}/MEMORY.md"] = memory.encode()
        out[f"memory/{name}/memory/{day}.md"] = log.encode()
    return out


# ---- a QwenPaw root with several agents

def agent_json(agent_id: str, language: str, dream_cron: str | None, legacy: bool = False) -> bytes:
    """agent.json of either generation: the current running.light_context_config / reme_light_memory_config keys,
    or the older running.max_input_length / context_compact / memory_summary ones."""
    if legacy:
        running: dict = {"max_input_length": 65536, "context_compact": {"memory_compact_ratio": 0.75}}
        if dream_cron is not None:
            running["memory_summary"] = {"dream_cron": dream_cron}
    else:
        running = {"light_context_config": {"context_compact_config": {"compact_threshold_ratio": 0.8}}}
        if dream_cron is not None:
            running["reme_light_memory_config"] = {"dream_cron": dream_cron}
    doc: dict = {"id": agent_id, "name": agent_id.title(), "language": language, "running": running}
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()


def root_workspace() -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    config = {"agents": {"active_agent": "default",
                         "profiles": {"default": {"id": "default", "enabled": True},
                                      "coder": {"id": "coder", "enabled": True},
                                      "writer": {"id": "writer", "enabled": False}}},
              "user_timezone": "Asia/Shanghai"}
    files["root/config.json"] = (json.dumps(config, indent=2) + "\n").encode()
    base = "root/workspaces"
    files[f"{base}/default/agent.json"] = agent_json("default", "zh", None)
    files[f"{base}/default/MEMORY.md"] = MEMORY_ZH.encode()
    files[f"{base}/default/memory/2026-02-19.md"] = DAILY_ZH.encode()
    files[f"{base}/default/sessions/console/default_1772000000001.json"] = healthy_small()
    files[f"{base}/default/sessions/telegram/7700112233_telegram--7700112233.json"] = unanswered_call()
    files[f"{base}/coder/agent.json"] = agent_json("coder", "en", "", legacy=True)
    files[f"{base}/coder/MEMORY.md"] = MEMORY_EN.encode()
    files[f"{base}/coder/memory/2026-02-21.md"] = DAILY_EN.encode()
    files[f"{base}/coder/sessions/console/default_1772000000002.json"] = plan_mode_session()
    files[f"{base}/coder/sessions/console/default_1772000000003.json"] = long_tool_session()[:20000]  # damaged
    files[f"{base}/writer/agent.json"] = agent_json("writer", "en", "0 23 * * *")
    files[f"{base}/writer/MEMORY.md"] = MEMORY_MIXED.encode()
    files[f"{base}/writer/memory/2026-04-04.md"] = DAILY_MIXED.encode()
    files[f"{base}/writer/sessions/default_legacy_note.json"] = legacy_compressed_marks()
    return files


def all_files() -> dict[str, bytes]:
    files = {
        "sessions/healthy_small.json": healthy_small(),
        "sessions/7700112233_telegram--7700112233.json": unanswered_call(),
        "sessions/default_1775000000047.json": long_tool_session(),
        "sessions/main_main.json.backup_20260316_203609": truncated_backup(),
        "sessions/legacy_bare_items.json": legacy_bare_items(),
        "sessions/legacy_compressed_marks.json": legacy_compressed_marks(),
        "sessions/plan_mode.json": plan_mode_session(),
        "dialog/2026-04-09.jsonl": dialog_log(),
    }
    files.update(memory_sets())
    files.update(root_workspace())
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare with the files in tests/fixtures/")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    files = all_files()
    if args.check:
        on_disk = {p.relative_to(args.out).as_posix(): p.read_bytes() for top in OWNED
                   for p in (args.out / top).rglob("*") if p.is_file()}
        if on_disk != files:
            print(f"tests/fixtures differs from scripts/make_fixtures.py: {sorted(set(on_disk) ^ set(files)) or 'content'}",
                  file=sys.stderr)
            return 1
        return 0
    for rel, data in files.items():
        path = args.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    print(f"wrote {len(files)} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
