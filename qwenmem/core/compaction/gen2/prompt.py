"""What a 2.x session file does not store but AgentScope counts: the system prompt and the tool schemas, rebuilt the
way QwenPaw 2.x builds them for a request (spec qwenpaw2-workspace.md §1.3, §4.2).

System prompt (runtime/prompt_contributors.py and runtime/builder.py @2.2.2.post1): QwenPaw's contributors joined by
a blank line, in priority order (protected execution contract; the workspace's `system_prompt_files`, each as
`# NAME` + its text, AGENTS.md without its memory section and, unless heartbeat is on, its heartbeat section;
the directory block; the scroll guidance under scroll; the environment block), then AgentScope's skill list and
ReMe's memory guidance. Only the prompt files and the paths, ids and model name inside the directory and
environment blocks depend on the workspace and the session: qwenmem rebuilds those, and takes the rest as the byte
count `bench/peer/qwenpaw2_fixed_parts.py` measured from QwenPaw's own code (gen2.qwenpaw_measured, with the
versions named).

Tool schemas: the built-ins agent.json's `tools.builtin_tools` enables (else the registry's default), less those a
mode gates (coding), plus the agent's own (the Skill viewer, ReMe's memory_search, scroll's recall_history), each
at its measured `json.dumps` size; MCP tools need a live server, so an enabled MCP client is named as not counted.
"""

from __future__ import annotations

import json
import os
import platform
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from qwenmem.core import confine
from qwenmem.core.compaction.gen2 import qwenpaw_measured as measured
from qwenmem.core.compaction.gen2.tokens import ZERO, Size, text_bytes
from qwenmem.core.workspace import Workspace, read_json_file

DEFAULT_PROMPT_FILES = ("AGENTS.md", "SOUL.md", "PROFILE.md")  # prompt_contributors.py L37 @2.2.2.post1
PROMPT_SEPARATOR = "\n\n"  # runtime/prompt_manager.py L23
_HEARTBEAT = re.compile(r"<!-- heartbeat:start -->.*?<!-- heartbeat:end -->", re.S)
_MEMORY = re.compile(r"<!-- memory:start -->.*?<!-- memory:end -->", re.S)
ASSUMES = f"QwenPaw {measured.QWENPAW_VERSION} (agentscope {measured.AGENTSCOPE_VERSION})"


@dataclass(frozen=True)
class FixedPart:
    """A part of the model input outside state.context, with where its size came from."""

    size: Size
    source: str
    exact: bool = False
    unknown: tuple[str, ...] = ()  # what could not be known (and is not counted)

    @property
    def tokens(self) -> int:
        return self.size.tokens


@dataclass(frozen=True)
class RequestValues:
    """The values of one request that QwenPaw writes into the environment block."""

    session_id: str = ""
    user_id: str = ""
    channel: str = ""


def prompt_files(agent_doc: dict[str, Any]) -> list[str]:
    """`system_prompt_files`: absent or null means the defaults; an empty list means none."""
    files = agent_doc.get("system_prompt_files") if isinstance(agent_doc, dict) else None
    if isinstance(files, list):
        return [str(f) for f in files]
    return list(DEFAULT_PROMPT_FILES)


def _read_prompt_file(ws: Workspace, name: str) -> str:
    """A prompt file's text as QwenPaw reads it: inside the workspace only, stripped, a leading `---` block cut at
    the second `---`; "" when missing, empty or unreadable."""
    try:
        path = ws.resolve_inside(name)
    except Exception:  # outside the workspace: QwenPaw skips it with a warning
        return ""
    if path == ws.path or not path.is_file():
        return ""
    try:
        content = confine.read_text(path, "utf-8", "replace").strip()  # a regular file only (no FIFO)
    except Exception:  # unreadable, or not a regular file: QwenPaw skips it too
        return ""
    if content.startswith("---"):
        parts = content.split("---", 2)
        if len(parts) >= 3:
            content = parts[2].strip()
    return content


