"""`qwenmem __complete agents|sessions [-w DIR] [--agent ID] [--like WORD]`: the dynamic words of the shell
completions (`--like`: the word being completed; a session's shortened form or substring completes to its key).

Hidden, and dispatched by qwenmem.cli.app.main before Typer parses anything: a <TAB> must answer in a blink, so
this imports only the workspace and session-listing code (no rich tables, index or model code). It
prints one word per line and never fails: a workspace that cannot be found completes to nothing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

KINDS = ("agents", "sessions")


def _context(args: list[str]) -> tuple[str | None, str | None]:
    workspace = agent = None
    for i, arg in enumerate(args[:-1]):
        if arg in ("-w", "--workspace"):
            workspace = args[i + 1]
        elif arg == "--agent":
            agent = args[i + 1]
    for arg in args:
        if arg.startswith("--workspace="):
            workspace = arg.partition("=")[2]
        elif arg.startswith("--agent="):
            agent = arg.partition("=")[2]
    return workspace, agent


def agent_ids(workspace: str | None) -> list[str]:
    """The agents of the QwenPaw root named (or found the usual way): config.json profiles and workspaces/*."""
    from qwenmem.core.workspace import qwenpaw_root, read_json_file

    if workspace is not None:
        root = Path(workspace).expanduser()
    elif os.environ.get("QWENMEM_WORKSPACE"):
        root = Path(os.environ["QWENMEM_WORKSPACE"]).expanduser()
    else:
        root = qwenpaw_root(os.environ, Path.home())[0]
    if root.parent.name == "workspaces" and not (root / "workspaces").is_dir():
        root = root.parent.parent  # an agent directory: offer its siblings
    ids = {p.name for p in (root / "workspaces").glob("*") if p.is_dir()} if (root / "workspaces").is_dir() else set()
    config = root / "config.json"
    if config.is_file():
        try:
            doc = read_json_file(config)
        except Exception:  # noqa: BLE001 - a broken config.json completes to what the directories say
            doc = {}
        agents = doc.get("agents") if isinstance(doc, dict) else None
        profiles = agents.get("profiles") if isinstance(agents, dict) else None
        if isinstance(profiles, dict):
            ids |= {k for k in profiles if isinstance(k, str) and k and "/" not in k and not k.startswith(".")}
    return sorted(ids)


def session_keys(workspace: str | None, agent: str | None) -> list[str]:
    from qwenmem.core.sessions import iter_session_files
    from qwenmem.core.workspace import discover_workspace

    ws = discover_workspace(workspace, agent)
    sessions = ws.sessions_dir
    return sorted(p.relative_to(sessions).as_posix().removesuffix(".json") for p in iter_session_files(ws))


def _like(args: list[str]) -> str | None:
    """The word being completed (`--like WORD`, last wins)."""
    found = None
    for i, arg in enumerate(args[:-1]):
        if arg == "--like":
            found = args[i + 1]
    return found


def narrowed(keys: list[str], like: str | None) -> list[str]:
    """The keys the shell offers for `like`: those it starts; else, as `sessions show` accepts them, the keys its
    shortened form (`ou_9756…6fb98df9`) or a substring names (the shell then replaces the word with one)."""
    if not like:
        return keys
    from qwenmem.core.session_names import loose_matches

    return [k for k in keys if k.startswith(like)] or loose_matches(keys, like)


def main(args: list[str]) -> int:
    if not args or args[0] not in KINDS:
        sys.stderr.write(f"usage: qwenmem __complete {{{','.join(KINDS)}}} [-w DIR] [--agent ID] [--like WORD]\n")
        return 2
    workspace, agent = _context(args[1:])
    try:
        words = agent_ids(workspace) if args[0] == "agents" else narrowed(session_keys(workspace, agent),
                                                                          _like(args[1:]))
    except Exception:  # noqa: BLE001 - completion must never print a traceback into the user's prompt
        words = []
    sys.stdout.write("".join(f"{w}\n" for w in words if w and not any(c.isspace() for c in w)))
    return 0
