"""What in a daily log is not a fact to promote: qwenmem's own compaction notes, questions, greetings and lines of
conversation.

qwenmem `compact` appends a note to the day's log under "## Compacted conversation …", opened by a marker comment
`<!-- qwenmem:compact session=… -->` and (since the end marker was added) closed by `<!-- /qwenmem:compact -->`.
The note restates a conversation (its "Key Decisions" can hold a question put to the user); it is already kept in
dialog/ and is no long-term fact. A note written before the end marker existed runs to the next heading of its
heading's level.
"""

from __future__ import annotations

import re

from qwenmem.core.dream.markdown import MemoryDoc

NOTE_START = re.compile(r"^\s*<!--\s*qwenmem:(?!/)[\w-]+\b.*-->\s*$")
NOTE_END = re.compile(r"^\s*<!--\s*/qwenmem:[\w-]+\s*-->\s*$")

_EMPHASIS = re.compile(r"[*_`~]+")
_TRAILING = re.compile(r"[\s)\]）」』\"'”’.。!！…]+$")
_GREETING = re.compile(r"^(hi|hello|hey|good (morning|afternoon|evening|night)|thanks|thank you|bye|goodbye|"
                       r"你好|您好|早上好|上午好|下午好|晚上好|晚安|谢谢|多谢|感谢|嗨|哈喽|再见|拜拜)\b", re.I)
_SPEAKER = re.compile(r"^(user|assistant|human|ai|bot|system|q|a|助手|问|答|用户说|助手说)\s*[:：]", re.I)
_ADDRESS = re.compile(r"^(do|does|would|could|can|shall|should|will) you\b|^(what|which|how) do you\b|^let me\b|"
                      r"^(你|您)(觉得|看|想|要不要|是否)|^请问|^要不要", re.I)


def qwenmem_note_lines(log: MemoryDoc) -> set[int]:
    """Line numbers of the log that belong to notes qwenmem itself wrote (see the module docstring)."""
    out: set[int] = set()
    heading_at = {h.line: k for k, h in enumerate(log.headings)}
    n = 0
    while n < len(log.lines):
        if n in log.protected or not NOTE_START.match(log.lines[n]):
            n += 1
            continue
        start = n
        above = n - 1
        while above >= 0 and not log.lines[above].strip():
            above -= 1
        if above in heading_at:
            start = above
        end = next((k + 1 for k in range(n + 1, len(log.lines)) if NOTE_END.match(log.lines[k])), None)
        if end is None:
            end = log.section_end(heading_at[above]) if above in heading_at else n + 1
        out.update(range(start, end))
        n = max(end, n + 1)
    return out


def not_a_fact(text: str) -> str | None:
    """Why a log entry is conversation rather than a fact, or None for an entry that may be a fact."""
    head = _EMPHASIS.sub("", text.split("\n", 1)[0]).strip()
    if not head:
        return None
    if _TRAILING.sub("", head).endswith(("?", "？")):
        return "a question, not a fact"
    if _SPEAKER.match(head):
        return "a line of conversation, not a fact"
    if _ADDRESS.search(head):
        return "addressed to the user (conversation), not a fact"
    if _GREETING.match(head) and len(head) <= 40:
        return "a greeting, not a fact"
    return None
