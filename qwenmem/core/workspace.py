"""Finding the workspace, and keeping every path we touch inside it.

Precedence (tests/core/test_workspace.py pins it):
  1. --workspace/-w DIR
  2. $QWENMEM_WORKSPACE
  3. QwenPaw's own root: $QWENPAW_WORKING_DIR, then $COPAW_WORKING_DIR, then ~/.copaw if it exists, else ~/.qwenpaw

A directory given by 1 or 2 may itself be an agent workspace (it has sessions/, MEMORY.md, memory/ or
agent.json) or a QwenPaw root (it has config.json or workspaces/). Within a root, --agent ID picks
workspaces/<id>/ through config.json (agents.profiles[id].workspace_dir), else agents.active_agent, else
"default"; a root with no workspaces/ is the legacy single-agent layout and is used as-is.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from qwenmem.core import confine
from qwenmem.core.errors import ConfigError, UnsafePathError, WorkspaceError
from qwenmem.core.jsonsafe import loads_config

WORKSPACE_MARKERS = ("sessions", "MEMORY.md", "memory.md", "memory", "agent.json", "dialog", "chats.json")


@dataclass(frozen=True)
class Workspace:
    """One agent workspace: the directory that holds sessions/, MEMORY.md, memory/ and agent.json."""

    path: Path
    root: Path
    agent_id: str | None
    source: str  # how it was found, for `qwenmem info`
    notes: tuple[str, ...] = field(default_factory=tuple)
    notices: tuple[str, ...] = field(default_factory=tuple)  # worth a line on stderr for every command (a moved root)

    def __post_init__(self) -> None:
        confine.register_root(self.path)  # every later open under it is confined to it (qwenmem.core.confine)

    @property
    def sessions_dir(self) -> Path:
        return self.path / "sessions"

    @property
    def memory_dir(self) -> Path:
        return self.path / "memory"

    @property
    def memory_md(self) -> Path:
        return self.path / "MEMORY.md"

    @property
    def dialog_dir(self) -> Path:
        return self.path / "dialog"

    @property
    def backup_dir(self) -> Path:
        return self.path / "backup"

    @property
    def data_dir(self) -> Path:
        """qwenmem's own data (quarantine, index, logs, lock). Never QwenPaw's file_store/."""
        return self.path / ".qwenmem"

    @property
    def lock_path(self) -> Path:
        return self.data_dir / "lock"

    def resolve_inside(self, candidate: str | os.PathLike[str]) -> Path:
        return resolve_inside(self.path, candidate)

    def relative(self, p: Path) -> str:
        try:
            return Path(p).resolve().relative_to(self.path.resolve()).as_posix()
        except ValueError:
            return str(p)


def resolve_inside(base: Path, candidate: str | os.PathLike[str]) -> Path:
    """Resolve `candidate` (relative to `base`, or absolute) and refuse anything that leaves `base`.

    Symlinks are followed before the check, so a link that points outside the workspace is refused too.
    """
    base_real = Path(base).resolve()
    raw = Path(candidate)
    joined = raw if raw.is_absolute() else base_real / raw
    try:
        real = joined.resolve()
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError for a symlink loop (sessions/loop.json)
        raise UnsafePathError(f"{candidate}: a symlink loop; not followed") from None
    if real != base_real and base_real not in real.parents:
        raise UnsafePathError(f"{candidate}: resolves to {real}, outside the workspace {base_real}")
    return real


def qwenpaw_root(env: Mapping[str, str], home: Path) -> tuple[Path, str]:
    for var in ("QWENPAW_WORKING_DIR", "COPAW_WORKING_DIR"):
        if env.get(var):
            return Path(env[var]).expanduser(), f"${var}"
    legacy = home / ".copaw"
    if legacy.is_dir():
        return legacy, "~/.copaw (legacy CoPaw root)"
    return home / ".qwenpaw", "~/.qwenpaw (QwenPaw default)"


MAX_CONFIG_BYTES = 64 * 1024 * 1024


def _probe(check: Callable[[Path], bool], path: str | os.PathLike[str]) -> bool:
    """A file test on a path that came from a config file: one too long for the file system (ENAMETOOLONG), with a
    NUL byte or otherwise unusable is simply not there."""
    try:
        return check(Path(path))
    except (OSError, ValueError):
        return False


def path_exists(path: str | os.PathLike[str]) -> bool:
    return _probe(Path.exists, path)


def is_dir(path: str | os.PathLike[str]) -> bool:
    return _probe(Path.is_dir, path)


def is_file(path: str | os.PathLike[str]) -> bool:
    return _probe(Path.is_file, path)


def dict_at(doc: Mapping[str, Any], key: str) -> dict[str, Any]:
    """doc[key] when it is an object, else an empty dict (a config value of the wrong type is ignored)."""
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def read_json_file(path: Path) -> object:
    """Parse a JSON config file; a malformed one is a ConfigError naming the file, line and column."""
    try:
        from qwenmem.core.confine import open_binary

        with open_binary(path) as fh:  # a regular file only: a FIFO named agent.json must not hang a fleet worker
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_CONFIG_BYTES:  # a config file is kilobytes; never pull a 1 GB one into memory
                raise ConfigError(path, f"{size} bytes is over the {MAX_CONFIG_BYTES}-byte limit for a config file")
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, f"not valid UTF-8 at byte {exc.start}") from None
    try:
        return loads_config(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(path, exc.msg, exc.lineno, exc.colno) from None
    except RecursionError:
        raise ConfigError(path, "JSON nested too deeply to parse") from None


def read_config_if_present(path: Path) -> object | None:
    """read_json_file, or None when nothing at all is at `path`. Anything else that is there (a FIFO, a directory,
    a dangling link) is a ConfigError naming it: a config file that cannot be read must not turn silently into
    QwenPaw's defaults, which would change every threshold the commands decide by."""
    if not os.path.lexists(path):
        return None
    return read_json_file(path)