def _agents_md(content: str, heartbeat: bool) -> str:
    if "<!-- heartbeat:start -->" in content:
        if heartbeat:
            content = content.replace("<!-- heartbeat:start -->", "").replace("<!-- heartbeat:end -->", "").strip()
        else:
            content = _HEARTBEAT.sub("", content).strip()
    if "<!-- memory:start -->" in content:
        content = _MEMORY.sub("", content).strip()
    return content.strip()  # the builder hands no memory manager to the contributor: no memory text here


def _heartbeat_on(agent_doc: dict[str, Any]) -> bool:
    hb = agent_doc.get("heartbeat") if isinstance(agent_doc, dict) else None
    return isinstance(hb, dict) and hb.get("enabled") is True


def prompt_files_text(ws: Workspace, agent_doc: dict[str, Any]) -> tuple[str, list[str]]:
    """The workspace-files part of QwenPaw's system prompt, and the files it used."""
    parts, used = [], []
    for name in prompt_files(agent_doc):
        content = _read_prompt_file(ws, name)
        if content and name == "AGENTS.md":
            content = _agents_md(content, _heartbeat_on(agent_doc))
        if content:
            parts.append(f"# {name}\n\n{content}")
            used.append(name)
    return PROMPT_SEPARATOR.join(parts), used


def _dig(doc: Any, *keys: str) -> Any:
    for key in keys:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def _language(agent_doc: dict[str, Any], strategy: str) -> tuple[str, str]:
    lang = agent_doc.get("language") if isinstance(agent_doc, dict) else None
    lang = lang if isinstance(lang, str) and lang else "zh"  # AgentProfileConfig.language's default
    key = f"{strategy}/{lang}"
    return (key, "") if key in measured.SYSTEM_FIXED_BYTES else (f"{strategy}/en", f"language {lang!r} measured "
                                                                                     "as en")


def _date_line(tz_name: str) -> str:
    try:
        from zoneinfo import ZoneInfo

        now = datetime.now(ZoneInfo(tz_name))
    except Exception:  # QwenPaw falls back to UTC for an invalid zone
        now, tz_name = datetime.now(timezone.utc), "UTC"
    return f"- Current date: {now.strftime('%Y-%m-%d')} {tz_name} ({now.strftime('%A')})"


def _config_timezone(ws: Workspace) -> str:
    for parent in (ws.path.parent.parent, ws.path.parent):
        path = parent / "config.json"
        if path.is_file():
            try:
                tz = _dig(read_json_file(path), "user_timezone")
            except Exception:
                return "UTC"
            return tz if isinstance(tz, str) and tz else "UTC"
    return "UTC"


def _variable_bytes(ws: Workspace, agent_doc: dict[str, Any], model_name: str, request: RequestValues) -> int:
    """The workspace's own bytes in the directory and environment blocks, and the machine-dependent lines as this
    machine would write them, relative to what the bench measured."""
    wdir = agent_doc.get("workspace_dir") if isinstance(agent_doc, dict) else None
    wdir = wdir if isinstance(wdir, str) and wdir else str(ws.path)
    agent_id = agent_doc.get("id") if isinstance(agent_doc, dict) else None
    shell = _dig(agent_doc, "running", "shell_command_executable") or os.environ.get("SHELL") or "/bin/sh"
    os_line = f"{platform.system()} {platform.release()} ({platform.machine()})"
    return (2 * text_bytes(wdir) + text_bytes(model_name) + text_bytes(json.dumps(str(agent_id or "default")))
            + text_bytes(request.channel) + text_bytes(request.user_id) + text_bytes(request.session_id)
            + text_bytes(os_line) - measured.MEASURED_OS_BYTES + text_bytes(str(shell)) - measured.MEASURED_SHELL_BYTES
            + text_bytes(_date_line(_config_timezone(ws))) - measured.DATE_LINE_BYTES)


