"""The 1.x session document as QwenPaw wrote it: `{"agent": {"memory": {"content": [[msg, marks], …],
"_compressed_summary"}, …}}` kept as raw dicts (key order, unknown keys and unknown block types survive a
load/save round trip), and the helpers that read its messages without converting them into another model.

Imports nothing from qwenmem: loading (sessions.py), salvage (salvage_documents.py, recovery.py) and repair all
sit on it.
"""

from __future__ import annotations

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
    if isinstance(agent_value(obj), dict):
        if holds_conversation(agent_value(obj)):
            return SessionDoc(obj, "agent")
        raise NotASessionError("agent.memory.content is missing or not a list")
    if holds_conversation(obj):
        return SessionDoc(obj, "memory")
    kind = type(obj).__name__ if not isinstance(obj, dict) else "object without agent.memory"
    raise NotASessionError(f"JSON {kind} is not a QwenPaw session")


# ------------------------------------------------------------------------------------------- the document's keys
# Every other module reads and writes the 1.x document's key paths (`agent`, `memory`, `content`) through these
# (issue 25). They take any JSON value and give back what is written there; the 1.x writer is gen1.encode.

MEMORY_KEY = "memory"
CONTENT_PATH = (MEMORY_KEY, "content")  # of the memory holder, as a tolerant_json partial path
SUMMARY_PATH = (MEMORY_KEY, "_compressed_summary")
AGENT_PREFIX = ("agent",)  # where the memory holder sits in a real file (the "agent" layout)
_REQUIRED_AGENT_KEYS = (MEMORY_KEY, "toolkit", "name", "_sys_prompt")


def agent_value(doc: Any) -> Any:
    """`doc["agent"]` as written (any JSON type); None when `doc` is not an object or has none. gen2.agent_value
    is the same key for the 2.x side (this module imports nothing)."""
    return doc.get("agent") if isinstance(doc, dict) else None


def memory_value(holder: Any) -> Any:
    """`holder["memory"]` as written; None when `holder` is not an object or has none."""
    return holder.get(MEMORY_KEY) if isinstance(holder, dict) else None


def has_memory_key(value: Any) -> bool:
    return isinstance(value, dict) and MEMORY_KEY in value


def holds_conversation(holder: Any) -> bool:
    """`holder` is an object whose `memory` is an object with a `content` list (an agent state, 1.x)."""
    memory = memory_value(holder)
    return isinstance(memory, dict) and isinstance(memory.get("content"), list)


def content_of(doc: dict[str, Any]) -> list[Any]:
    """`agent.memory.content` of a document built by the constructors below (or checked by session_from_obj)."""
    content: list[Any] = doc["agent"][MEMORY_KEY]["content"]
    return content


def document_of_agent(agent: Any) -> dict[str, Any]:
    """A session around an agent state: `{"agent": agent}`."""
    return {"agent": agent}


def document_of_memory(memory: dict[str, Any]) -> dict[str, Any]:
    """A session around a memory object alone: `{"agent": {"memory": memory}}`."""
    return document_of_agent({MEMORY_KEY: memory})


def document_of_content(content: list[Any]) -> dict[str, Any]:
    """A session around a list of `[msg, marks]` items (or messages): `{"agent": {"memory": {"content": …}}}`."""
    return document_of_memory({"content": content})


def new_document(items: list[Any], name: str) -> dict[str, Any]:
    """A whole 1.x session as QwenPaw's loader wants one, holding these `[msg, marks]` items."""
    return document_of_agent({MEMORY_KEY: {"content": items, "_compressed_summary": ""},
                              "toolkit": {"active_groups": []}, "name": name, "_sys_prompt": ""})


def strict_load_problems(obj: Any) -> list[str]:
    """Why QwenPaw would fail (or silently start empty) loading this document with its strict
    `agent.load_state_dict` (spec qwenpaw-workspace.md §2.2); empty when it loads fully."""
    agent = agent_value(obj)
    if not isinstance(agent, dict):
        return ["top level is not {\"agent\": {...}}"]
    problems = [f"agent.{key} is missing" for key in _REQUIRED_AGENT_KEYS if key not in agent]
    memory = memory_value(agent)
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
        problems.extend(f"message {i}: {p}" for p in message_problems(item))
    return problems


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