def looks_like_workspace(p: Path) -> bool:
    """An agent's directory: one of the files or folders QwenPaw keeps there exists."""
    return any((p / marker).exists() for marker in WORKSPACE_MARKERS)


def is_qwenpaw_root(p: Path) -> bool:
    """A QwenPaw root (it has workspaces/, or a config.json that is no agent's), not one agent's directory."""
    return (p / "workspaces").is_dir() or ((p / "config.json").is_file() and not (p / "agent.json").exists())


def visible_subdirs(p: Path) -> list[str]:
    """The names of p's directories, sorted, dot-folders left out; none for a directory that cannot be listed."""
    try:
        with os.scandir(p) as it:
            return sorted(e.name for e in it if not e.name.startswith(".") and e.is_dir())
    except OSError:
        return []


def _profile_agents(root: Path) -> list[str]:
    try:
        config = json.loads(confine.read_text(root / "config.json"))
    except (OSError, ValueError, RecursionError):
        return []  # each agent's own check reports a malformed config.json for the agents found under workspaces/
    agents = config.get("agents") if isinstance(config, dict) else None
    profiles = agents.get("profiles") if isinstance(agents, dict) else None
    return [a for a in profiles if isinstance(a, str)] if isinstance(profiles, dict) else []


def root_agent_ids(root: Path) -> list[str]:
    """Every agent of a root, as `--agent` names it: config.json's profiles, then workspaces/<id>/ folders no
    profile names. None: the legacy single-agent layout, which discover_workspace resolves without an id."""
    seen: dict[str, None] = {}
    for agent in [*_profile_agents(root), *visible_subdirs(root / "workspaces")]:
        seen.setdefault(agent)
    return list(seen)


def _plain_id(agent: str) -> bool:
    return bool(agent.strip()) and agent not in (".", "..") and "/" not in agent and os.sep not in agent \
        and "\x00" not in agent


MOVED_ROOT = "notice: "


