"""Validate QwenPaw 2.x files with AgentScope 2.0's own models: every session file's `agent.state` through
`AgentState.model_validate`, every dialog/*.jsonl line through `Msg.model_validate` (what QwenPaw does on load).

Run with an interpreter that has agentscope==2.0.10 (kept out of qwenmem's venv: it pulls a large dependency tree):

    python bench/peer/agentscope2_check.py --make-venv /tmp/as2-venv     # venv + agentscope==2.0.10 + qwenpaw --no-deps
    /tmp/as2-venv/bin/python bench/peer/agentscope2_check.py FILE_OR_DIR...

Exit 0 when every file validates, 1 otherwise (one line per problem on stdout).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

AGENTSCOPE = "agentscope==2.0.10"
# QwenPaw itself, without its dependency tree: bench/peer/agentscope2_convert.py needs only its 1.x converter and loader
QWENPAW = "qwenpaw==2.2.2.post1"
# ... plus what QwenPaw's prompt contributor (qwenpaw.runtime.prompt_contributors) imports beyond agentscope, so
# tests/core/compaction/gen2/test_compact2_fixed_parts.py runs QwenPaw's own contributor in CI (its whole tree is ~1.5 GB)
CONTRIBUTOR_DEPS = "apscheduler==3.11.3 google-genai==3.6.1 packaging==26.4 pillow==13.0.0"
# the venv every validator test and bench uses (tests/validators.py; .ci/run builds a cached one and sets this)
DEFAULT_VENV = os.environ.get("QWENMEM_AS2_VENV") or "/tmp/as2-venv"


def make_venv(where: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    pip = [str(where / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run(pip + [AGENTSCOPE], check=True)
    subprocess.run(pip + ["--no-deps", QWENPAW], check=True)
    subprocess.run(pip + CONTRIBUTOR_DEPS.split(), check=True)


def files(args: list[str]) -> list[Path]:
    out = []
    for arg in args:
        p = Path(arg)
        if p.is_dir():
            out += sorted(q for q in p.rglob("*") if q.suffix in (".json", ".jsonl") and not q.name.startswith("."))
        else:
            out.append(p)
    return out


def check(paths: list[Path]) -> list[str]:
    from agentscope.message import Msg
    from agentscope.state import AgentState

    problems = []
    for path in paths:
        try:
            if path.suffix == ".jsonl":
                for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
                    if line.strip():
                        Msg.model_validate(json.loads(line))
                continue
            doc = json.loads(path.read_text("utf-8"))
            agent = doc.get("agent") if isinstance(doc, dict) else None
            if not isinstance(agent, dict) or "state" not in agent:
                continue  # not a 2.x session (1.x file, .synced.json, chats.json)
            AgentState.model_validate(agent["state"])
        except Exception as exc:  # report every failure, keep going
            problems.append(f"{path}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    return problems


def main(argv: list[str]) -> int:
    if argv[:1] == ["--make-venv"]:
        make_venv(Path(argv[1] if len(argv) > 1 else DEFAULT_VENV))
        return 0
    paths = files(argv)
    problems = check(paths)
    for p in problems:
        print(p)
    print(f"{len(paths)} file(s), {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
