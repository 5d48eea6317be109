"""Helpers for the dream tests: the fixture MEMORY.md files (Chinese, English, mixed; tests/fixtures/memory/) in
throwaway workspaces, and tree snapshots."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from helpers import FIXTURES

MEMORY_SETS = FIXTURES / "memory"
REAL_MEMORY = {
    # fixture set → the daily log that sits next to its MEMORY.md
    "zh": "2026-02-19",  # Chinese, a footer, a log with no fact headings
    "mixed": "2026-04-04",  # Chinese + English
    "en": "2026-02-21",  # English, front matter, a table, a code block; the log ends with "### Key Decisions:"
}


def real_workspace(tmp_path: Path, name: str) -> Path:
    src = MEMORY_SETS / name
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
