"""Tier 2: turn the messages leaving the context (plus the previous summary) into a new `_compressed_summary`.

Two summarizers share one interface:
  * LLMSummarizer: any OpenAI-compatible endpoint through core.llm.ChatClient (timeouts; the openai client retries
    transport failures with exponential backoff; a reply that fails validation is retried once after a pause).
    A reply must be non-empty, have `##` section headings and be shorter than its input; otherwise ValidationError.
  * ExtractiveSummarizer: deterministic and offline. It picks goal, constraints, tool progress, errors, decisions
    and exact paths/URLs out of the messages with fixed rules, and merges the previous summary section by section.
History longer than the summarizer budget is summarized chunk by chunk (oldest first, each chunk updating the
previous result), so no removed message is left out, unlike QwenPaw (§4.5, weakness §8 item 7).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from qwenmem.core.compaction.gen1 import prompts
from qwenmem.core.compaction.gen1.formatting import chunk_messages
from qwenmem.core.compaction.gen1.prune import MARKER
from qwenmem.core.errors import LLMError, ValidationError
from qwenmem.core.tokens import TokenCounter

if TYPE_CHECKING:
    from qwenmem.core.llm import ChatClient

_HEADING = re.compile(r"^##\s+\S", re.M)


@dataclass
class SummaryOutcome:
    text: str
    summarizer: str  # "llm:<model>" | "extractive"
    chunks: int
    calls: int
    input_tokens: int
    output_tokens: int


def validate_summary(reply: str, input_text: str, counter: TokenCounter) -> None:
    if not reply or not reply.strip():
        raise ValidationError("the summarizer returned an empty summary; nothing was written")
    try:
        reply.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("the summary holds lone surrogate characters; nothing was written") from None
    if not _HEADING.search(reply):
        raise ValidationError("the summary has no '## ' sections (QwenPaw needs them); nothing was written")
    if counter.count(reply) >= counter.count(input_text):
        raise ValidationError(f"the summary ({counter.count(reply)} tokens) is not shorter than its input "
                              f"({counter.count(input_text)} tokens); nothing was written")


class LLMSummarizer:
    def __init__(self, client: ChatClient, counter: TokenCounter, language: str = "en", validation_retries: int = 1,
                 backoff: float = 0.5):
        self.client, self.counter, self.language = client, counter, language
        self.validation_retries, self.backoff = validation_retries, backoff
        self.name = f"llm:{client.config.model}"

    async def _one(self, conversation: str, previous: str, extra: str) -> tuple[str, int]:
        system, user = prompts.summary_request(conversation, previous, self.language, extra)
        calls = 0
        for attempt in range(self.validation_retries + 1):
            calls += 1
            reply = (await self.client.acomplete(system, user)).strip()
            try:
                validate_summary(reply, user, self.counter)
                return reply, calls
            except ValidationError:
                if attempt == self.validation_retries:
                    raise
                await asyncio.sleep(self.backoff * (2 ** attempt))
        raise LLMError("unreachable")  # pragma: no cover

    async def summarize(self, messages: Sequence[Any], previous: str, budget: int, include_thinking: bool = True,
                        extra: str = "") -> SummaryOutcome:
        chunks = chunk_messages(messages, budget, self.counter, include_thinking)
        summary, calls = previous, 0
        for chunk in chunks:
            summary, n = await self._one(chunk, summary, extra)
            calls += n
        inputs = sum(self.counter.count(c) for c in chunks) + self.counter.count(previous)
        return SummaryOutcome(summary, self.name, len(chunks), calls, inputs, self.counter.count(summary))

    async def daily_note(self, messages: Sequence[Any], budget: int, include_thinking: bool = True) -> str:
        notes = []
        for chunk in chunk_messages(messages, budget, self.counter, include_thinking):
            system, user = prompts.daily_request(chunk)
            reply = (await self.client.acomplete(system, user)).strip()
            if reply and reply != "[SILENT]":
                notes.append(reply)
        return "\n\n".join(notes)


# --------------------------------------------------------------------------------------------- extractive

_CONSTRAINT = re.compile(r"\b(must|should|shouldn't|don't|do not|never|always|prefer|please|only|without|avoid|"
                         r"make sure)\b|不要|必须|务必|请|别|只|避免|需要", re.I)
_DECISION = re.compile(r"\b(decided|decide|will use|we'll use|going to|chose|choose|switch(ed)? to|instead of|"
                       r"plan to|settled on)\b|决定|采用|选择|改用|方案", re.I)
_ERROR = re.compile(r"\b(error|failed|failure|exception|traceback|denied|not found|timed out|timeout)\b|错误|失败|异常",
                    re.I)
_PATH = re.compile(r"(?:https?://[^\s\"'<>)\]]+|[A-Za-z]:\\[^\s\"'<>|]+|(?<![\w.])/(?:[\w.@-]+/)+[\w.@-]+|"
                   r"\b[\w-]+(?:/[\w.-]+)+\.\w{1,6}\b)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\n+")
_MARKUP = re.compile(r"^[\s#>*\-+]+")
# tools that show file contents: words like "error" in what they return are content, not a failure
_READERS = re.compile(r"read|grep|search|glob|list|cat|view", re.I)
_ITEM = re.compile(r"^\s*(?:[-*+] \[[ xX]\]|[-*+]|\d+[.)])\s+")


def _clip(text: str, limit: int) -> str:
    text = _MARKUP.sub("", " ".join(text.split()).replace("**", ""))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _texts(msg: Any, kinds: tuple[str, ...] = ("text",)) -> list[str]:
    if not isinstance(msg, dict):
        return []
    content = msg.get("content")
    if isinstance(content, str):
        return [content] if "text" in kinds else []
    out = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") in kinds:
            out.append(str(block.get("text") or block.get("thinking") or ""))
    return out


def _tool_output(block: dict[str, Any]) -> str:
    output = block.get("output")
    if isinstance(output, list):
        output = "\n".join(str(b.get("text") or "") for b in output if isinstance(b, dict) and b.get("type") == "text")
    return str(output or "").split(MARKER)[0]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def _parse_sections(summary: str) -> dict[str, list[str]]:
    """Bullets of a previous summary by section ("Progress/Done" for ### under ## Progress); loose text → Critical."""
    sections: dict[str, list[str]] = {}
    current, parent = "Critical Context", ""
    for line in summary.splitlines():
        if line.startswith("### "):
            current = f"{parent}/{line[4:].strip()}" if parent else line[4:].strip()
            continue
        if line.startswith("## "):
            parent = current = line[3:].strip()
            continue
        text = _ITEM.sub("", line).strip()
        if text and text not in ("(none)", "（无）"):
            sections.setdefault(current, []).append(text)
    return sections


class _Collector:
    def __init__(self) -> None:
        self.items: dict[str, list[str]] = {}

    def add(self, section: str, text: str, limit: int = 240) -> None:
        text = _clip(text, limit)
        bucket = self.items.setdefault(section, [])
        if len(text) >= 4 and text not in bucket:
            bucket.append(text)


def _tool_results(messages: Sequence[Any]) -> dict[str, str]:
    """Each tool_result's output text by its id."""
    results: dict[str, str] = {}
    for msg in messages:
        content: list[Any] = msg["content"] if isinstance(msg, dict) and isinstance(msg.get("content"), list) else []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("id"):
                results[str(block["id"])] = _tool_output(block)
    return results


def _collect_user(found: _Collector, user_texts: list[str]) -> None:
    """The goal (first and latest request) and the constraints the user stated."""
    if user_texts:
        found.add("Goal", user_texts[0], 300)
        if len(user_texts) > 1:
            found.add("Goal", "Latest request: " + user_texts[-1], 300)
    for text in user_texts:
        for sentence in _sentences(text):
            if _CONSTRAINT.search(sentence):
                found.add("Constraints & Preferences", sentence, 200)


def _tool_uses(msg: dict[str, Any]) -> list[dict[str, Any]]:
    content = msg.get("content")
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"] if isinstance(content, list) else []


def _collect_tool_call(found: _Collector, block: dict[str, Any], results: dict[str, str]) -> None:
    """Done, blocked (an error in a non-reading tool's output) or still in progress."""
    params = ", ".join(f"{k}={v}" for k, v in (block.get("input") or {}).items()) if isinstance(
        block.get("input"), dict) else str(block.get("input") or "")
    call = f"{block.get('name') or 'tool'}({_clip(params, 100)})"
    output = results.get(str(block.get("id") or ""))
    if output is None:
        found.add("Progress/In Progress", f"{call}: no result recorded")
    elif not _READERS.search(str(block.get("name") or "")) and _ERROR.search(output[:2000]):
        line = next((ln for ln in output.splitlines() if _ERROR.search(ln)), output)
        found.add("Progress/Blocked", f"{call}: {_clip(line, 160)}")
    else:
        found.add("Progress/Done", call)


def _collect_message(found: _Collector, msg: dict[str, Any], results: dict[str, str]) -> str:
    """Decisions, tool progress and exact paths/URLs of one message; returns its last non-empty assistant text."""
    last = ""
    if msg.get("role") == "assistant":
        for text in _texts(msg):
            if text.strip():
                last = text
            for sentence in _sentences(text):
                if _DECISION.search(sentence):
                    found.add("Key Decisions", sentence, 200)
    uses = _tool_uses(msg)
    for block in uses:
        _collect_tool_call(found, block, results)
    for text in _texts(msg) + [str(b.get("input") or "") for b in uses]:
        for match in _PATH.findall(text):
            found.add("Critical Context", match.rstrip(".,;:'\""), 200)
    return last


def _collect_where(found: _Collector, messages: Sequence[Any]) -> None:
    """Where the removed messages went: their time span and dialog files."""
    stamps = [str(m.get("timestamp")) for m in messages if isinstance(m, dict) and m.get("timestamp")]
    if stamps:
        days = sorted({s.split()[0] for s in stamps if s.split()})
        where = ", ".join(f"dialog/{d}.jsonl" for d in days[:3]) + (" …" if len(days) > 3 else "")
        found.add("Critical Context", f"{len(messages)} earlier message(s) ({min(stamps)} to {max(stamps)}) "
                                      f"are in {where}", 300)


class ExtractiveSummarizer:
    name = "extractive"
    CAP = 12  # bullets kept per section; the newest win

    def __init__(self, counter: TokenCounter):
        self.counter = counter

    def build(self, messages: Sequence[Any], previous: str) -> str:
        found = _Collector()
        user_texts = [t for m in messages if isinstance(m, dict) and m.get("role") == "user" for t in _texts(m)
                      if t.strip()]
        _collect_user(found, user_texts)
        results = _tool_results(messages)
        last_assistant = ""
        for msg in messages:
            if isinstance(msg, dict):
                last_assistant = _collect_message(found, msg, results) or last_assistant
        if last_assistant:
            found.add("Progress/In Progress", "Last reply: " + last_assistant, 300)
        if user_texts:
            found.add("Next Steps", "Continue from the latest request: " + user_texts[-1], 300)
        _collect_where(found, messages)
        return self._render(_parse_sections(previous) if previous else {}, found.items)

    def _render(self, old: dict[str, list[str]], new: dict[str, list[str]]) -> str:
        def merged(key: str) -> list[str]:
            items: list[str] = []
            for text in old.get(key, []) + new.get(key, []):
                if text not in items:
                    items.append(text)
            return items[-self.CAP:]

        lines: list[str] = []
        for section in prompts.SECTIONS:
            lines.append(f"## {section}")
            if section == "Progress":
                for sub in prompts.PROGRESS_SUBSECTIONS:
                    lines.append(f"### {sub}")
                    box = "- [x] " if sub == "Done" else "- [ ] " if sub == "In Progress" else "- "
                    items = merged(f"Progress/{sub}")
                    lines.extend([box + t for t in items] if items else ["- (none)"])
            elif section == "Next Steps":
                items = merged(section)
                lines.extend([f"{i}. {t}" for i, t in enumerate(items, 1)] if items else ["- (none)"])
            else:
                lines.extend("- " + t for t in merged(section) or ["(none)"])
            lines.append("")
        return "\n".join(lines).rstrip() + "\n"

    def summarize(self, messages: Sequence[Any], previous: str, budget: int, include_thinking: bool = True,
                  extra: str = "") -> SummaryOutcome:
        text = self.build(messages, previous)
        chunks = chunk_messages(messages, budget, self.counter, include_thinking)
        inputs = sum(self.counter.count(c) for c in chunks) + self.counter.count(previous)
        return SummaryOutcome(text, self.name, len(chunks), 0, inputs, self.counter.count(text))

    def daily_note(self, messages: Sequence[Any], budget: int, include_thinking: bool = True) -> str:
        sections = _parse_sections(self.build(messages, ""))
        out: list[str] = []
        # one heading level down: the note sits under its own "## Compacted conversation" heading
        for title, key, prefix in (("Goal", "Goal", "- "), ("Done", "Progress/Done", "- "),
                                   ("Blocked", "Progress/Blocked", "- "), ("Key Decisions", "Key Decisions", "- "),
                                   ("Critical Context", "Critical Context", "- ")):
            items = sections.get(key, [])
            if items:
                out.append(f"### {title}")
                out.extend(prefix + t for t in items)
        return "\n".join(out)
