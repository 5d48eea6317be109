"""Generate a synthetic QwenPaw workspace: N sessions × M messages, mixed English/Chinese, with tool calls.

    python bench/generators/gen_workspace.py OUT_DIR [--sessions 1000] [--messages 200] [--seed 42]
"""

from __future__ import annotations

import argparse
import json
import random
import string
from pathlib import Path

EN = ["The deploy failed with ECONNREFUSED on the staging database.", "Restart pgbouncer and retry the migration.",
      "handleWebSocketReconnect keeps looping when the token expires.", "Summarise the design doc chapter on retries.",
      "The Berlin trip is booked for June; hotel near Alexanderplatz.", "Run the unit tests again and show failures."]
ZH = ["生产环境的数据库连接超时，导致订单服务无法写入。", "请帮我总结一下今天的会议纪要。", "向量检索召回率下降，需要检查索引。",
      "明天下午三点提醒我给客户打电话。", "把连接池上限调整为两百，然后观察监控。", "用户偏好中文回复，简洁一些。"]
CHANNELS = ["console", "discord", "feishu", "telegram", "dingtalk"]


def _id(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(22))


def make_session(rng: random.Random, n_messages: int) -> dict:
    content = []
    minute = 0
    while len(content) < n_messages:
        minute += 1
        ts = f"2026-11-{rng.randint(1, 28):02d} {minute // 60 % 24:02d}:{minute % 60:02d}:00.000"
        lang = ZH if rng.random() < 0.5 else EN
        content.append([{"id": _id(rng), "name": "user", "role": "user",
                         "content": [{"type": "text", "text": " ".join(rng.choices(lang, k=rng.randint(1, 3)))}],
                         "metadata": {}, "timestamp": ts}, []])
        if rng.random() < 0.4 and len(content) + 2 < n_messages:
            call = f"call_{_id(rng)[:10]}"
            content.append([{"id": _id(rng), "name": "Paw", "role": "assistant", "content": [
                {"type": "thinking", "thinking": rng.choice(EN)},
                {"type": "tool_use", "id": call, "name": "execute_shell_command", "input": {"command": "tail -n 40 app.log"},
                 "raw_input": "{\"command\": \"tail -n 40 app.log\"}"}], "metadata": {}, "timestamp": ts}, []])
            output = "\n".join(rng.choices(EN + ZH, k=rng.randint(5, 40)))
            content.append([{"id": _id(rng), "name": "system", "role": "system", "content": [
                {"type": "tool_result", "id": call, "name": "execute_shell_command",
                 "output": [{"type": "text", "text": output}]}], "metadata": {}, "timestamp": ts}, []])
        content.append([{"id": _id(rng), "name": "Paw", "role": "assistant",
                         "content": [{"type": "text", "text": " ".join(rng.choices(lang, k=rng.randint(1, 4)))}],
                         "metadata": {}, "timestamp": ts}, []])
    return {"agent": {"memory": {"content": content[:n_messages], "_compressed_summary": "## Goal\n- " + rng.choice(ZH + EN)},
                      "toolkit": {"active_groups": []}, "name": "Paw", "_sys_prompt": "# AGENTS.md\nYou are Paw."}}


def generate(out: Path, sessions: int, messages: int, seed: int = 42) -> Path:
    rng = random.Random(seed)
    for i in range(sessions):
        channel = CHANNELS[i % len(CHANNELS)]
        path = out / "sessions" / channel / f"user{i % 37}_{channel}--{i}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(make_session(rng, messages), ensure_ascii=False), encoding="utf-8")
    (out / "memory").mkdir(parents=True, exist_ok=True)
    (out / "MEMORY.md").write_text("# Long-Term Memory\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--messages", type=int, default=200)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    generate(a.out, a.sessions, a.messages, a.seed)
