"""Tier 1: cut large tool outputs and offload their full text (spec qwenpaw-workspace.md §4.6).

Behaves like QwenPaw's `_prune_tool_result` so QwenPaw keeps working with what we write:
  * the newest max(trailing tool-result run, recent_n) messages get `recent_max_bytes`, older ones `old_max_bytes`;
    results of exempt calls (tool name in exempt_tool_names, or read_file of an exempt extension) always get the
    recent limit;
  * a text is left alone up to max_bytes + 100 bytes; beyond that its full text goes to
    <tool_results>/<uuid4hex>.txt, the first max_bytes bytes are kept (a split UTF-8 character is dropped) and the
    `<<<TRUNCATED>>>` notice is appended with QwenPaw's exact wording, so its re-truncation regexes still match;
  * a text that already carries the marker is only re-cut (the notice's numbers are rewritten, no new file).
One deliberate difference: QwenPaw appends no notice to a single-line output (the offload file is then orphaned);
we always append it, so the agent can always find the full text.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence

MARKER = "<<<TRUNCATED>>>"
SLACK_BYTES = 100

_TOTAL_RE = re.compile(r"contains (\d+) lines in total")
_START_RE = re.compile(r"starts at line (\d+)")
_PATH_RE = re.compile(r"file_path=(.*?) start_line=\d+ to read more")


def notice(total_lines: int, start_line: int, max_bytes: int, file_path: str, read_from: int) -> str:
    return (f"{MARKER}\nThe output above was truncated."
            f"\nThe full content is saved to the file and contains {total_lines} lines in total."
            f"\nThis excerpt starts at line {start_line} and covers the next {max_bytes} bytes."
            f"\nIf the current content is not enough, call `read_file` with file_path={file_path} "
            f"start_line={read_from} to read more.")


def cut_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of `text` that fits in max_bytes of UTF-8, never splitting a character."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")


@dataclass
class PruneLimits:
    recent_n: int = 2
    old_max_bytes: int = 3000
    recent_max_bytes: int = 50000
    exempt_extensions: Sequence[str] = (".md",)
    exempt_tools: Sequence[str] = ("chat_with_agent",)
    cache_dir: str = "tool_results"


@dataclass
class Offload:
    path: Path
    text: str


PruneKind = Literal["truncated", "re-truncated"]  # a tool output cut for the first time, or cut again shorter


@dataclass
class PruneChange:
    message_id: str
    tool_id: str
    tool_name: str
    kind: PruneKind
    bytes_before: int
    bytes_after: int
    offload: str = ""  # the file that holds the full text ("" for a re-cut)


@dataclass
class PruneResult:
    changes: list[PruneChange] = field(default_factory=list)
    offloads: list[Offload] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _exempt_tool_ids(messages: Sequence[Any], limits: PruneLimits) -> set[str]:
    exts = [e.lower() for e in limits.exempt_extensions]
    names = {n.lower() for n in limits.exempt_tools}
    exempt: set[str] = set()
    for msg in messages:
        content = msg.get("content") if isinstance(msg, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_use" or not block.get("id"):
                continue
            name = str(block.get("name") or "").lower()
            if name in names:
                exempt.add(str(block["id"]))
            elif name == "read_file":
                raw = block.get("raw_input")
                # QwenPaw looks only at raw_input; sessions written without it would otherwise lose their exemption
                raw = raw if isinstance(raw, str) and raw else json.dumps(block.get("input") or {}, ensure_ascii=False)
                if any(ext in raw.lower() for ext in exts):
                    exempt.add(str(block["id"]))
    return exempt


def _has_tool_result(msg: Any) -> bool:
    content = msg.get("content") if isinstance(msg, dict) else None
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def recent_split(messages: Sequence[Any], recent_n: int) -> int:
    """Index of the first message that gets the recent limit."""
    run = 0
    for msg in reversed(messages):
        if not _has_tool_result(msg):
            break
        run += 1
    return max(0, len(messages) - max(run, recent_n))


class _Pruner:
    def __init__(self, workspace: Path, limits: PruneLimits, result: PruneResult):
        self.workspace, self.limits, self.result = workspace, limits, result

    def text(self, text: str, max_bytes: int) -> tuple[str, PruneKind | Literal[""], str]:
        """(new text, kind, offload path); kind is "" when nothing changed."""
        if not text:
            return text, "", ""
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            self.result.skipped.append("a tool output holds lone surrogates; left as is (repair the session first)")
            return text, "", ""
        if MARKER in text:
            return self._recut(text, max_bytes)
        if size <= max_bytes + SLACK_BYTES:
            return text, "", ""
        path = self.workspace / self.limits.cache_dir / f"{uuid.uuid4().hex}.txt"
        self.result.offloads.append(Offload(path, text))
        kept = cut_utf8(text, max_bytes)
        total_lines = text.count("\n") + 1
        next_line = 1 + max(1, kept.count("\n"))
        if next_line <= total_lines:
            read_from = next_line
        elif total_lines > 1:
            read_from = total_lines
        else:
            read_from = 1  # QwenPaw adds no notice here (single-line output); we always do
        return kept + notice(total_lines, 1, max_bytes, str(path), read_from), "truncated", str(path)

    def _recut(self, text: str, max_bytes: int) -> tuple[str, PruneKind | Literal[""], str]:
        head, _, old = text.partition(MARKER)
        if len(head.encode("utf-8")) <= max_bytes + SLACK_BYTES:
            return text, "", ""
        total, start, path = _TOTAL_RE.search(old), _START_RE.search(old), _PATH_RE.search(old)
        if not (total and start):
            self.result.skipped.append("a truncated output has an unrecognised notice; left as is")
            return text, "", ""
        kept = cut_utf8(head, max_bytes)
        start_line = int(start.group(1))
        read_from = start_line + max(1, kept.count("\n"))
        new = kept + notice(int(total.group(1)), start_line, max_bytes, path.group(1) if path else "", read_from)
        return new, "re-truncated", ""


def prune_tool_results(messages: Sequence[Any], limits: PruneLimits, workspace: Path) -> PruneResult:
    """Cut tool outputs in place in `messages` (callers pass copies). Offload files are returned, not written."""
    result = PruneResult()
    pruner = _Pruner(workspace, limits, result)
    exempt = _exempt_tool_ids(messages, limits)
    split = recent_split(messages, limits.recent_n)
    for idx, msg in enumerate(messages):
        if not _has_tool_result(msg):
            continue
        limit = limits.recent_max_bytes if idx >= split else limits.old_max_bytes
        for block in msg["content"]:
            if not isinstance(block, dict) or block.get("type") != "tool_result" or not block.get("output"):
                continue
            tool_id = str(block.get("id") or "")
            max_bytes = limits.recent_max_bytes if tool_id in exempt else limit
            output = block["output"]
            targets: list[tuple[dict[str, Any], str]] = []
            if isinstance(output, str):
                targets.append((block, "output"))
            elif isinstance(output, list):
                targets.extend((b, "text") for b in output if isinstance(b, dict) and b.get("type") == "text"
                               and isinstance(b.get("text"), str))
            for holder, key in targets:
                before = holder[key]
                after, kind, offload = pruner.text(before, max_bytes)
                if kind:
                    holder[key] = after
                    result.changes.append(PruneChange(str(msg.get("id") or ""), tool_id, str(block.get("name") or ""),
                                                      kind, len(before.encode("utf-8")), len(after.encode("utf-8")),
                                                      offload))
    return result
