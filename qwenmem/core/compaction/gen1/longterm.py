"""Tier 3: a note about what was compacted, merged into the day's log memory/YYYY-MM-DD.md.

The date is today in the user's timezone (config.json user_timezone), as QwenPaw names daily logs. The note is
appended under its own heading between marker comments (invisible when the Markdown is rendered): the opening one
carries the session key and the id range of the compacted messages, so a rerun (for example after a crash) never
adds it twice; the closing one, END_MARKER, tells `dream` where qwenmem's note ends and the user's log resumes
(a note is a restated conversation, never promoted to MEMORY.md). Existing files are changed only
through safety.replace_preserving (original bytes kept under .qwenmem/backups/).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from qwenmem.core.errors import UnsafePathError, WorkspaceError
from qwenmem.core.fsio import read_with_snapshot, snapshot
from qwenmem.core.safety import replace_preserving
from qwenmem.core.workspace import Workspace


END_MARKER = "<!-- /qwenmem:compact -->"


def marker(session_key: str, first_id: str, last_id: str, count: int) -> str:
    safe = re.sub(r"-->|\s", "_", session_key)
    return f"<!-- qwenmem:compact session={safe} first={first_id} last={last_id} count={count} -->"


@dataclass
class DailyNote:
    path: Path
    marker: str
    text: str  # the block to append ("" when nothing is worth keeping)
    duplicate: bool = False


MAX_NOTE_FILE_BYTES = 64 * 1024 * 1024


def plan_note(ws: Workspace, now: datetime, session_key: str, first_id: str, last_id: str, count: int,
              body: str) -> DailyNote:
    path = ws.memory_dir / f"{now.strftime('%Y-%m-%d')}.md"
    try:  # like dialog/ and tool_results/: never write through a link that leaves the workspace
        ws.resolve_inside(path)
    except UnsafePathError:
        raise WorkspaceError(f"{path} leads outside the workspace (a symlinked memory/?); qwenmem will not write "
                             "there: run with --no-longterm to skip the daily-log note") from None
    mark = marker(session_key, first_id, last_id, count)
    try:  # appending rewrites (and backs up) the whole file: a huge one is refused here, before any write
        existing = read_with_snapshot(path, MAX_NOTE_FILE_BYTES)[0].decode("utf-8", "replace") if path.exists() else ""
    except WorkspaceError as exc:
        raise WorkspaceError(f"{exc}; run with --no-longterm to skip the daily-log note") from None
    if mark in existing:
        return DailyNote(path, mark, "", duplicate=True)
    if not body.strip():
        return DailyNote(path, mark, "")
    block = (f"## Compacted conversation {session_key} ({now.strftime('%H:%M')})\n{mark}\n\n{body.strip()}\n\n"
             f"{END_MARKER}\n")  # the blank line: a comment right after a list item would continue that item
    return DailyNote(path, mark, block)


def write_note(ws: Workspace, note: DailyNote, stamp: str) -> Path | None:
    """Append the note; returns where the previous version of the file was kept (None for a new file)."""
    if not note.text:
        return None
    if note.path.exists():
        data, snap = read_with_snapshot(note.path)
        text = data.decode("utf-8", "surrogateescape")
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        new = (text + sep + note.text).encode("utf-8", "surrogateescape")
        return replace_preserving(ws, note.path, new, snap, area="backups", stamp=stamp)
    title = f"# {note.path.stem}\n\n"
    replace_preserving(ws, note.path, (title + note.text).encode("utf-8"), snapshot(note.path), area="backups",
                       stamp=stamp)
    return None
