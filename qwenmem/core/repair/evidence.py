"""Where else a lost conversation may survive: backup siblings, stale copies, earlier quarantine, dialog offloads."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal
from pathlib import Path

from qwenmem.core import confine
from qwenmem.core.errors import WorkspaceError
from qwenmem.core.fsio import iter_lines_bounded
from qwenmem.core.workspace import Workspace

MAX_EVIDENCE_BYTES = 256 * 1024 * 1024


EvidenceKind = Literal["backup", "copy", "quarantine", "dialog"]  # where an earlier copy of a session was found


@dataclass
class Evidence:
    path: str  # workspace-relative
    kind: EvidenceKind
    messages: int
    newest: str  # newest message timestamp
    usable: bool  # a session can be rebuilt from it (backup/copy/quarantine only)
    classes: list[str]


def _session_candidates(ws: Workspace, path: Path) -> list[tuple[Path, EvidenceKind]]:
    out: list[tuple[Path, EvidenceKind]] = []
    parent, name = path.parent, path.name
    try:
        for entry in sorted(os.scandir(parent), key=lambda e: e.name):
            if entry.is_file() and entry.name != name and entry.name.startswith(name) and (
                    ".backup" in entry.name[len(name):] or ".bak" in entry.name[len(name):]):
                out.append((Path(entry.path), "backup"))
    except OSError:
        pass
    # QwenPaw's flat → channel migration copies files and leaves the flat one behind
    if parent.resolve() != ws.sessions_dir.resolve():
        flat = ws.sessions_dir / name
        if flat.is_file():
            out.append((flat, "copy"))
    else:
        for sub in sorted(ws.sessions_dir.glob(f"*/{name}")):
            if sub.is_file():
                out.append((sub, "copy"))
    rel = ws.relative(path)
    quarantine = ws.data_dir / "quarantine"
    if quarantine.is_dir():
        for run in sorted(quarantine.iterdir(), reverse=True):
            cand = run / rel
            if cand.is_file():
                out.append((cand, "quarantine"))
    return out


def find_evidence(ws: Workspace, path: Path) -> list[Evidence]:
    from qwenmem.core.repair.diagnose import diagnose

    found: list[Evidence] = []
    for cand, kind in _session_candidates(ws, path):
        try:
            if cand.stat().st_size > MAX_EVIDENCE_BYTES:
                continue
            data = confine.read_bytes(cand)  # a backup linked out of the workspace is not evidence
        except (OSError, WorkspaceError):
            continue
        d = diagnose(data)
        usable = d.session is not None and not d.unrecoverable and (d.messages_intact > 0 or bool(d.session.summary))
        stamps: list[str] = [m["timestamp"] for m in (d.session.messages() if d.session else [])
                             if isinstance(m, dict) and isinstance(m.get("timestamp"), str)]
        newest = max(stamps, default="")
        found.append(Evidence(ws.relative(cand), kind, d.messages_intact, newest, usable, d.classes))
    found.extend(dialog_evidence(ws, path))
    return found


def dialog_evidence(ws: Workspace, path: Path, days: int = 3) -> list[Evidence]:
    """Offloaded messages from the days before the file was last written (shared by every session of the agent)."""
    if not ws.dialog_dir.is_dir():
        return []
    try:
        last = datetime.fromtimestamp(path.stat().st_mtime)
    except OSError:
        return []
    wanted = {(last - timedelta(days=k)).strftime("%Y-%m-%d") for k in range(days + 1)}
    out = []
    for f in sorted(ws.dialog_dir.glob("*.jsonl")):
        if f.stem in wanted:
            try:
                with confine.open_binary(f) as fh:  # streamed: dialog logs grow without bound
                    lines = sum(1 for line in iter_lines_bounded(fh) if line.strip())
            except (OSError, WorkspaceError):
                continue
            out.append(Evidence(ws.relative(f), "dialog", lines, f.stem, False, []))
    return out


def best_usable(evidence: list[Evidence]) -> Evidence | None:
    usable = [e for e in evidence if e.usable]
    return max(usable, key=lambda e: (e.newest, e.messages)) if usable else None
