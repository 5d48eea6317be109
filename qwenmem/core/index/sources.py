"""Which workspace files are indexed, and the text each contributes.

memory: MEMORY.md / memory.md and memory/*.md (memory/**/*.md with recursive) — what QwenPaw's watcher indexes.
  On a QwenPaw 2.x memory tree (core/memory_layout.py) as ReMe 0.4 does: memory/**/*.md and digest/**/*.md,
  recursively, up to 10 MiB a file, front matter kept out of the text and recorded as metadata
  (core/reme_index.py), plus MEMORY.md as core memory. mem_metadata/ (ReMe's index) is never read.
dialog: dialog/*.jsonl, one line of text per message line, so line numbers are the file's own.
sessions: session files, one line of text per message: "line" numbers are message numbers (1-based).
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal

from qwenmem.core.errors import UsageError, WorkspaceError
from qwenmem.core.fsio import read_with_snapshot
from qwenmem.core.reme_index import REME_MAX_FILE_BYTES, index_view
from qwenmem.core.surrogates import without_surrogates

if TYPE_CHECKING:  # pragma: no cover
    from qwenmem.core.workspace import Workspace

SOURCES = ("memory", "dialog", "sessions")
DATE_IN_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})")
# A memory file this large is not memory (a pasted dump, a runaway log): skipped with a notice, never loaded.
MAX_SOURCE_BYTES = 64 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192  # like git: a NUL byte near the start means binary


class SkippedSource(Exception):
    """A source file that is listed in the manifest (so it does not look stale) but not indexed, and why."""


SourceKind = Literal["memory", "dialog", "sessions"]  # which of the indexed areas a file belongs to


@dataclass
class SourceFile:
    path: Path
    rel: str
    kind: SourceKind
    size: int
    mtime_ns: int
    outside: bool = False  # reached through a symlink that leaves the workspace: listed, never read
    gen2: bool = False  # a QwenPaw 2.x memory file: front matter becomes metadata (read_source fills `meta`)
    meta: dict[str, Any] | None = None


def parse_sources(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return ["memory"]
    items = value.split(",") if isinstance(value, str) else list(value)
    chosen = [s.strip().lower() for s in items if s and s.strip()]
    if "all" in chosen:
        return list(SOURCES)
    bad = [s for s in chosen if s not in SOURCES]
    if bad:
        raise UsageError(f"unknown source {bad[0]!r}; choose from {', '.join(SOURCES)} or all")
    return [s for s in SOURCES if s in chosen] or ["memory"]


class _Found:
    """The files discover() has listed so far, keyed by workspace-relative path."""

    def __init__(self, ws: "Workspace") -> None:
        self.ws = ws
        self.files: dict[str, SourceFile] = {}
        self._seen_real: set[tuple[int, int]] = set()
        self._root = ws.path.resolve()
        self._dir_inside: dict[Path, bool] = {}

    def _inside(self, path: Path) -> bool:
        try:
            return path.resolve().is_relative_to(self._root)
        except (OSError, RuntimeError):  # a symlink loop
            return False

    def add(self, p: Path, kind: SourceKind, gen2: bool = False) -> None:
        # About one lstat per file (search runs this on every query to spot a stale index). Files are keyed by
        # inode, so MEMORY.md and memory.md on a case-insensitive filesystem, or a link to a file we index
        # anyway, count once. A link (of the file or of a directory above it) that leaves the workspace is
        # listed as outside: reindex names it and never reads it, as sessions and compaction do.
        try:
            st = p.lstat()
        except OSError:
            return
        if p.parent not in self._dir_inside:
            self._dir_inside[p.parent] = self._inside(p.parent)
        is_link = stat.S_ISLNK(st.st_mode)
        rel = p.relative_to(self.ws.path).as_posix()
        if not self._dir_inside[p.parent] or (is_link and not self._inside(p)):
            self.files[rel] = SourceFile(p, rel, kind, st.st_size, st.st_mtime_ns, outside=True, gen2=gen2)
            return
        if is_link:
            try:
                st = p.stat()
            except OSError:  # dangling
                return
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) in self._seen_real:
            return
        self._seen_real.add((st.st_dev, st.st_ino))
        self.files[rel] = SourceFile(p, rel, kind, st.st_size, st.st_mtime_ns, gen2=gen2)


def discover(ws: "Workspace", sources: list[str], recursive: bool) -> list[SourceFile]:
    found = _Found(ws)
    if "memory" in sources:
        _discover_memory(ws, found, recursive)
    if "dialog" in sources and ws.dialog_dir.is_dir():
        for p in sorted(ws.dialog_dir.glob("*.jsonl")):
            found.add(p, "dialog")
    if "sessions" in sources:
        from qwenmem.core.sessions import iter_session_files

        for p in iter_session_files(ws):
            found.add(p, "sessions")
    return [found.files[k] for k in sorted(found.files)]


def _discover_memory(ws: "Workspace", found: _Found, recursive: bool) -> None:
    from qwenmem.core.memory_layout import memory_layout

    layout = memory_layout(ws)
    for name in ("MEMORY.md", "memory.md"):
        found.add(ws.path / name, "memory", layout.is_gen2)
    folders = [(ws.path / layout.daily_dir, "**/*.md"), (ws.path / layout.digest_dir, "**/*.md")] \
        if layout.is_gen2 else [(ws.memory_dir, "**/*.md" if recursive else "*.md")]
    for folder, pattern in folders:
        if folder.is_symlink() and not found._inside(folder):  # `digest -> elsewhere`: listed once, never listed
            found.add(folder, "memory", layout.is_gen2)
            continue
        if folder.is_dir():
            for p in sorted(folder.glob(pattern)):
                if not any(part.startswith(".") for part in p.relative_to(folder).parts):
                    found.add(p, "memory", layout.is_gen2)
            if pattern.startswith("**"):  # the glob does not follow a linked `memory/<date>/`: name one leading out
                for link in _linked_dirs(folder):
                    found.add(link, "memory", layout.is_gen2)


def _linked_dirs(folder: Path) -> list[Path]:
    """Links to directories below `folder` (not followed: the recursive glob skips them), dot-paths excepted."""
    out: list[Path] = []
    for dirpath, dirnames, _ in os.walk(folder, followlinks=False):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        out.extend(Path(dirpath, d) for d in dirnames if os.path.islink(os.path.join(dirpath, d)))
    return sorted(out)


def outside_link_notice(path: Path, rel: str, outcome: str) -> str:
    """The one line for a path reached through a link out of the workspace, naming the link as `dream` does; the
    refusal is recorded (qwenmem.core.confine), so the command ends with exit UNSAFE_LINK."""
    from qwenmem.core.confine import check
    from qwenmem.core.errors import UnsafeLinkError

    try:
        check(path)
    except UnsafeLinkError as exc:
        return f"{rel}: {outcome} ({exc})"
    return f"{rel}: a symlink leading outside the workspace; {outcome}"


def read_source(src: SourceFile) -> tuple[str, str]:
    """(content sha256, text to index). Bad bytes and lone surrogates (JSON escapes in dialog and session messages)
    never stop indexing: they become U+FFFD. Raises SkippedSource for a file that is too large, binary or unreadable."""
    if src.outside:
        raise SkippedSource(outside_link_notice(src.path, src.rel, "not indexed"))
    limit = REME_MAX_FILE_BYTES if src.gen2 else MAX_SOURCE_BYTES  # ReMe 0.4 skips 2.x memory files over 10 MiB
    if src.size > limit:
        raise SkippedSource(f"{src.rel}: larger than the {limit // 2**20} MiB index limit; not indexed")
    try:  # the shared reader: refuses FIFOs and devices, and the limit again in case the file grew since discover
        data, snap = read_with_snapshot(src.path, limit)
    except WorkspaceError as exc:
        reason = str(exc).removeprefix(f"{src.path}: ")
        raise SkippedSource(f"{src.rel}: cannot be read ({reason}); not indexed") from None
    if src.kind != "sessions" and b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise SkippedSource(f"{src.rel}: looks binary (NUL bytes); not indexed")
    digest = snap.sha256
    text = data.decode("utf-8", "replace").removeprefix("\ufeff")
    if src.kind == "memory" and src.gen2:
        text, src.meta = index_view(src.rel, text)
        return digest, text
    if src.kind == "memory":
        return digest, text
    if src.kind == "dialog":
        return digest, without_surrogates("\n".join(_message_line(_json_or_none(line)) for line in text.split("\n")))
    from qwenmem.core.sessions import parse_session_bytes

    session, _, _ = parse_session_bytes(data)
    msgs = session.messages() if session else []
    return digest, without_surrogates("\n".join(_message_line(m) for m in msgs))


def _json_or_none(line: str) -> Any:
    try:
        return json.loads(line) if line.strip() else None
    except ValueError:
        return None


def _message_line(msg: Any) -> str:
    from qwenmem.core.sessions import message_text

    if not isinstance(msg, dict):
        return ""
    text = " ".join(message_text(msg).split())
    if not text:
        return ""
    who = msg.get("name") or msg.get("role") or "?"
    stamp = str(msg.get("timestamp") or "")[:16]
    return f"[{stamp}] {who}: {text}" if stamp else f"{who}: {text}"


def file_date(rel: str) -> str | None:
    """The daily-log date of a file (memory/2026-05-01.md, dialog/2026-05-01.jsonl), for --since/--until."""
    m = DATE_IN_NAME.search(Path(rel).name)
    return m.group(1) if m else None
