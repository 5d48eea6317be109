"""What QwenPaw's strict `agent.load_state_dict` needs from a session (spec qwenpaw-workspace.md §2.2)."""

from __future__ import annotations

import json
from typing import Any

from qwenmem.core import sessions as S
from qwenmem.core.jsonsafe import loads_session


def strict_load_problems(obj: Any) -> list[str]:
    """Why QwenPaw would fail (or silently start empty) loading this document; empty when it loads fully."""
    if not isinstance(obj, dict) or not isinstance(obj.get("agent"), dict):
        return ["top level is not {\"agent\": {...}}"]
    agent = obj["agent"]
    problems = [f"agent.{key} is missing" for key in ("memory", "toolkit", "name", "_sys_prompt") if key not in agent]
    memory = agent.get("memory")
    if not isinstance(memory, dict) or not isinstance(memory.get("content"), list):
        return problems + ["agent.memory.content is not a list"]
    toolkit = agent.get("toolkit")
    if "toolkit" in agent and not (isinstance(toolkit, dict) and set(toolkit) <= {"active_groups"}
                                   and isinstance(toolkit.get("active_groups", []), list)):
        problems.append("agent.toolkit is not {\"active_groups\": [...]}")
    for i, item in enumerate(memory["content"]):
        if isinstance(item, list):
            if len(item) != 2 or not isinstance(item[1], list):
                problems.append(f"content item {i} is not [message, marks]")
                continue
            item = item[0]
        problems.extend(f"message {i}: {p}" for p in S.message_problems(item))
    return problems


def strict_load_bytes_problems(data: bytes) -> list[str]:
    """The same check on bytes, read the way QwenPaw reads them (utf-8, surrogatepass, no BOM tolerance)."""
    try:
        text = data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        return [f"invalid UTF-8 at byte {exc.start}"]
    try:
        obj = loads_session(text)
    except RecursionError:
        return ["JSON nested too deeply to parse"]
    except json.JSONDecodeError as exc:
        return [f"not valid JSON: {exc.msg} at character {exc.pos}"]
    problems = strict_load_problems(obj)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        problems.append("contains lone surrogates")
    return problems
