"""What QwenPaw's strict `agent.load_state_dict` needs from a session's bytes (spec qwenpaw-workspace.md §2.2); the
document's own rules are session_model.gen1_doc.strict_load_problems."""

from __future__ import annotations

import json

from qwenmem.core.jsonsafe import loads_session
from qwenmem.core.session_model.gen1_doc import strict_load_problems


def strict_load_bytes_problems(data: bytes) -> list[str]:
    """The same check on bytes, read the way QwenPaw reads them (utf-8, surrogatepass, no BOM tolerance)."""
    try:
        text = data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        return [f"invalid UTF-8 at byte {exc.start}"]
    try:
        obj = loads_session(text)
    except RecursionError:
        return ["JSON nested too deeply to parse"]
    except json.JSONDecodeError as exc:
        return [f"not valid JSON: {exc.msg} at character {exc.pos}"]
    problems = strict_load_problems(obj)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        problems.append("contains lone surrogates")
    return problems
