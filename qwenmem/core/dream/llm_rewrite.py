"""The LLM dream: ask an OpenAI-compatible model for the rewrite plus a change list, then validate both.

The front matter is never sent: qwenmem re-attaches the original, so it cannot be damaged. The model must answer
one JSON object {"memory_md": str, "changes": [{"action", "old", "new", "reason"}]}; anything else is rejected.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, overload

from qwenmem.core.dream.changelog import Change, ChangeAction
from qwenmem.core.dream.markdown import _front_matter_length, split_lines
from qwenmem.core.errors import ValidationError
from qwenmem.core.surrogates import without_surrogates

if TYPE_CHECKING:
    from qwenmem.core.llm import ChatClient

ACTIONS: dict[str, ChangeAction] = {"removed": "removed", "merged": "merged", "replaced": "replaced", "added": "added"}

SYSTEM_PROMPT = (
    "You are the Dream Memory Organizer for an assistant's long-term memory file MEMORY.md. You consolidate it "
    "carefully and you report every change. You answer with one JSON object and nothing else."
)

USER_TEMPLATE = """Today is {date}. Consolidate MEMORY.md with today's log memory/{date}.md.

Rules:
1. Keep only core decisions, confirmed preferences and reusable experience; do not copy routine logs or one-off fixes.
2. dedupe: remove exact and near-duplicate entries.
3. replace: when a newer fact (from today's log) contradicts an older entry, keep the newer one.
4. merge: combine related, fragmented entries into one general entry.
5. Keep every heading (you may add new ones), keep tables and code blocks exactly, keep the language of each entry.
6. Never add credentials, API keys or tokens.

Answer with ONE JSON object, no prose, no code fence:
{{"memory_md": "<the complete new MEMORY.md text>",
  "changes": [{{"action": "removed|merged|replaced|added", "old": "<the exact original line(s), or null for added>",
               "new": "<the new line(s), or null for removed>", "reason": "<why>"}}]}}
Every line you remove or rewrite must appear in "old" of some change.

=== MEMORY.md ===
{memory}
=== end of MEMORY.md ===

=== memory/{date}.md ===
{log}
=== end of memory/{date}.md ===
"""


def build_prompt(body: str, log_text: str | None, date: str) -> tuple[str, str]:
    return SYSTEM_PROMPT, USER_TEMPLATE.format(date=date, memory=body.rstrip("\n"),
                                               log=(log_text or "(no log for this day)").rstrip("\n"))


def split_front_matter(text: str) -> tuple[str, str]:
    lines = split_lines(text)
    n = _front_matter_length(lines)
    return "".join(lines[:n]), "".join(lines[n:])


@overload
def _clean(text: str) -> str: ...
@overload
def _clean(text: None) -> None: ...
@overload
def _clean(text: str | None) -> str | None: ...
def _clean(text: str | None) -> str | None:
    """Lone surrogates in the model's change notes become U+FFFD, so they can be printed and logged as UTF-8."""
    return None if text is None else without_surrogates(text)


def parse_reply(reply: str) -> tuple[str, list[Change]]:
    text = reply.strip()
    fenced = re.match(r"^```(?:json)?\s*\n(.*)\n```\s*$", text, re.S)
    if fenced:
        text = fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    try:
        doc = json.loads(text[start:end + 1]) if start >= 0 and end > start else None
    except json.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("memory_md"), str):
        preview = " ".join(reply.split())[:80]
        raise ValidationError(f"rejected: the LLM reply is not the requested JSON object with \"memory_md\" "
                              f"(it began: {preview!r})")
    try:  # a lone surrogate (a model splitting an emoji) cannot be written as UTF-8, and QwenPaw would choke on it
        doc["memory_md"].encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("rejected: the LLM rewrite holds lone surrogate characters (a broken emoji?); "
                              "nothing was written") from None
    raw_changes = doc.get("changes")
    if not isinstance(raw_changes, list):
        raise ValidationError("rejected: the LLM reply has no \"changes\" list")
    changes = []
    for c in raw_changes:
        if not isinstance(c, dict):
            continue
        action = str(c.get("action") or "").lower().strip()
        old, new = c.get("old"), c.get("new")
        old = "\n".join(map(str, old)) if isinstance(old, list) else (str(old) if old else None)
        new = "\n".join(map(str, new)) if isinstance(new, list) else (str(new) if new else None)
        changes.append(Change(ACTIONS.get(action, "changed"), _clean(str(c.get("reason") or "(no reason given)")),
                              old=_clean(old), new=_clean(new)))
    return doc["memory_md"], changes


def reattach_front_matter(front_matter: str, old_body: str, proposed: str) -> str:
    """The proposed body with the original front matter; a reply that alters the front matter is rejected."""
    reply_fm, reply_body = split_front_matter(proposed)
    if reply_fm:
        if reply_fm.strip() != front_matter.strip():
            raise ValidationError("rejected: the LLM changed the front matter")
        proposed = reply_body
    if old_body.endswith("\n") and not proposed.endswith("\n"):
        proposed += "\n"
    if front_matter and not proposed.startswith(("\n", "\r")) and old_body.startswith(("\n", "\r")):
        proposed = "\n" + proposed.lstrip("\r\n")
    return front_matter + proposed


def propose(client: ChatClient, body: str, log_text: str | None, date: str) -> tuple[str, list[Change]]:
    system, user = build_prompt(body, log_text, date)
    return parse_reply(client.complete(system, user))
