"""Finding the agent workspaces a fleet run covers, lazily, so 10,000 of them cost no more memory than ten.

An input is a QwenPaw root (every agent in it), an agent workspace, or a directory whose children are roots or
workspaces. A listing file holds one such path a line (`#` comments and blank lines are skipped).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from qwenmem.core.workspace import is_qwenpaw_root, looks_like_workspace, root_agent_ids, visible_subdirs


@dataclass(frozen=True)
class Target:
    """One agent workspace, named the way `qwenmem -w PATH --agent ID` names it, so a worker resolves it exactly as
    the single-workspace command would (config.json profiles, the secret dir, the timezone)."""

    path: str
    agent: str | None = None

    @property
    def label(self) -> str:
        return f"{self.path}#{self.agent}" if self.agent else self.path


def agents_of_root(root: Path) -> Iterator[Target]:
    agents = root_agent_ids(root)
    if not agents:  # a root with no agents: the legacy single-agent layout, resolved by discover_workspace
        yield Target(str(root))
    for agent in agents:
        yield Target(str(root), agent)


def expand(path: Path) -> Iterator[Target]:
    """The workspaces one input names. A path that is none of the three is yielded as is: its worker reports it."""
    if is_qwenpaw_root(path):
        yield from agents_of_root(path)
    elif looks_like_workspace(path) or not path.is_dir():
        yield Target(str(path))
    else:
        found = False
        for name in visible_subdirs(path):
            child = path / name
            if is_qwenpaw_root(child):
                found = True
                yield from agents_of_root(child)
            elif looks_like_workspace(child):
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
