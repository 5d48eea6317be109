"""2.x tool-result pruning (agents/middlewares.py L721-841, agents/tools/utils.py @2.2.2.post1; spec §4.6, §2.3).

  * the newest max(trailing tool-result messages, recent_n) messages get `recent_max_bytes`, older ones
    `old_max_bytes` (native) or `recent_max_bytes` (scroll); exempt tools and read_file of exempt extensions always
    get the recent limit;
  * a text without the marker whose UTF-8 size exceeds max_bytes (no slack any more) is saved whole to
    <workspace>/<tool_results_cache>/tool-result-<uuid4hex>.txt, its first max_bytes bytes are kept (a split
    character dropped) and the notice is appended with the path quoted; the tool_result's
    metadata.qwenpaw_truncation["<index>"] records {version, file_path, file_size_bytes, total_lines, start_line,
    max_bytes, excerpt_bytes, read_from, notice};
  * next = start + max(1, newlines kept); when nothing is left to advance to (no newline kept, or the cut is in the
    last line) read_from is None, the notice points at the artifact and continuation_mode is "artifact";
  * an already marked text is re-cut: same artifact, start line from its notice, numbers rewritten.
Differences: the artifact is written atomically (QwenPaw: plain write_text); the "oversized line" wording and the
1024-byte notice cap are not reproduced exactly (the source lines are not quoted in the spec).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from qwenmem.core.compaction.gen2.tokens import blocks_of

MARKER = "<<<TRUNCATED>>>"
_START_RE = re.compile(r"starts at line (\d+)")
_TOTAL_RE = re.compile(r"contains (\d+) lines in total")
_PATH_RE = re.compile(r'file_path="(.*?)"')


def notice(total_lines: int, start_line: int, max_bytes: int, path: str, read_from: int | None) -> str:
    if read_from is None:
        return (f"{MARKER}\nThe output above was truncated.\nThe full content is saved to the file and contains "
                f"{total_lines} lines in total.\nThis excerpt starts at line {start_line} and covers the next "
                f"{max_bytes} bytes of an oversized line.\nIf the current content is not enough, read the saved "
                f"file at file_path=\"{path}\".")
    return (f"{MARKER}\nThe output above was truncated.\nThe full content is saved to the file and contains "
            f"{total_lines} lines in total.\nThis excerpt starts at line {start_line} and covers the next {max_bytes} "
            f"bytes.\nIf the current content is not enough, call `read_file` with file_path=\"{path}\" "
            f"start_line={read_from} to read more.")


def cut_utf8(text: str, max_bytes: int) -> str:
    return text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")


@dataclass
class Limits:
    recent_n: int = 2
    old_max_bytes: int = 3000
    recent_max_bytes: int = 50000
    exempt_extensions: Sequence[str] = (".md",)
    exempt_tools: Sequence[str] = ("chat_with_agent",)
    cache_dir: Path = Path("tool_results")  # absolute
    scroll: bool = False


@dataclass
class Artifact:
    path: Path
    text: str


@dataclass
class PruneOutcome:
    cut: int = 0
    recut: int = 0
    bytes_removed: int = 0
    artifacts: list[Artifact] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _has_result(msg: Any) -> bool:
    return any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks_of(msg))


def _exempt_ids(messages: Sequence[Any], limits: Limits) -> set[str]:
    names = {n.lower() for n in limits.exempt_tools}
    exts = [e.lower() for e in limits.exempt_extensions]
    out = set()
    for msg in messages:
        for b in blocks_of(msg):
            if not isinstance(b, dict) or b.get("type") != "tool_call":
                continue
            name = str(b.get("name") or "").lower()
            if name in names or (name == "read_file" and any(e in str(b.get("input") or "").lower() for e in exts)):
                out.add(str(b.get("id")))
    return out


def _next_line(kept: str, start: int, total: int) -> int | None:
    newlines = kept.count("\n")
    nxt = start + max(1, newlines)
    return None if newlines == 0 or nxt > total else nxt


def _cut(text: str, max_bytes: int, limits: Limits, out: PruneOutcome) -> tuple[str, dict[str, Any] | None]:
    if MARKER in text:
        return _recut(text, max_bytes, out)
    size = len(text.encode("utf-8"))
    if size <= max_bytes:
        return text, None
    path = limits.cache_dir / f"tool-result-{uuid.uuid4().hex}.txt"
    out.artifacts.append(Artifact(path, text))
    kept = cut_utf8(text, max_bytes)
    total = text.count("\n") + 1
    read_from = _next_line(kept, 1, total)
    note = notice(total, 1, max_bytes, str(path), read_from)
    meta = {"version": 1, "file_path": str(path), "file_size_bytes": size, "total_lines": total, "start_line": 1,
            "max_bytes": max_bytes, "excerpt_bytes": len(kept.encode("utf-8")), "read_from": read_from,
            "notice": note}
    if read_from is None:
        meta["continuation_mode"] = "artifact"
    out.cut += 1
    out.bytes_removed += size - len(kept.encode("utf-8"))
    return kept + note, meta


def _recut(text: str, max_bytes: int, out: PruneOutcome) -> tuple[str, dict[str, Any] | None]:
    head, _, old = text.partition(MARKER)
    if len(head.encode("utf-8")) <= max_bytes:
        return text, None
    start, total, path = _START_RE.search(old), _TOTAL_RE.search(old), _PATH_RE.search(old)
    if not (start and total and path):
        out.skipped.append("a truncated output has an unrecognised notice; left as is")
        return text, None
    kept = cut_utf8(head, max_bytes)
    s, t = int(start.group(1)), int(total.group(1))
    read_from = _next_line(kept, s, t)
    note = notice(t, s, max_bytes, path.group(1), read_from)
    out.recut += 1
    out.bytes_removed += len(head.encode("utf-8")) - len(kept.encode("utf-8"))
    return kept + note, {"max_bytes": max_bytes, "excerpt_bytes": len(kept.encode("utf-8")), "read_from": read_from,
                         "notice": note, "start_line": s}


def prune(messages: Sequence[Any], limits: Limits) -> PruneOutcome:
    """Cut tool outputs in place (callers pass copies). Artifacts are returned, not written."""
    out = PruneOutcome()
    exempt = _exempt_ids(messages, limits)
    trailing = 0
    for msg in reversed(messages):
        if not _has_result(msg):
            break
        trailing += 1
    split = max(0, len(messages) - max(trailing, limits.recent_n))
    old_limit = limits.recent_max_bytes if limits.scroll else limits.old_max_bytes
    for idx, msg in enumerate(messages):
        for block in blocks_of(msg):
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            limit = limits.recent_max_bytes if idx >= split or str(block.get("id")) in exempt else old_limit
            output = block.get("output")
            targets = ([("0", block, "output")] if isinstance(output, str) else
                       [(str(i), item, "text") for i, item in enumerate(output or [])
                        if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str)])
            for key, holder, field_name in targets:
                try:
                    new, meta = _cut(holder[field_name], limit, limits, out)
                except UnicodeEncodeError:
                    out.skipped.append("a tool output holds lone surrogates; left as is (repair the session first)")
                    continue
                if meta is None:
                    continue
                holder[field_name] = new
                md = block.setdefault("metadata", {}) if isinstance(block.get("metadata", {}), dict) else None
                if md is None:
                    continue
                trunc = md.setdefault("qwenpaw_truncation", {})
                if isinstance(trunc, dict):
                    trunc[key] = {**trunc.get(key, {}), **meta} if isinstance(trunc.get(key), dict) else meta
    return out


def notice_paths(messages: Sequence[Any]) -> list[str]:
    """Every artifact path named by a truncation notice or qwenpaw_truncation metadata in these messages."""
    paths: list[str] = []
    for msg in messages:
        for block in blocks_of(msg):
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            meta = block.get("metadata")
            trunc = meta.get("qwenpaw_truncation") if isinstance(meta, dict) else None
            for entry in trunc.values() if isinstance(trunc, dict) else []:
                if isinstance(entry, dict) and isinstance(entry.get("file_path"), str):
                    paths.append(entry["file_path"])
            output = block.get("output")
            texts = [output] if isinstance(output, str) else [str(i.get("text") or "") for i in output or []
                                                               if isinstance(i, dict)]
            for text in texts:
                if MARKER in text:
                    paths += _PATH_RE.findall(text.partition(MARKER)[2])
    return list(dict.fromkeys(paths))


def resolve_artifact(path: str, cache_dir: Path) -> Path | None:
    """The artifact on this machine: the path as written, else the same file name in the workspace's cache (the
    QwenPaw root may have moved, e.g. the corpus names /home/user/.qwenpaw). None when it is gone."""
    p = Path(path)
    if p.is_file():
        return p
    local = cache_dir / p.name
    return local if p.name and local.is_file() else None


def prune_limits_gen2(ws: Any, settings: Any, opts: Any, scroll_strategy: bool) -> Limits:
    """The limits from agent.json (`settings`) and the command's overrides (`opts`, a CompactOptions)."""
    from qwenmem.core.compaction.options import settings_dir

    return Limits(
        recent_n=opts.recent_n if opts.recent_n is not None else settings.pruning_recent_n,
        old_max_bytes=opts.old_max_bytes if opts.old_max_bytes is not None else settings.pruning_old_msg_max_bytes,
        recent_max_bytes=(opts.recent_max_bytes if opts.recent_max_bytes is not None
                          else settings.pruning_recent_msg_max_bytes),
        exempt_extensions=tuple(settings.exempt_file_extensions), exempt_tools=tuple(settings.exempt_tool_names),
        cache_dir=settings_dir(ws, settings.tool_results_cache), scroll=scroll_strategy)