def _select_agent(root: Path, agent: str | None) -> tuple[Path, str | None, list[str]]:
    notes: list[str] = []
    if agent is not None and not _plain_id(agent):
        raise UnsafePathError(f"--agent {agent!r}: an agent id is a plain name (see workspaces/ or config.json)")
    config_path = root / "config.json"
    config: dict[str, Any] = {}
    if config_path.is_file():
        loaded = read_json_file(config_path)
        config = loaded if isinstance(loaded, dict) else {}
    agents = dict_at(config, "agents")
    profiles = dict_at(agents, "profiles")
    active = agents.get("active_agent")
    active = active if isinstance(active, str) and _plain_id(active) else None  # a list, or "../x", is ignored
    chosen = agent or active or ("default" if (root / "workspaces").is_dir() else None)
    if chosen is None:
        return root, None, ["legacy single-agent layout (no workspaces/)"]
    profile = profiles.get(chosen) if isinstance(profiles.get(chosen), dict) else None
    candidate = root / "workspaces" / chosen
    if profile and profile.get("workspace_dir"):
        key = f"config.json agents.profiles.{chosen}.workspace_dir"
        wdir = Path(str(profile["workspace_dir"])).expanduser()
        if not wdir.is_absolute():
            wdir = root / wdir
        if not path_exists(wdir) and is_dir(candidate):
            # a copied or moved root keeps the absolute workspace_dir of the machine that wrote config.json
            notes.append(f"{MOVED_ROOT}{key} names {wdir}, which does not exist; using workspaces/{chosen} beside "
                         "config.json (a copied or moved root)")
            return candidate, chosen, notes
        notes.append(f"agent {chosen!r} from {key}")
        return wdir, chosen, notes
    if is_dir(candidate):
        notes.append(f"agent {chosen!r} at workspaces/{chosen}")
        return candidate, chosen, notes
    if agent:
        known = sorted(set(profiles) | {p.name for p in (root / "workspaces").glob("*") if p.is_dir()})
        hint = f"; known agents: {', '.join(known)}" if known else ""
        raise WorkspaceError(f"agent {agent!r} not found under {root}{hint}")
    if chosen != "default" and (root / "workspaces" / "default").is_dir():
        return root / "workspaces" / "default", "default", [
            f"config.json active_agent {chosen!r} has no workspace; using workspaces/default"]
    return root, None, ["legacy single-agent layout"]


def discover_workspace(
    workspace: str | os.PathLike[str] | None = None,
    agent: str | None = None,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Workspace:
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    if workspace is not None:
        base, source = Path(workspace).expanduser(), "--workspace"
    elif env.get("QWENMEM_WORKSPACE"):
        base, source = Path(env["QWENMEM_WORKSPACE"]).expanduser(), "$QWENMEM_WORKSPACE"
    else:
        base, source = qwenpaw_root(env, home)
    if not base.exists():
        raise WorkspaceError(f"workspace {base} does not exist (from {source})")
    if not base.is_dir():
        raise WorkspaceError(f"workspace {base} is not a directory (from {source})")
    if not os.access(base, os.R_OK | os.X_OK):
        raise WorkspaceError(f"workspace {base} is not readable (from {source})")
    if agent is None and looks_like_workspace(base) and not (base / "workspaces").is_dir():
        return _direct_workspace(base, source)
    if is_qwenpaw_root(base) or agent is not None:
        path, agent_id, notes = _select_agent(base, agent)
        if not is_dir(path):
            origin = next((n.split(" from ", 1)[1] for n in notes if " from config.json " in n), source)
            raise WorkspaceError(f"agent workspace {path} does not exist (from {origin})")
        return Workspace(path.resolve(), base.resolve(), agent_id, source, tuple(n.removeprefix(MOVED_ROOT) for n in notes),
                         tuple(n.removeprefix(MOVED_ROOT) for n in notes if n.startswith(MOVED_ROOT)))
    if not looks_like_workspace(base):
        raise WorkspaceError(
            f"{base} (from {source}) is not a QwenPaw workspace: none of {', '.join(WORKSPACE_MARKERS)} found"
        )
    return _direct_workspace(base, source)


def _direct_workspace(base: Path, source: str) -> Workspace:
    """An agent directory named directly. If it sits at <root>/workspaces/<id>/ under a QwenPaw root (config.json),
    that root still supplies config.json (user_timezone) and the secret dir, as when the root itself is named."""
    path = base.resolve()
    parent = path.parent
    if parent.name == "workspaces" and (parent.parent / "config.json").is_file():
        return Workspace(path, parent.parent, path.name, source, (f"agent {path.name!r} of the QwenPaw root {parent.parent}",))
    return Workspace(path, path, None, source)
