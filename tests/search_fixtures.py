"""Helpers shared by the index/search tests (not fixtures: plain functions)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from qwenmem.core.settings import load_settings
from qwenmem.core.workspace import discover_workspace


def open_ws(path: Path):
    ws = discover_workspace(path)
    return ws, load_settings(ws)


def tree_digest(root: Path, skip: str = ".qwenmem") -> dict[str, str]:
    """sha256 of every workspace file outside qwenmem's own data dir."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and skip not in p.relative_to(root).parts}


def long_daily_log(n_lines: int = 60) -> str:
    topics = ["deploy", "database", "invoice", "holiday", "kubernetes", "garden", "piano", "budget"]
    return "\n".join(f"- {i:03d} note about {topics[i % len(topics)]} and the follow-up number {i * 7}"
                     for i in range(n_lines)) + "\n"
