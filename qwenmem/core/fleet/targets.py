"""Finding the agent workspaces a fleet run covers, lazily, so 10,000 of them cost no more memory than ten.

An input is a QwenPaw root (every agent in it), an agent workspace, or a directory whose children are roots or
workspaces. A listing file holds one such path a line (`#` comments and blank lines are skipped).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from qwenmem.core import confine
from qwenmem.core.workspace import WORKSPACE_MARKERS


@dataclass(frozen=True)
class Target:
    """One agent workspace, named the way `qwenmem -w PATH --agent ID` names it, so a worker resolves it exactly as
    the single-workspace command would (config.json profiles, the secret dir, the timezone)."""

    path: str
    agent: str | None = None

    @property
    def label(self) -> str:
        return f"{self.path}#{self.agent}" if self.agent else self.path


def _is_root(p: Path) -> bool:
    return (p / "workspaces").is_dir() or ((p / "config.json").is_file() and not (p / "agent.json").exists())


def _is_workspace(p: Path) -> bool:
    return any((p / marker).exists() for marker in WORKSPACE_MARKERS)


def _profile_agents(root: Path) -> list[str]:
    try:
        config = json.loads(confine.read_text(root / "config.json"))
    except (OSError, ValueError, RecursionError):
        return []  # the worker reports a malformed config.json for each agent it finds under workspaces/
    agents = config.get("agents") if isinstance(config, dict) else None
    profiles = agents.get("profiles") if isinstance(agents, dict) else None
    return [a for a in profiles if isinstance(a, str)] if isinstance(profiles, dict) else []


def _sorted_dirs(p: Path) -> list[str]:
    try:
        with os.scandir(p) as it:
            return sorted(e.name for e in it if not e.name.startswith(".") and e.is_dir())
    except OSError:
        return []


def agents_of_root(root: Path) -> Iterator[Target]:
    seen: set[str] = set()
    for agent in [*_profile_agents(root), *_sorted_dirs(root / "workspaces")]:
        if agent not in seen:
            seen.add(agent)
            yield Target(str(root), agent)
    if not seen:  # a root with no agents: the legacy single-agent layout, resolved by discover_workspace
        yield Target(str(root))


def expand(path: Path) -> Iterator[Target]:
    """The workspaces one input names. A path that is none of the three is yielded as is: its worker reports it."""
    if _is_root(path):
        yield from agents_of_root(path)
    elif _is_workspace(path) or not path.is_dir():
        yield Target(str(path))
    else:
        found = False
        for name in _sorted_dirs(path):
            child = path / name
            if _is_root(child):
                found = True
                yield from agents_of_root(child)
            elif _is_workspace(child):
                found = True
                yield Target(str(child))
        if not found:
            yield Target(str(path))


def listed_paths(stream: TextIO) -> Iterator[Path]:
    for line in stream:
        text = line.strip()
        if text and not text.startswith("#"):
            yield Path(text).expanduser()


def discover(inputs: Iterable[Path]) -> Iterator[Target]:
    for path in inputs:
        yield from expand(path.expanduser())
