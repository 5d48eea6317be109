"""The 1.x session document as QwenPaw wrote it: `{"agent": {"memory": {"content": [[msg, marks], …],
"_compressed_summary"}, …}}` kept as raw dicts (key order, unknown keys and unknown block types survive a
load/save round trip), and the helpers that read its messages without converting them into another model.

Imports nothing from qwenmem: loading (sessions.py), salvage (salvage_documents.py, recovery.py) and repair all
sit on it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

ROLES = ("user", "assistant", "system")

@dataclass
class Entry:
    """One item of memory.content: the message and its marks. `bare` is the pre-marks format."""

    msg: Any
    marks: list[Any]
    bare: bool = False

    @property
    def compressed(self) -> bool:
        return isinstance(self.marks, list) and "compressed" in self.marks


@dataclass
class SessionDoc:
    """A parsed session document. `doc` is the whole top-level JSON object, untouched."""

    doc: dict[str, Any]
    layout: str  # "agent" (real files) | "memory" (QwenPaw unit-test shape)

    @property
    def memory(self) -> dict[str, Any]:
        memory: dict[str, Any] = self.agent["memory"]
        return memory

    @property
    def agent(self) -> dict[str, Any]:
        agent: dict[str, Any] = self.doc["agent"] if self.layout == "agent" else self.doc
        return agent

    @property
    def content(self) -> list[Any]:
        content: list[Any] = self.memory["content"]
        return content

    @property
    def summary(self) -> str:
        value = self.memory.get("_compressed_summary")
        return value if isinstance(value, str) else ""

    @summary.setter
    def summary(self, value: str) -> None:
        self.memory["_compressed_summary"] = value

    @property
    def sys_prompt(self) -> str:
        value = self.agent.get("_sys_prompt")
        return value if isinstance(value, str) else ""

    def entries(self) -> list[Entry]:
        out = []
        for item in self.content:
            if isinstance(item, list) and len(item) == 2:
                out.append(Entry(item[0], item[1] if isinstance(item[1], list) else []))
            else:
                out.append(Entry(item, [], bare=True))
        return out

    def set_entries(self, entries: list[Entry]) -> None:
        self.memory["content"] = [e.msg if e.bare else [e.msg, e.marks] for e in entries]

    def messages(self) -> list[Any]:
        return [e.msg for e in self.entries()]


class NotASessionError(ValueError):
    """Valid JSON that is not a QwenPaw session."""


def session_from_obj(obj: Any) -> SessionDoc:
    if isinstance(obj, dict) and isinstance(obj.get("agent"), dict):
        mem = obj["agent"].get("memory")
        if isinstance(mem, dict) and isinstance(mem.get("content"), list):
            return SessionDoc(obj, "agent")
        raise NotASessionError("agent.memory.content is missing or not a list")
    if isinstance(obj, dict) and isinstance(obj.get("memory"), dict) and isinstance(obj["memory"].get("content"), list):
        return SessionDoc(obj, "memory")
    kind = type(obj).__name__ if not isinstance(obj, dict) else "object without agent.memory"
    raise NotASessionError(f"JSON {kind} is not a QwenPaw session")


def dumps_session(doc: Any) -> str:
    """Exactly how QwenPaw serialises a session: one line, ensure_ascii=False, default separators."""
    return json.dumps(doc, ensure_ascii=False)


def encode_session(doc: Any) -> bytes:
    """UTF-8 bytes for writing. Lone surrogates would make QwenPaw's own next save truncate the file to 0 bytes,
    so callers must have replaced them (repair.encoding.replace_surrogates); encoding fails loudly otherwise."""
    return dumps_session(doc).encode("utf-8")


# --------------------------------------------------------------------------------------------- message helpers


def blocks(msg: Any) -> list[dict[str, Any]]:
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def tool_use_ids(msg: Any) -> list[str]:
    return [str(b.get("id")) for b in blocks(msg) if b.get("type") == "tool_use"]


def tool_result_ids(msg: Any) -> list[str]:
    return [str(b.get("id")) for b in blocks(msg) if b.get("type") == "tool_result"]


def message_text(msg: Any) -> str:
    """Plain text of a message (text blocks and string content), for previews and search."""
    if not isinstance(msg, dict):
        return ""
    content = msg.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text") or "") for b in blocks(msg) if b.get("type") == "text")


def message_problems(msg: Any) -> list[str]:
    """Why QwenPaw's loader would reject this message (Msg.from_dict / asserts), empty if it is fine."""
    if not isinstance(msg, dict):
        return [f"message is a {type(msg).__name__}, not an object"]
    problems = []
    for key in ("name", "role", "content"):
        if key not in msg:
            problems.append(f"missing {key!r}")
    if "role" in msg and msg["role"] not in ROLES:
        problems.append(f"role {msg['role']!r} is not user/assistant/system")
    if "content" in msg and not isinstance(msg["content"], (str, list)):
        problems.append(f"content is a {type(msg['content']).__name__}")
    if "id" in msg and not isinstance(msg["id"], str):
        problems.append("id is not a string")
    if "id" not in msg:
        problems.append("missing 'id'")
    return problems
