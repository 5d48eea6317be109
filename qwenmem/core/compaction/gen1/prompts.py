"""Prompts for the tier-2 summary and the tier-3 daily-log note.

The requested structure is the one QwenPaw stores in `_compressed_summary` (spec §4.5), so a session compacted
by qwenmem reads the same to the agent afterwards: ## Goal; ## Constraints & Preferences; ## Progress with
### Done / ### In Progress / ### Blocked; ## Key Decisions; ## Next Steps; ## Critical Context.
"""

from __future__ import annotations

SECTIONS = ("Goal", "Constraints & Preferences", "Progress", "Key Decisions", "Next Steps", "Critical Context")
PROGRESS_SUBSECTIONS = ("Done", "In Progress", "Blocked")

SYSTEM_EN = (
    "You are a context compaction assistant. You condense an AI assistant's conversation history into a "
    "structured summary that lets a later session continue the work without the original messages. Keep every "
    "fact needed to continue; drop chatter. Reply with the summary only."
)
SYSTEM_ZH = (
    "你是上下文压缩助手。请把 AI 助手的对话历史浓缩成结构化摘要，使之后的会话无需原始消息即可继续工作。"
    "保留继续工作所需的全部事实，去掉寒暄。只输出摘要本身。"
)

_FORMAT = """Use exactly these Markdown sections:

## Goal
- what the user is trying to achieve

## Constraints & Preferences
- requirements, limits and preferences the user stated

## Progress
### Done
- [x] finished work
### In Progress
- [ ] work under way
### Blocked
- problems that stop progress (or "(none)")

## Key Decisions
- **decision**: reason

## Next Steps
1. what to do next

## Critical Context
- exact file paths, function names, commands, ids, error messages and values needed to continue"""

INITIAL_EN = ("Summarize the conversation above.\n\n" + _FORMAT +
              "\n\nKeep exact paths, names and error text verbatim. Be concise.")
UPDATE_EN = ("Update the previous summary with the conversation above. Keep everything from the previous summary "
             "that still matters, add new progress and decisions, move finished items to Done, refresh Next Steps, "
             "and drop what is no longer relevant.\n\n" + _FORMAT +
             "\n\nKeep exact paths, names and error text verbatim. Be concise.")
INITIAL_ZH = ("请总结上面的对话。\n\n" + _FORMAT + "\n\n路径、名称和错误信息保持原文。请简洁。")
UPDATE_ZH = ("请用上面的对话更新之前的摘要：保留之前摘要中仍然重要的内容，补充新的进展和决定，把完成的事项移到 Done，"
             "更新 Next Steps，删除不再相关的内容。\n\n" + _FORMAT + "\n\n路径、名称和错误信息保持原文。请简洁。")

DAILY_SYSTEM = (
    "You keep an assistant's daily memory log. From a conversation that is being compacted, write the facts worth "
    "remembering long-term: user profile and preferences, project state, events, decisions, and lessons learned "
    "(what worked, what failed and why). Use short Markdown bullet points under '### Facts' and '### Reflections'. "
    "Reply with the bullets only; reply [SILENT] if nothing is worth keeping."
)


def summary_request(conversation: str, previous_summary: str, language: str, extra_instruction: str = "") -> tuple[str, str]:
    """(system prompt, user message) for one summarizer call."""
    zh = (language or "").lower() == "zh"
    if previous_summary:
        user = (f"# conversation\n{conversation}\n\n# previous-summary\n{previous_summary}\n\n"
                f"{UPDATE_ZH if zh else UPDATE_EN}")
    else:
        user = f"# conversation\n{conversation}\n\n{INITIAL_ZH if zh else INITIAL_EN}"
    if extra_instruction:
        user += f"\n\n# extra-instruction\n{extra_instruction}"
    return (SYSTEM_ZH if zh else SYSTEM_EN), user


def daily_request(conversation: str) -> tuple[str, str]:
    return DAILY_SYSTEM, f"# conversation\n{conversation}\n\nWrite the daily-log bullets now."
