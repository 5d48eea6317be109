"""What QwenPaw 2.x sends besides the session: the system prompt and the tool schemas, measured from QwenPaw's own code.

Run with an interpreter that has the qwenpaw wheel and its dependencies (a full install; `--no-deps` is not enough
to build an agent), from the repository root:
    /tmp/qp2-full/bin/python bench/peer/qwenpaw2_fixed_parts.py [--write]
(make that venv with `python3.11 -m venv /tmp/qp2-full && /tmp/qp2-full/bin/pip install qwenpaw==2.2.2.post1
agentscope==2.0.10`). Offline: the corpus's stub provider port is dead, so ReMe's embedding calls fail and are
retried; the agent is still built.

For each strategy (scroll, native) and language (en, zh) it copies ../shared/corpus/generated/qwenpaw-2.2.2 to a
temporary root, sets the strategy and language with QwenPaw's own `save_agent_config`, starts the `Workspace` with
QwenPaw's bootstrap (`WorkspaceBootstrapFactory`), builds the agent with `AgentBuilder.build` for the request
console:alice, and takes `_prepare_model_input()`: the system message and the tool schemas AgentScope counts. It
then cuts the system prompt into the parts QwenPaw's contributors make (each contributor run on its own), so that
qwenmem can rebuild it for another workspace: the prompt files and the paths/ids in the directory and environment
blocks are the workspace's; everything else is a fixed number of bytes per QwenPaw version, strategy and language.

Prints the JSON; `--write` regenerates qwenmem/core/compaction/gen2/qwenpaw_measured.py (data only, with the versions
named). tests/core/compaction/gen2/test_gen2_fixed_parts.py pins that module against a fresh measurement when this venv exists.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path
from pprint import pformat

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus" / "generated" / "qwenpaw-2.2.2"
OUT = REPO / "qwenmem" / "core" / "compaction" / "gen2" / "qwenpaw_measured.py"
SESSION = ("console:alice", "alice", "console")


def copy_root(dest: Path) -> Path:
    """The corpus root and secret dir under `dest`, writable, with the corpus machine's absolute root renamed."""
    root = dest / "root"
    shutil.copytree(CORPUS / "root", root)
    shutil.copytree(CORPUS / "secret", dest / "root.secret")
    for base, dirs, files in os.walk(dest):
        for name in dirs:
            os.chmod(os.path.join(base, name), 0o700)
        for name in files:
            os.chmod(os.path.join(base, name), 0o600)
    for path in (root / "config.json", root / "workspaces" / "default" / "agent.json"):
        path.write_text(path.read_text(encoding="utf-8").replace("/home/user/.qwenpaw", str(root)), encoding="utf-8")
    return root / "workspaces" / "default"


def nbytes(text: str | None) -> int:
    return len((text or "").encode("utf-8"))


