"""Message builders for the compaction tests: real QwenPaw message shapes, sized in estimator tokens."""

from __future__ import annotations

import itertools

_ids = itertools.count(1)


def text_of_tokens(tokens: int) -> str:
    """ASCII text whose estimate (bytes/4, rounded) is exactly `tokens`."""
    return "x" * (tokens * 4)


def user(tokens: int = 10, text: str | None = None, ts: str = "2026-05-20 09:00:00.000") -> dict:
    return {"id": f"u{next(_ids)}", "name": "user", "role": "user",
            "content": [{"type": "text", "text": text if text is not None else text_of_tokens(tokens)}],
            "metadata": {}, "timestamp": ts}


def say(tokens: int = 10, text: str | None = None, ts: str = "2026-05-20 09:00:01.000") -> dict:
    return {"id": f"a{next(_ids)}", "name": "Paw", "role": "assistant",
            "content": [{"type": "text", "text": text if text is not None else text_of_tokens(tokens)}],
            "metadata": {}, "timestamp": ts}


def call(*tool_ids: str, name: str = "execute_shell_command", ts: str = "2026-05-20 09:00:02.000",
         raw_input: str | None = None) -> dict:
    blocks = []
    for tid in tool_ids:
        block = {"type": "tool_use", "id": tid, "name": name, "input": {"command": "ls"}}
        if raw_input is not None:
            block["raw_input"] = raw_input
        blocks.append(block)
    return {"id": f"c{next(_ids)}", "name": "Paw", "role": "assistant", "content": blocks, "metadata": {},
            "timestamp": ts}


def result(*pairs: tuple[str, str], name: str = "execute_shell_command", as_list: bool = True,
           ts: str = "2026-05-20 09:00:03.000") -> dict:
    blocks = []
    for tid, out in pairs:
        output = [{"type": "text", "text": out}] if as_list else out
        blocks.append({"type": "tool_result", "id": tid, "name": name, "output": output})
    return {"id": f"r{next(_ids)}", "name": "system", "role": "system", "content": blocks, "metadata": {},
            "timestamp": ts}


def session_doc(messages: list, summary: str = "", sys_prompt: str = "You are Paw.") -> dict:
    return {"agent": {"memory": {"content": [[m, []] for m in messages], "_compressed_summary": summary},
                      "toolkit": {"active_groups": []}, "name": "Paw", "_sys_prompt": sys_prompt}}
