"""What a 2.x session file does not store but AgentScope counts: the system prompt and the tool schemas.

QwenPaw rebuilds the system prompt on every start from the workspace's `system_prompt_files` (agent.json, default
AGENTS.md, SOUL.md, PROFILE.md; spec qwenpaw2-workspace.md §1.3) plus its own instructions and skill prompts, and
the tool schemas come from the live toolkit. Neither is in `agent.state`, so qwenmem estimates the first from the
prompt files and takes the second from `--tools-tokens` (0 otherwise), and says so in every check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from qwenmem.core import confine
from qwenmem.core.compaction2.tokens import ZERO, Size, text_bytes
from qwenmem.core.workspace import Workspace

DEFAULT_PROMPT_FILES = ("AGENTS.md", "SOUL.md", "PROFILE.md")  # config.py L2419-2422 @2.2.2.post1
_FRONT_MATTER = re.compile(r"\A---\r?\n.*?\r?\n---\r?\n", re.S)


@dataclass(frozen=True)
class FixedPart:
    """A part of the model input outside state.context, with where its size came from."""

    size: Size
    source: str
    exact: bool = False

    @property
    def tokens(self) -> int:
        return self.size.tokens


def strip_front_matter(text: str) -> str:
    return _FRONT_MATTER.sub("", text, count=1)


def prompt_files(agent_doc: dict[str, Any]) -> list[str]:
    files = agent_doc.get("system_prompt_files") if isinstance(agent_doc, dict) else None
    if isinstance(files, list) and all(isinstance(f, str) for f in files):
        return list(files)
    return list(DEFAULT_PROMPT_FILES)


def system_prompt_estimate(ws: Workspace, agent_doc: dict[str, Any], tokens: int | None = None) -> FixedPart:
    if tokens is not None:
        return FixedPart(Size(4 * tokens), f"--system-tokens {tokens}", exact=True)
    parts, used = [], []
    for name in prompt_files(agent_doc):
        try:
            path = ws.resolve_inside(name)
        except Exception:  # a prompt file outside the workspace is not read
            continue
        if path.is_file():
            parts.append(strip_front_matter(confine.read_text(path, "utf-8", "replace")).strip())
            used.append(name)
    text = "\n\n".join(p for p in parts if p)
    where = "+".join(used) if used else "no prompt files"
    return FixedPart(Size(text_bytes(text)), f"estimate from {where} (front matter removed; QwenPaw's own "
                     "instructions and skill prompts not included)")


def tools_estimate(tokens: int | None = None) -> FixedPart:
    if tokens is not None:
        return FixedPart(Size(4 * tokens), f"--tools-tokens {tokens}", exact=True)
    return FixedPart(ZERO, "not stored in the session file; 0 assumed (pass --tools-tokens N)")


NOT_STORED_NOTICE = ("the 2.x session file stores neither the system prompt nor the tool schemas; both are "
                     "estimated (see their sources) and AgentScope counts them")