async def measure(strategy: str, language: str) -> dict:
    from qwenpaw.app.workspace.bootstrap_factory import WorkspaceBootstrapFactory
    from qwenpaw.app.workspace.workspace import Workspace
    from qwenpaw.config.config import load_agent_config, save_agent_config
    from qwenpaw.runtime.builder import AgentBuilder
    from qwenpaw.runtime.hooks import HookContext
    from qwenpaw.runtime.prompt_contributors import (DirectoryContextContributor, EnvContextContributor,
                                                     ProtectedExecutionContractContributor,
                                                     ScrollContextContributor, WorkspacePromptFilesContributor)
    from qwenpaw.schemas import AgentRequest

    cfg = load_agent_config("default")
    cfg.running.light_context_config.strategy = strategy
    cfg.language = language
    save_agent_config("default", cfg)
    wsdir = Path(os.environ["QWENPAW_WORKING_DIR"]) / "workspaces" / "default"
    workspace = Workspace(agent_id="default", workspace_dir=str(wsdir))
    workspace.bootstrap_plugins(**WorkspaceBootstrapFactory.build_bootstrap_kwargs(None))
    await workspace.start()
    sid, uid, channel = SESSION
    req = AgentRequest(input=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}], session_id=sid,
                       user_id=uid, channel=channel)
    ctx = HookContext(request=req, session_id=sid, agent_id="default", root_session_id=sid, root_agent_id="default",
                      workspace_dir=wsdir, workspace=workspace, app_services=None)
    builder = AgentBuilder()
    agent = await builder.build(ctx)
    kwargs = await agent._prepare_model_input()
    system = kwargs["messages"][0].get_text_content()
    tools = kwargs["tools"] or []
    config = ctx.agent_config
    prompt_ctx = type("PromptCtx", (), {})()
    prompt_ctx.workspace_dir, prompt_ctx.agent_id = wsdir, "default"
    prompt_ctx.extras = {"language": config.language, "heartbeat_enabled": False, "agent_config": config,
                         "env_context": builder._build_env_context(ctx, config)}
    parts = {
        "protected_execution_contract": ProtectedExecutionContractContributor().contribute_sync(prompt_ctx),
        "prompt_files": WorkspacePromptFilesContributor().contribute_sync(prompt_ctx),
        "directory_context": DirectoryContextContributor().contribute_sync(prompt_ctx),
        "scroll_context": ScrollContextContributor().contribute_sync(prompt_ctx),
        "env_context": EnvContextContributor().contribute_sync(prompt_ctx),
    }
    memory = workspace.memory_manager.get_memory_prompt() if workspace.memory_manager else ""
    skills = await agent.toolkit.get_skill_instructions(agent.state.tool_context.activated_groups)
    for key, text in parts.items():
        if text and text not in system:
            raise SystemExit(f"{strategy}/{language}: the {key} part is not in the system prompt QwenPaw built")
    variables = {"workspace_dir": str(wsdir), "model_name": ctx.extras.get("active_model_display_name") or "",
                 "os": f"{platform.system()} {platform.release()} ({platform.machine()})",
                 "shell": config.running.shell_command_executable or os.environ.get("SHELL") or "/bin/sh",
                 "agent_id": json.dumps("default"), "channel": channel, "user_id": uid, "session_id": sid}
    env_text = parts["env_context"] or ""
    date_line = env_text.rsplit("\n", 2)[-2]
    tool_rows = {t["function"]["name"]: nbytes(json.dumps(t, ensure_ascii=False)) for t in tools}
    builtin = set((config.tools.builtin_tools or {}).keys())
    # every built-in of the registry, enabled or not, wrapped as list_tools() wraps them: the schemas a user who
    # enables one in agent.json gets, and the gates that keep one out
    from agentscope.tool import Toolkit
    from qwenpaw.governance import PolicyGuardedTool

    registry = workspace.plugins.tool_registry
    descs = [registry.get(n) for n in registry.names()]
    every = Toolkit(tools=[PolicyGuardedTool(d.func, governor=None, request_context=None) for d in descs])
    every_schemas = await every.get_tool_schemas(agent.state.tool_context.activated_groups)
    registry_rows = {}
    for d in descs:
        [schema] = [t for t in every_schemas if t["function"]["name"] == d.name]
        registry_rows[d.name] = {"bytes": nbytes(json.dumps(schema, ensure_ascii=False)),
                                 "default": d.enabled_by_default, "modes": list(d.requires_modes),
                                 "skills": list(d.requires_skills), "features": list(d.requires_features)}
        if d.name in tool_rows and tool_rows[d.name] != registry_rows[d.name]["bytes"]:
            raise SystemExit(f"{d.name}: its schema differs between the agent and the registry")
    try:
        await workspace.stop()
    except Exception as exc:  # ReMe's close times out against the dead stub; the measurement is already taken
        print(f"note: workspace stop: {exc}", file=sys.stderr)
    return {
        "strategy": strategy, "language": language,
        "system_bytes": nbytes(system), "system_tokens": int(nbytes(system) / 4 + 0.5),
        "tools_bytes": nbytes(json.dumps(tools, ensure_ascii=False)),
        "tools_tokens": int(nbytes(json.dumps(tools, ensure_ascii=False)) / 4 + 0.5),
        "parts": {k: nbytes(v) for k, v in parts.items()},
        "memory_prompt": nbytes(memory), "skill_instructions": nbytes(skills),
        "variables": {k: nbytes(v) for k, v in variables.items()}, "date_line": nbytes(date_line),
        "tools": tool_rows, "builtin": sorted(n for n in tool_rows if n in builtin), "registry": registry_rows,
        "system_text": system,
    }


