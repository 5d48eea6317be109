"""The five fields of AgentScope's SummarySchema (task_overview, current_state, important_discoveries, next_steps,
context_to_preserve), from an LLM (structured JSON reply) or offline (extractive), for the native strategy.

The LLM gets AgentScope's own compression prompt (agentscope/agent/_config.py L82-117 @as2.0.10) and is asked for a
JSON object instead of a function call, since qwenmem talks to any OpenAI-compatible endpoint through core/llm.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Sequence

from qwenmem.core.compaction.gen2.native import SUMMARY_FIELDS
from qwenmem.core.compaction.gen2.tokens import blocks_of
from qwenmem.core.errors import LLMError

COMPRESSION_PROMPT = (
    "<system-hint>You have been working on the task described above. Now write a continuation summary that will "
    "allow you to resume work efficiently in a future context window where the conversation history will be "
    "replaced with this summary. Your summary should be structured, concise, and actionable.\n"
    "The current time is {current_time}.\n"
    "This summary may itself be summarized again later, and the conversation history it refers to will be gone, so "
    "every reference must be self-contained — resolve anything that depends on the vanished context into an "
    "absolute, fully-qualified form:\n"
    "- Time: convert relative expressions ('today', 'now', 'yesterday', 'tomorrow', 'recently') to absolute dates "
    "using the current time above; re-anchor them even if an earlier summary already wrote them relatively.\n"
    "- Names & pointers: use file paths, symbol names, PR/issue numbers, IDs, URLs, and exact commands/error strings "
    "verbatim instead of 'this file', 'the above', 'the second approach', 'the 5 failing tests'.\n"
    "- In-flight work: record everything still pending, especially tools launched in the background whose results "
    "you are still waiting on — give each one's id and a short note of what it is doing — and mark each item's "
    "owner (user request vs your own decision) and status (done / pending / blocked).\n"
    "</system-hint>")
JSON_INSTRUCTION = ("Reply with only one JSON object whose keys are exactly task_overview, current_state, "
                    "important_discoveries, next_steps and context_to_preserve, each a string.")
_HEADINGS = {"Task Overview": "task_overview", "Current State": "current_state",
             "Important Discoveries": "important_discoveries", "Next Steps": "next_steps",
             "Context to Preserve": "context_to_preserve"}


@dataclass
class Fields:
    values: dict[str, str]
    summarizer: str
    calls: int = 0


def previous_fields(summary: Any) -> dict[str, str]:
    """The fields of an earlier rendered summary (so the offline summary keeps what it said)."""
    text = summary if isinstance(summary, str) else ""
    text = re.sub(r"<system-reminder>.*?</system-reminder>", "", text, flags=re.S)
    text = text.replace("<system-info>", "").replace("</system-info>", "")
    out: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        heading = line[2:].strip() if line.startswith("# ") else None
        if heading in _HEADINGS:
            current = _HEADINGS[heading]
            out[current] = ""
        elif current:
            out[current] = (out[current] + "\n" + line).strip()
    return out


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _texts(msg: Any, kind: str = "text") -> list[str]:
    return [str(b.get(kind) or "") for b in blocks_of(msg) if isinstance(b, dict) and b.get("type") == kind
            and b.get(kind)]


def _output_text(block: dict[str, Any]) -> str:
    out = block.get("output")
    if isinstance(out, str):
        return out
    return "\n".join(str(i.get("text") or "") for i in out or [] if isinstance(i, dict) and i.get("type") == "text")


def extractive_fields(messages: Sequence[Any], previous: Any = "") -> Fields:
    """An offline summary: the user's requests, the last answer, each tool call with the first line of its result,
    and identifiers (paths, URLs, ids) seen in the texts. Deterministic; every line comes from the messages."""
    old = previous_fields(previous)
    users = [t for m in messages if isinstance(m, dict) and m.get("role") == "user" for t in _texts(m)]
    answers = [t for m in messages if isinstance(m, dict) and m.get("role") == "assistant" for t in _texts(m)]
    tools = []
    for m in messages:
        blocks = [b for b in blocks_of(m) if isinstance(b, dict)]
        results = {b.get("id"): b for b in blocks if b.get("type") == "tool_result"}
        for b in blocks:
            if b.get("type") == "tool_call":
                res = results.get(b.get("id"))
                first = _output_text(res).strip().splitlines()[:1] if res else []
                tools.append(f"- {b.get('name')}({_clip(str(b.get('input') or ''), 160)})"
                             + (f" → {_clip(first[0], 200)}" if first else " (no result in this part)"))
    idents: list[str] = []
    for t in users + answers:
        for hit in re.findall(r"(?:https?://\S+|(?:/|\./)[\w./-]+|\b[0-9a-f]{12,}\b)", t):
            if hit not in idents:
                idents.append(hit)

    def merged(key: str, new: str) -> str:
        return "\n".join(p for p in (old.get(key, ""), new) if p).strip() or "(none)"

    values = {
        "task_overview": merged("task_overview", "\n".join(f"- {_clip(u, 240)}" for u in users[:5])),
        "current_state": _clip(answers[-1], 600) if answers else (old.get("current_state") or "(none)"),
        "important_discoveries": merged("important_discoveries", "\n".join(tools[-10:])),
        "next_steps": (f"- Continue with the latest request: {_clip(users[-1], 240)}" if users
                       else old.get("next_steps") or "(none)"),
        "context_to_preserve": merged("context_to_preserve", "\n".join(f"- {i}" for i in idents[:20])),
    }
    return Fields(values, "extractive")


def transcript(messages: Sequence[Any]) -> str:
    lines = []
    for m in messages:
        if not isinstance(m, dict):
            continue
        for b in blocks_of(m):
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if kind == "text":
                lines.append(f"{m.get('role')}: {b.get('text')}")
            elif kind == "tool_call":
                lines.append(f"{m.get('role')} calls {b.get('name')} [{b.get('id')}]: {b.get('input')}")
            elif kind == "tool_result":
                lines.append(f"tool result {b.get('name')} [{b.get('id')}] ({b.get('state')}): {_output_text(b)}")
            elif kind == "hint":
                lines.append(f"hint: {b.get('hint')}")
    return "\n".join(lines)


def parse_fields(reply: str) -> dict[str, str]:
    text = reply.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.S)
    if fence:
        text = fence.group(1)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LLMError(f"the summary reply is not JSON ({exc.msg})") from None
    if not isinstance(obj, dict) or any(not isinstance(obj.get(k), str) for k in SUMMARY_FIELDS):
        raise LLMError("the summary reply lacks one of " + ", ".join(SUMMARY_FIELDS))
    return {k: obj[k] for k in SUMMARY_FIELDS}


async def llm_fields(client: Any, messages: Sequence[Any], previous: Any, now: datetime, instruction: str = "",
                     retries: int = 1) -> Fields:
    prompt = COMPRESSION_PROMPT.replace("{current_time}", now.strftime("%Y-%m-%d %H:%M:%S %Z").strip())
    user = ""
    if previous:
        user += f"Summary of the earlier conversation:\n{previous}\n\n"
    user += "Conversation:\n" + transcript(messages) + "\n\n"
    if instruction:
        user += f"Extra instruction: {instruction}\n\n"
    user += prompt + "\n" + JSON_INSTRUCTION
    last: LLMError | None = None
    for attempt in range(retries + 1):
        reply = await client.acomplete("You are a helpful assistant that summarizes conversations.", user)
        try:
            return Fields(parse_fields(reply), "llm", attempt + 1)
        except LLMError as exc:
            last = exc
    raise last  # type: ignore[misc]
