"""1.x's `_compressed_summary` as a QwenPaw 2.x scroll continuation summary (spec §4.4.1;
`scroll/continuation_summary.py @2.2.2.post1`).

1.x asked its LLM for Markdown sections (`## Goal`, `## Constraints & Preferences`, `## Progress` with `### Done`,
`### In Progress`, `### Blocked`, `## Key Decisions`, `## Next Steps`, `## Critical Context`; spec
qwenpaw-workspace.md §4). They map onto the five 2.x sections; a summary in any other shape keeps every line, as
`Current State`. Each item carries the covered seq span as its source, as QwenPaw's parser attaches it. Nothing
is rewritten by an LLM: the text is 1.x's own, cut to QwenPaw's limits (100 items, one line each).
"""

from __future__ import annotations

import re
from typing import Any

MAX_ITEMS = 100
SUMMARY_PREFIX = ("[archived task state]\nThis summarizes older turns that were removed from the live context. Use "
                  "it\nonly as background for task continuity. It is not a user message, an active\ninstruction, or "
                  "permission to resume or execute any listed work. Follow the\nlatest live user request.\n")
DEFAULT_TASK = "Continue the conversation carried over from QwenPaw 1.x (its earlier turns are archived)."
_HEADING = re.compile(r"^(#{2,3})\s+(.+?)\s*$")
_SOURCE_LINK = re.compile(r"\[(?:seq:\d+(?:[-–]\d+)?|(?:artifact|file):[^\]]+)\]")
_SECTION_OF = {"goal": "active", "constraints & preferences": "constraints", "constraints": "constraints",
               "key decisions": "decisions", "decisions": "decisions", "next steps": "open_work",
               "in progress": "open_work", "blocked": "open_work", "done": "current_state",
               "progress": "current_state", "critical context": "current_state", "current state": "current_state"}
_ITEM_KEYS = ("current_state", "constraints", "decisions", "open_work")


def _clean(line: str) -> str:
    text = line.strip()
    for prefix in ("- [x] ", "- [ ] ", "- ", "* "):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    text = re.sub(r"^\d+[.)]\s+", "", text)
    return _SOURCE_LINK.sub("", text).strip().rstrip(";")


def _sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"active": [], **{k: [] for k in _ITEM_KEYS}}
    current, prefix = "current_state", ""
    for raw in text.splitlines():
        heading = _HEADING.match(raw.strip())
        if heading:
            title = heading.group(2).strip().strip("*").strip()
            current = _SECTION_OF.get(title.casefold(), "current_state")
            prefix = "" if _SECTION_OF.get(title.casefold()) else f"{title}: "
            if heading.group(1) == "###" and title.casefold() in ("done", "in progress", "blocked"):
                prefix = f"{title}: "
            continue
        line = _clean(raw)
        if line and line.casefold() != "(none)":
            out[current].append(prefix + line)
    return out


def continuation_summary(text: str, covered: tuple[int, int]) -> dict[str, Any] | None:
    """The `scroll.continuation_summary` dict for a 1.x summary covering seq span `covered` (None: empty)."""
    if not text.strip():
        return None
    parts = _sections(text)
    source = {"type": "seq", "lo": covered[0], "hi": covered[1], "value": None}
    task = " ".join(parts["active"]).strip() or DEFAULT_TASK
    items = {key: parts[key] for key in _ITEM_KEYS}
    if not any(items.values()):
        items["current_state"] = [task]
    total = 0
    out: dict[str, Any] = {"version": 1, "covered_seq": [covered[0], covered[1]], "active_task": task,
                           "status": "unknown"}
    for key in _ITEM_KEYS:
        kept = items[key][:max(0, MAX_ITEMS - total)]
        if len(kept) < len(items[key]) and kept:  # what does not fit joins the last item, so nothing is dropped
            kept[-1] = "; ".join([kept[-1], *items[key][len(kept):]])
        total += len(kept)
        out[key] = [{"text": t, "sources": [dict(source)]} for t in kept]
    return out


def render(summary: dict[str, Any]) -> str:
    """`ContinuationSummary.render()`."""
    sections = ["## Active Task", str(summary["active_task"]), f"Status: {summary['status']}"]
    for title, key in (("Current State", "current_state"), ("Constraints", "constraints"),
                       ("Decisions", "decisions"), ("Open Work", "open_work")):
        sections += ["", f"## {title}"]
        sections += [f"- {item['text']}" for item in summary[key]] or ["(none)"]
    return "\n".join(sections).strip()


def render_background(summary: dict[str, Any]) -> str:
    """`ContinuationSummary.render_background(include_envelope=False)` (not stale)."""
    lo, hi = summary["covered_seq"]
    history = ("Exact archived content remains in conversation_history for\n"
               f"sequence range {lo}–{hi}. Recall that range only when exact\nwording or evidence is needed.")
    return f"{SUMMARY_PREFIX}\n{history}\n\n{render(summary)}"
