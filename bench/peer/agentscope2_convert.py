"""Compare qwenmem's 1.x → 2.x conversion with QwenPaw 2.2.2.post1's own (run with the agentscope==2.0.10 venv,
into which the qwenpaw wheel is installed with --no-deps: `python bench/peer/agentscope2_check.py --make-venv DIR`).

    /tmp/as2-venv/bin/python bench/peer/agentscope2_convert.py ORIGINAL_GEN1 CONVERTED_GEN2 [ORIGINAL CONVERTED ...] > out.json

For each pair: QwenPaw's load of the 1.x original (`react_agent.load_state_dict`'s 1.x branch: a fresh AgentState,
context = `parse_legacy_memory_state` through QwenPaw's `Msg.from_dict` shim, summary = `_compressed_summary`) and
QwenPaw's load of the converted file (`AgentState.model_validate`), both followed by QwenPaw's load-time sanitizer
(`_sanitize_tool_messages`, `sanitize_empty_text_blocks`) and dumped with `model_dump(mode="json")`. They must be
equal once the values AgentScope generates afresh on every load are set aside (session_id, reply_id, and the id and
created_at of blocks that have no id of their own in 1.x). Prints {"pairs": [{"original", "converted", "valid",
"equal", "messages", "difference"}]}. Imports nothing from qwenmem.

`parse_legacy_memory_state` is taken from QwenPaw's installed source (its module imports QwenPaw's whole config
stack, which the --no-deps install lacks); the loader's sanitizer modules are imported on their own for the same
reason.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
import types
from pathlib import Path


def _qwenpaw_dir() -> Path:
    spec = importlib.util.find_spec("qwenpaw")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("qwenpaw is not installed in this interpreter (bench/peer/agentscope2_check.py --make-venv)")
    return Path(list(spec.submodule_search_locations)[0])


def _module(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _qwenpaw_functions():
    import qwenpaw._compat  # noqa: F401  (installs Msg.from_dict = msg_from_dict)
    from agentscope.message import Msg

    root = _qwenpaw_dir()
    tree = ast.parse((root / "app" / "chats" / "utils.py").read_text(encoding="utf-8"))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "parse_legacy_memory_state")
    scope: dict = {"Msg": Msg, "List": list}
    exec(compile(ast.Module([fn], []), "qwenpaw/app/chats/utils.py", "exec"), scope)  # noqa: S102
    tools = _module("qwenpaw_tool_message_utils", root / "agents" / "utils" / "tool_message_utils.py")
    texts = _module("qwenpaw_text_block_utils", root / "agents" / "utils" / "text_block_utils.py")
    return scope["parse_legacy_memory_state"], tools._sanitize_tool_messages, texts.sanitize_empty_text_blocks


def _normalise(state: dict) -> dict:
    state = json.loads(json.dumps(state))
    state.pop("session_id", None)
    state.get("reply_context", {}).pop("reply_id", None)

    def blocks(items):
        for b in items if isinstance(items, list) else []:
            if isinstance(b, dict):
                if b.get("type") not in ("tool_call", "tool_result"):
                    b.pop("id", None)
                b.pop("created_at", None)
                blocks(b.get("output"))

    for m in state.get("context", []):
        blocks(m.get("content"))
    return state


def compare(original: str, converted: str, funcs) -> dict:
    from agentscope.state import AgentState

    parse_legacy, sanitize_tools, sanitize_texts = funcs
    out = {"original": original, "converted": converted, "valid": False, "equal": False, "messages": 0,
           "difference": ""}
    try:
        old = json.loads(Path(original).read_text(encoding="utf-8", errors="surrogatepass"))
        msgs, summary = parse_legacy(old["agent"]["memory"])
    except Exception as exc:  # noqa: BLE001 - a damaged original: compare with its 1.x repair instead
        out["difference"] = f"original: QwenPaw cannot load it ({type(exc).__name__}: {str(exc)[:200]})"
        return out
    theirs = AgentState()
    theirs.context.extend(msgs)
    theirs.summary = summary
    try:
        new = json.loads(Path(converted).read_text(encoding="utf-8"))
        ours = AgentState.model_validate(new["agent"]["state"])
    except Exception as exc:  # noqa: BLE001 - any error is QwenPaw refusing the session
        out["difference"] = f"{type(exc).__name__}: {exc}"[:500]
        return out
    out["valid"] = True
    for state in (theirs, ours):
        state.context = sanitize_texts(sanitize_tools(state.context))
    a, b = _normalise(theirs.model_dump(mode="json")), _normalise(ours.model_dump(mode="json"))
    out["messages"] = len(b["context"])
    out["equal"] = a == b
    if a != b:
        for i, (x, y) in enumerate(zip(a["context"], b["context"])):
            if x != y:
                out["difference"] = f"message {i}: qwenpaw {json.dumps(x)[:300]} / qwenmem {json.dumps(y)[:300]}"
                break
        else:
            out["difference"] = "state fields differ" if len(a["context"]) == len(b["context"]) else \
                f"{len(a['context'])} vs {len(b['context'])} messages"
    return out


def main(argv: list[str]) -> int:
    funcs = _qwenpaw_functions()
    pairs = [compare(argv[i], argv[i + 1], funcs) for i in range(0, len(argv) - 1, 2)]
    json.dump({"pairs": pairs}, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0 if all(p["valid"] and p["equal"] for p in pairs) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
