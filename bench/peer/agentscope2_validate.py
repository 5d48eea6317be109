"""Validate QwenPaw 2.x session files with AgentScope 2.0's own model (run with the agentscope==2.0.10 venv).

    /tmp/as2-venv/bin/python bench/peer/agentscope2_validate.py FILE... > result.json

QwenPaw 2.2.2.post1 loads a session with `AgentState.model_validate(doc["agent"]["state"])` and refuses the whole
session on any error (spec qwenpaw2-workspace.md §2.6, react_agent.py L411-419). This script does exactly that,
reading the bytes as QwenPaw does (surrogatepass, then json.loads with the raw_decode fallback of safe_json_loads),
and prints one JSON object: {"agentscope": version, "files": [{"path", "ok", "kind", "errors": [...]}]}.
Runs outside qwenmem's venv on purpose: it imports nothing from qwenmem.
"""

from __future__ import annotations

import json
import sys


def _load(path: str):
    with open(path, encoding="utf-8", errors="surrogatepass") as fh:
        text = fh.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        try:
            return json.JSONDecoder().raw_decode(text.lstrip(" \t\r\n"))[0]
        except json.JSONDecodeError:
            return {}


def validate(path: str) -> dict:
    from agentscope.state import AgentState
    from pydantic import ValidationError

    try:
        doc = _load(path)
    except (OSError, UnicodeDecodeError) as exc:
        return {"path": path, "ok": False, "kind": "unreadable", "errors": [str(exc)]}
    agent = doc.get("agent") if isinstance(doc, dict) else None
    if not isinstance(agent, dict):
        return {"path": path, "ok": False, "kind": "empty", "errors": ["QwenPaw would load this as an empty session"]}
    if "state" not in agent:
        kind = "1.x" if isinstance(agent.get("memory"), dict) else "no_state"
        return {"path": path, "ok": kind == "1.x", "kind": kind, "errors": []}
    try:
        AgentState.model_validate(agent["state"])
    except ValidationError as exc:
        errors = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
        return {"path": path, "ok": False, "kind": "2.x", "errors": errors}
    except Exception as exc:  # noqa: BLE001 - QwenPaw turns any error into a refused session
        return {"path": path, "ok": False, "kind": "2.x", "errors": [f"{type(exc).__name__}: {exc}"]}
    return {"path": path, "ok": True, "kind": "2.x", "errors": []}


def main(argv: list[str]) -> int:
    from importlib.metadata import version

    files = [validate(p) for p in argv]
    json.dump({"agentscope": version("agentscope"), "files": files}, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0 if all(f["ok"] for f in files) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
