"""A 1.x workspace's record as the upgrade reads it: every session file with its marks and summary, and the
messages 1.x compaction moved to dialog/*.jsonl (spec qwenpaw-workspace.md §2.5, §3).

dialog/ lines name no session (1.x appends every session's offloads to one file per date), so a line is the
session's only when its id is in that session's file; every other line is kept under its own history.db session
`dialog:<date>` of the same agent, where QwenPaw's history search (scoped to the agent, across its sessions) finds it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qwenmem.core.fsio import Snapshot, iter_lines_bounded, read_with_snapshot
from qwenmem.core.errors import WorkspaceError
from qwenmem.core.sessions import SessionRef, iter_session_refs, parse_any_session
from qwenmem.core.workspace import Workspace

DIALOG_PREFIX = "dialog:"
GEN1, GEN2, DAMAGED = "1.x", "2.x", "damaged"


@dataclass
class Item:
    payload: dict[str, Any]
    compressed: bool


@dataclass
class SessionSource:
    ref: SessionRef
    kind: str  # GEN1 | GEN2 (already upgraded: left alone) | DAMAGED (repair first)
    data: bytes = b""
    snap: Snapshot | None = None
    doc: dict[str, Any] = field(default_factory=dict)
    items: list[Item] = field(default_factory=list)
    summary: str = ""
    problem: str = ""

    @property
    def compressed(self) -> int:
        return sum(1 for i in self.items if i.compressed)


@dataclass
class DialogSource:
    path: Path
    session_id: str  # dialog:<date>
    messages: list[dict[str, Any]]
    unreadable_lines: int = 0


def _gen1_items(memory: dict[str, Any]) -> list[Item]:
    out = []
    for item in memory.get("content") or []:
        payload, marks = (item[0], item[1]) if isinstance(item, (list, tuple)) and len(item) == 2 else (item, [])
        if isinstance(payload, dict):  # parse_legacy_memory_state skips anything else
            out.append(Item(payload, isinstance(marks, list) and "compressed" in marks))
    return out


def read_session(ref: SessionRef) -> SessionSource:
    try:
        data, snap = read_with_snapshot(ref.path)
    except WorkspaceError as exc:
        return SessionSource(ref, DAMAGED, problem=str(exc))
    parsed = parse_any_session(data)
    if parsed.gen2_doc is not None and not parsed.corrupt:
        return SessionSource(ref, GEN2, data, snap, parsed.gen2_doc)
    if parsed.corrupt or parsed.session is None or any("lone surrogate" in p for p in parsed.problems):
        why = "; ".join(parsed.problems[:2]) or "not a session document"
        return SessionSource(ref, DAMAGED, data, snap, problem=f"damaged ({why}); run `qwenmem sessions repair` first")
    memory = parsed.session.memory
    summary = memory.get("_compressed_summary")
    return SessionSource(ref, GEN1, data, snap, parsed.session.doc, _gen1_items(memory),
                         summary if isinstance(summary, str) else "")


def read_sessions(ws: Workspace) -> list[SessionSource]:
    return [read_session(ref) for ref in iter_session_refs(ws) if not ref.stale_flat_copy and not
            ref.outside_workspace]


def read_dialog(ws: Workspace, known_ids: set[str]) -> list[DialogSource]:
    """Every dialog/*.jsonl line not already in a session file, oldest file first."""
    directory = ws.dialog_dir
    if not directory.is_dir():
        return []
    out = []
    for path in sorted(directory.glob("*.jsonl")):
        messages: list[dict[str, Any]] = []
        bad = 0
        seen: set[str] = set()
        with open(path, "rb") as fh:
            for line in iter_lines_bounded(fh):
                try:
                    msg = json.loads(line.decode("utf-8", "surrogatepass"))
                except (ValueError, UnicodeDecodeError):
                    bad += bool(line.strip())
                    continue
                if not isinstance(msg, dict):
                    bad += 1
                    continue
                mid = msg.get("id")
                if isinstance(mid, str) and (mid in known_ids or mid in seen):
                    continue  # the session file still has it, or 1.x offloaded it twice (spec §8 item 8)
                if isinstance(mid, str):
                    seen.add(mid)
                messages.append(msg)
        if messages or bad:
            out.append(DialogSource(path, DIALOG_PREFIX + path.stem, messages, bad))
    return out