def fixed_bytes(m: dict) -> dict:
    """The bytes of the system prompt that do not depend on the workspace: everything but the prompt files and the
    workspace path / model name / session values inside the directory and environment blocks."""
    v = m["variables"]
    workspace_values = (2 * v["workspace_dir"] + v["model_name"] + v["agent_id"] + v["channel"] + v["user_id"]
                        + v["session_id"])  # the path appears in the directory block and in the env block
    return {"rest": m["system_bytes"] - m["parts"]["prompt_files"] - workspace_values}


def render_module(results: list[dict], versions: dict[str, str]) -> str:
    fixed = {f"{m['strategy']}/{m['language']}": fixed_bytes(m)["rest"] for m in results}
    tools: dict[str, dict[str, int]] = {}
    for m in results:
        if m["language"] == "en":
            tools[m["strategy"]] = dict(sorted(m["tools"].items()))
    registry = dict(sorted(results[0]["registry"].items()))
    extras = {m["strategy"]: {n: b for n, b in sorted(m["tools"].items()) if n not in registry}
              for m in results if m["language"] == "en"}
    sample = {f"{m['strategy']}/{m['language']}": [m["system_tokens"], m["tools_tokens"]] for m in results}
    corpus = {f"{m['strategy']}/{m['language']}": {"system_bytes": m["system_bytes"], "tools_bytes": m["tools_bytes"],
                                                    "prompt_files_bytes": m["parts"]["prompt_files"],
                                                    "tools": len(m["tools"])} for m in results}
    lines = [
        '"""What QwenPaw 2.x sends besides the session, measured from its own code by bench/peer/qwenpaw2_fixed_parts.py',
        "(generated by `bench/peer/qwenpaw2_fixed_parts.py --write`; do not edit by hand).",
        "",
        "SYSTEM_FIXED_BYTES: bytes of the system prompt QwenPaw builds (its protected contract, the separators, the",
        "directory/environment templates, the scroll guidance, the agent-skills list, ReMe's memory guidance) minus",
        "the workspace's prompt files and the paths/ids/model name in it, per strategy/language. TOOL_BYTES:",
        "json.dumps(schema, ensure_ascii=False) bytes of each tool the agent of the generated corpus was built with,",
        "per strategy. REGISTRY: every built-in tool; EXTRA_TOOL_BYTES: the agent's own.\"\"\"",
        "",
        "from typing import Any",
        "",
        f"QWENPAW_VERSION = {versions['qwenpaw']!r}",
        f"AGENTSCOPE_VERSION = {versions['agentscope']!r}",
        f"REME_VERSION = {versions['reme']!r}",
        f"SYSTEM_FIXED_BYTES: dict[str, int] = {pformat(fixed, width=116)}",
        f"DATE_LINE_BYTES = {results[0]['date_line']}  # '- Current date: YYYY-MM-DD <tz> (<weekday>)' as measured",
        f"MEASURED_OS_BYTES = {results[0]['variables']['os']}  # QwenPaw's machine: the bench's OS string",
        f"MEASURED_SHELL_BYTES = {results[0]['variables']['shell']}",
        f"SKILL_INSTRUCTION_BYTES = {results[0]['skill_instructions']}  # the built-in skills' list (install path)",
        "# the tools of the corpus agent, per strategy (24 built-ins enabled by its agent.json + the agent's own)",
        f"TOOL_BYTES: dict[str, dict[str, int]] = {pformat(tools, width=116)}",
        "# every built-in of QwenPaw's tool registry: schema bytes, enabled_by_default, requires_modes/skills/features",
        f"REGISTRY: dict[str, dict[str, Any]] = {pformat(registry, width=116)}",
        "# the agent's own tools beyond the registry's, per strategy (Skill viewer, ReMe memory_search, scroll recall)",
        f"EXTRA_TOOL_BYTES: dict[str, dict[str, int]] = {pformat(extras, width=116)}",
        "# the corpus agent as measured (system tokens, tool tokens), per strategy/language",
        f"MEASURED_TOTALS: dict[str, list[int]] = {pformat(sample, width=116)}",
        "# the corpus agent (console:alice) in bytes: whole system prompt, all tool schemas, its prompt-files part",
        f"MEASURED_CORPUS: dict[str, dict[str, int]] = {pformat(corpus, width=116)}",
        "",
    ]
    return "\n".join(lines)


