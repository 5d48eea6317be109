"""Shared helpers of the QwenPaw 2.x tests: the generated 2.x corpus and the fixture builder."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from helpers import SHARED

GEN2_CORPUS = SHARED / "corpus" / "generated" / "qwenpaw-2.2.2"
GEN2_WS = GEN2_CORPUS / "root" / "workspaces" / "default"
# skips without ../shared, fails under QWENMEM_REQUIRE_SHARED=1 (tests/conftest.py)
needs_gen2_corpus = pytest.mark.needs_shared(GEN2_WS)
sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "qwenpaw2"))

import builder  # noqa: E402  (tests/fixtures/qwenpaw2/builder.py)


def corpus_session_files() -> list[Path]:
    if not GEN2_WS.is_dir():
        return []
    return sorted(p for p in (GEN2_WS / "sessions").rglob("*.json") if not p.name.startswith("."))


def copy_corpus(dest: Path) -> Path:
    """A writable copy of the generated root (+ its secret dir as `<root>.secret`), so opening history.db never
    touches the shared corpus's -shm. Returns the agent workspace."""
    root = dest / "root"
    shutil.copytree(GEN2_CORPUS / "root", root)
    shutil.copytree(GEN2_CORPUS / "secret", dest / "root.secret")
    for base, dirs, files in os.walk(dest):
        for name in dirs + files:
            p = Path(base) / name
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    dest.chmod(dest.stat().st_mode | stat.S_IWUSR)
    return root / "workspaces" / "default"


def name_agent_as_the_generator(ws: Path) -> None:
    """The corpus's agent ran as "QwenPaw" (the name on its replies) while agent.json says "Default": QwenPaw's
    AgentBuilder names the agent from agent.json, so a test replaying the corpus's own compaction sets that name."""
    import json

    path = ws / "agent.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["name"] = "QwenPaw"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


__all__ = ["name_agent_as_the_generator", "GEN2_CORPUS", "GEN2_WS", "builder", "copy_corpus", "corpus_session_files", "needs_gen2_corpus"]