def system_prompt_part(ws: Workspace, agent_doc: dict[str, Any], strategy: str, model_name: str = "",
                       request: RequestValues | None = None, tokens: int | None = None) -> FixedPart:
    if tokens is not None:
        return FixedPart(Size(4 * tokens), f"--system-tokens {tokens}", exact=True)
    text, used = prompt_files_text(ws, agent_doc)
    key, lang_note = _language(agent_doc, strategy)
    nbytes = measured.SYSTEM_FIXED_BYTES[key] + text_bytes(text) + (0 if text else -len(PROMPT_SEPARATOR))
    nbytes += _variable_bytes(ws, agent_doc, model_name, request or RequestValues())
    unknown = []
    if _dig(agent_doc, "coding_mode", "enabled") is True:
        unknown.append("coding mode's prompt")
    if _workspace_skills(ws):
        unknown.append("the workspace's skills")
    files = "+".join(used) if used else "no prompt files"
    source = f"{ASSUMES}: {files} + QwenPaw's own parts ({key}{', ' + lang_note if lang_note else ''})"
    return FixedPart(Size(nbytes), source, unknown=tuple(unknown))


def _workspace_skills(ws: Workspace) -> list[str]:
    skills = ws.path / "skills"
    try:
        return sorted(p.name for p in skills.iterdir() if (p / "SKILL.md").is_file()) if skills.is_dir() else []
    except OSError:
        return []


def enabled_tools(agent_doc: dict[str, Any], strategy: str) -> tuple[list[str], list[str]]:
    """(tool names QwenPaw sends under `strategy`, notes on what is not counted)."""
    config = _dig(agent_doc, "tools", "builtin_tools")
    config = config if isinstance(config, dict) else {}
    coding = _dig(agent_doc, "coding_mode", "enabled") is True
    names, notes = [], []
    for name, row in measured.REGISTRY.items():
        entry = config.get(name)
        flag = entry.get("enabled", True) if isinstance(entry, dict) else None
        on = bool(row["default"]) if flag is None else flag is not False
        if not on:
            continue
        if row["modes"] and not (coding and "coding" in row["modes"]):
            continue  # a mode-gated tool is listed only while its mode is active
        if row["modes"]:
            notes.append(f"{name} (mode {'/'.join(row['modes'])}; counted)")
        names.append(name)
    extras = measured.EXTRA_TOOL_BYTES.get(strategy, {})
    memory_search = _dig(agent_doc, "running", "reme_light_memory_config", "memory_search_enabled")
    for name in extras:
        if name == "memory_search" and memory_search is False:
            continue
        names.append(name)
    unknown_builtin = [n for n, e in config.items() if n not in measured.REGISTRY and isinstance(e, dict)
                       and e.get("enabled") is True]
    if unknown_builtin:
        notes.append(f"{len(unknown_builtin)} enabled tool(s) unknown to {ASSUMES}: {', '.join(unknown_builtin)}")
    clients = _dig(agent_doc, "mcp", "clients")
    live = [str(k) for k, c in (clients.items() if isinstance(clients, dict) else [])
            if isinstance(c, dict) and c.get("enabled") is not False]
    if live:
        notes.append(f"MCP client(s) {', '.join(live)}: their tools come from the live server")
    if coding:
        notes.append("coding mode's own tools")
    return sorted(names), notes


def tool_schemas_part(agent_doc: dict[str, Any], strategy: str, tokens: int | None = None) -> FixedPart:
    if tokens is not None:
        return FixedPart(Size(4 * tokens), f"--tools-tokens {tokens}", exact=True)
    names, notes = enabled_tools(agent_doc, strategy)
    sizes = [measured.REGISTRY[n]["bytes"] if n in measured.REGISTRY
             else measured.EXTRA_TOOL_BYTES.get(strategy, {}).get(n, 0) for n in names]
    # AgentScope counts json.dumps(tools): "[" + ", ".join(each) + "]"
    nbytes = sum(sizes) + 2 + 2 * max(0, len(sizes) - 1) if sizes else 0
    unknown = tuple(n for n in notes if "counted)" not in n)
    return FixedPart(Size(nbytes) if sizes else ZERO, f"{ASSUMES}: {len(names)} tool(s) agent.json enables under "
                     f"{strategy}", unknown=unknown)


def not_known_notice(system: FixedPart, tools: FixedPart) -> str:
    """One line naming what the counts assume and what they leave out."""
    missing = list(system.unknown) + list(tools.unknown)
    if system.exact and tools.exact:
        return ""
    line = (f"the 2.x session file stores neither the system prompt nor the tool schemas: counted as {ASSUMES} "
            "builds them from this workspace")
    return line + ("; not counted: " + "; ".join(missing) if missing else "")
