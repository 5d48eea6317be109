"""Helpers for the dream tests: real corpus MEMORY.md files in throwaway workspaces, and tree snapshots."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from conftest import CORPUS_REAL

REAL_MEMORY = {
    # corpus directory → the daily log that sits next to its MEMORY.md
    "DrifterM__swqhyjs__fda458a": "2026-03-12",
    "zzjmay123__aiWorkflow__fb53935": "2026-04-04",
    "agentemateofg__digital-brain__4af1256": "2026-03-13",
}


def real_workspace(tmp_path: Path, name: str) -> Path:
    src = CORPUS_REAL / name
    ws = tmp_path / name
    (ws / "memory").mkdir(parents=True)
    shutil.copy2(src / "MEMORY.md", ws / "MEMORY.md")
    day = REAL_MEMORY[name]
    shutil.copy2(src / "memory" / f"{day}.md", ws / "memory" / f"{day}.md")
    return ws


def tree(root: Path) -> dict[str, str]:
    """Every file under root (relative path → sha256), to prove what a command did and did not touch.

    qwenmem's own lock file is left out: taking the lock creates it, which is not a change to the workspace.
    """
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.relative_to(root).as_posix() != ".qwenmem/lock"}


def protected_blocks(text: str) -> list[str]:
    """Code fences and table rows, in order: what a dream must never change."""
    out, fence = [], None
    for line in text.splitlines():
        stripped = line.strip()
        if fence:
            out.append(line)
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            out.append(line)
        elif stripped.startswith("|"):
            out.append(line)
    return out