def record(results: list[dict], vers: dict[str, str]) -> None:
    sys.path.insert(0, str(REPO))
    from bench._results import update_section

    rows = "".join(f"| {m['strategy']} | {m['language']} | {m['system_tokens']:,} ({m['system_bytes']:,} B) | "
                   f"{m['parts']['prompt_files']:,} B | {len(m['tools'])} | {m['tools_tokens']:,} "
                   f"({m['tools_bytes']:,} B) |\n" for m in results)
    md = ("## QwenPaw 2.x: system prompt and tool schemas, measured from QwenPaw's own code\n\n"
          "Command: `/tmp/qp2-full/bin/python bench/peer/qwenpaw2_fixed_parts.py --write` (qwenpaw "
          f"{vers['qwenpaw']}, agentscope {vers['agentscope']}, reme-ai {vers['reme']}, full dependencies). The "
          "corpus workspace's agent for console:alice built by QwenPaw's `AgentBuilder.build` after its "
          "`Workspace` bootstrap; `_prepare_model_input()`'s system message and tool schemas, counted as AgentScope "
          "counts (bytes/4). The prompt files are the workspace's AGENTS.md/SOUL.md/PROFILE.md (QwenPaw's "
          "`WorkspacePromptFilesContributor`); the rest is kept as data in "
          "`qwenmem/core/compaction/gen2/qwenpaw_measured.py`. No timing.\n\n"
          "| strategy | language | system prompt tokens | of it, prompt files | tools | tool-schema tokens |\n"
          "|---|---|---:|---:|---:|---:|\n" + rows)
    update_section("qwenpaw2-fixed-parts", md)


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {"qwenpaw": version("qwenpaw"), "agentscope": version("agentscope"), "reme": version("reme-ai")}


def run_one(strategy: str, language: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="qwenpaw2_fixed_") as tmp:
        wsdir = copy_root(Path(tmp))
        os.environ["QWENPAW_WORKING_DIR"] = str(wsdir.parent.parent)
        os.environ["QWENPAW_SECRET_DIR"] = str(wsdir.parent.parent.parent / "root.secret")
        return asyncio.run(measure(strategy, language))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help="regenerate qwenmem/core/compaction/gen2/qwenpaw_measured.py")
    ap.add_argument("--one", nargs=2, metavar=("STRATEGY", "LANGUAGE"), help=argparse.SUPPRESS)
    ap.add_argument("--render", type=Path, help="write the module from a saved JSON of this script (no measuring)")
    args = ap.parse_args()
    if args.render:
        saved = json.loads(args.render.read_text(encoding="utf-8"))
        OUT.write_text(render_module(saved["results"], saved["versions"]), encoding="utf-8")
        record(saved["results"], saved["versions"])
        return 0
    if args.one:  # a child: QwenPaw reads its root from the environment once per process
        print(json.dumps(run_one(*args.one)))
        return 0
    import subprocess

    results = []
    for strategy in ("scroll", "native"):
        for language in ("en", "zh"):
            proc = subprocess.run([sys.executable, __file__, "--one", strategy, language], capture_output=True,
                                  text=True, timeout=600)
            if proc.returncode != 0:
                print(proc.stderr[-3000:], file=sys.stderr)
                return 1
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(json.dumps({"versions": versions(), "results": [{k: v for k, v in m.items() if k != "system_text"}
                                                            for m in results]}, indent=1))
    if args.write:
        OUT.write_text(render_module(results, versions()), encoding="utf-8")
        record(results, versions())
        print(f"wrote {OUT.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
