"""Which generation a workspace's long-term memory is, and where ReMe 0.4 keeps it (files only, nothing written).

2.x (qwenpaw2-workspace.md §7.2 rule 1, §5): any 2.x workspace marker (history.db, sessions/.synced.json,
mem_metadata/, mem_session/ — the same list the session layer uses), or the memory tree itself: a dated note
folder memory/<YYYY-MM-DD>/ or a digest/ folder. Otherwise 1.x: MEMORY.md plus memory/*.md daily logs.
A 1.x tree upgraded in place is 2.x: its old daily logs are still indexed by ReMe, so the 2.x scope covers them.

The note and digest folders are ReMe's `daily_dir` and `digest_dir` (agent.json
running.reme_light_memory_config, default memory/ and digest/); a configured folder that leaves the workspace
is ignored with a note, as qwenmem never indexes outside it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from qwenmem.core.workspace import Workspace

GEN1, GEN2 = "1.x", "2.x"
DATED = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# §7.2 rule 1. Kept in step with settings.gen2.GEN2_MARKERS (a test checks), without importing the session layer.
GEN2_MARKERS = ("history.db", "sessions/.synced.json", "mem_metadata", "mem_session")
METADATA_DIR = "mem_metadata"  # ReMe 0.4's index: never read or written by qwenmem (like 1.x file_store/)


@dataclass(frozen=True)
class MemoryLayout:
    generation: str  # 1.x | 2.x
    daily_dir: str = "memory"
    digest_dir: str = "digest"
    reasons: tuple[str, ...] = ()  # the evidence, for `info` and notices
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_gen2(self) -> bool:
        return self.generation == GEN2


def _plain_relative(value: object) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    p = PurePosixPath(value.strip().replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts or not p.parts:
        return None
    return p.as_posix()


def _reme_dirs(ws: Workspace, agent_doc: dict[str, object] | None, notes: list[str]) -> tuple[str, str]:
    doc = agent_doc
    if doc is None:
        from qwenmem.core.errors import QwenmemError
        from qwenmem.core.workspace import read_json_file

        doc = {}
        if (ws.path / "agent.json").is_file():
            try:
                loaded = read_json_file(ws.path / "agent.json")
                doc = loaded if isinstance(loaded, dict) else {}
            except QwenmemError:  # settings.py reports a malformed agent.json; the defaults do here
                doc = {}
    running = doc.get("running")
    cfg = running.get("reme_light_memory_config") if isinstance(running, dict) else None
    cfg = cfg if isinstance(cfg, dict) else {}
    out: list[str] = []
    for key, default in (("daily_dir", "memory"), ("digest_dir", "digest")):
        raw = cfg.get(key)
        chosen = _plain_relative(raw)
        if raw is not None and chosen is None:
            notes.append(f"agent.json reme_light_memory_config.{key} {raw!r} is not a folder inside the workspace; "
                         f"using {default}/")
        out.append(chosen or default)
    return out[0], out[1]


def _has_dated_folder(path: Path) -> bool:
    try:
        with os.scandir(path) as it:
            return any(DATED.match(e.name) and e.is_dir(follow_symlinks=False) for e in it)
    except OSError:
        return False


def memory_layout(ws: Workspace, agent_doc: dict[str, object] | None = None) -> MemoryLayout:
    notes: list[str] = []
    daily, digest = _reme_dirs(ws, agent_doc, notes)
    reasons = [m + ("/" if "." not in m.rsplit("/", 1)[-1] else "") for m in GEN2_MARKERS
               if os.path.lexists(ws.path / m)]
    if _has_dated_folder(ws.path / daily):
        reasons.append(f"{daily}/<date>/ note folders")
    if os.path.isdir(ws.path / digest):
        reasons.append(f"{digest}/")
    return MemoryLayout(GEN2 if reasons else GEN1, daily, digest, tuple(reasons), tuple(notes))
