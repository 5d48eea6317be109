"""Load compacted sessions and dialog lines with the real agentscope (the library QwenPaw runs on).

Run by bench/quality/compact_corpus.py with `--agentscope-python PY`, where PY is an interpreter that has agentscope
installed (QwenPaw pins agentscope==1.0.20); it is not a qwenmem dependency. Prints one JSON object.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(root: Path) -> None:
    import agentscope
    from agentscope.memory import InMemoryMemory
    from agentscope.message import Msg
    from agentscope.tool import Toolkit

    sessions = dialog_lines = 0
    failures: list[str] = []
    for path in sorted(root.rglob("sessions/**/*.json")):
        if ".qwenmem" in path.parts:
            continue
        try:
            agent = json.loads(path.read_text(encoding="utf-8"))["agent"]
            memory = InMemoryMemory()
            memory.load_state_dict(agent["memory"])
            Toolkit().load_state_dict(agent["toolkit"])
            for item in agent["memory"]["content"]:
                Msg.from_dict(item[0] if isinstance(item, list) else item)
            sessions += 1
        except Exception as exc:  # noqa: BLE001 - every failure is reported, none is fatal
            failures.append(f"{path.name}: {type(exc).__name__}: {exc}"[:300])
    for path in sorted(root.rglob("dialog/*.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                Msg.from_dict(json.loads(line))
                dialog_lines += 1
            except Exception as exc:  # noqa: BLE001
                failures.append(f"{path.name}:{n}: {type(exc).__name__}: {exc}"[:300])
    print(json.dumps({"agentscope": agentscope.__version__, "sessions_loaded": sessions,
                      "dialog_lines_loaded": dialog_lines, "failures": failures}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
