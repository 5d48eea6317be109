"""What AgentScope 2.0's `AgentState.model_validate` rejects in a QwenPaw 2.x `agent.state` (pure, no pydantic).

QwenPaw 2.2.2.post1 refuses a whole session when one field fails validation (spec qwenpaw2-workspace.md §2.6, §8.2),
so the repair must know every rule. They are read off agentscope 2.0.10 (`state/_state.py`, `message/_base.py`,
`message/_block.py`) and checked against the real model by bench/peer/agentscope2_validate.py (bench/quality/repair_gen2_bench.py
runs both over the corruption corpus and records any disagreement in bench/RESULTS.md).

Pydantic's lax mode is mirrored where it matters: a `str` field takes only a str, an `int` field an int or an
integral float/str, unknown keys are ignored (ThinkingBlock keeps them), defaults fill missing optional keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Final

from qwenmem.core.session_model import gen2

ROLES = ("user", "assistant", "system")
ALLOWED_BY_ROLE = {"user": ("text", "data"), "system": ("text",)}  # _base.py L32-47
BLOCK_TYPES = ("text", "thinking", "hint", "tool_call", "tool_result", "data")
TOOL_CALL_STATES = ("pending", "asking", "allowed", "submitted", "finished")
TOOL_RESULT_STATES = ("success", "error", "interrupted", "denied", "running")
FINISHED_REASONS = ("error", "interrupted", "exceed_max_iters")
# AgentScope 1.0 block types that QwenPaw's 1.x converter knows but a 2.x state may not hold
LEGACY_BLOCK_TYPES = ("tool_use", "image", "audio", "video", "file")


@dataclass(frozen=True)
class Violation:
    """One reason validation fails. `message`/`block` index state.context (None: a state-level field)."""

    rule: str
    detail: str
    message: int | None = None
    block: int | None = None

    def where(self) -> str:
        if self.message is None:
            return "state"
        return f"message {self.message}" + (f" block {self.block}" if self.block is not None else "")

    def __str__(self) -> str:
        return f"{self.where()}: {self.detail} [{self.rule}]"


def _opt_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_int(value: Any) -> bool:
    if isinstance(value, bool):
        return True  # pydantic's lax int accepts bools
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, str):
        try:
            int(value.strip())
            return True
        except ValueError:
            return False
    return False


def _common_block(block: dict[str, Any], out: list[str]) -> None:
    if "id" in block and not isinstance(block["id"], str):
        out.append("block-id-not-string")
    if "created_at" in block and not isinstance(block["created_at"], str):
        out.append("block-created_at-not-string")
    if "finished_at" in block and not _opt_str(block["finished_at"]):
        out.append("block-finished_at-not-string")


def source_problems(source: Any) -> list[str]:
    if not isinstance(source, dict):
        return ["data-source-missing"]
    out = []
    if not isinstance(source.get("media_type"), str):
        out.append("data-media_type-missing")
    kind = source.get("type", None)
    if kind == "base64" or (kind is None and "data" in source):
        if not isinstance(source.get("data"), str):
            out.append("data-base64-data-missing")
    elif kind == "url" or (kind is None and "url" in source):
        url = source.get("url")
        if not (isinstance(url, str) and ":" in url and url.split(":", 1)[0].isascii()
                and url.split(":", 1)[0].replace("+", "").replace("-", "").replace(".", "").isalnum()):
            out.append("data-url-invalid")
    else:
        out.append("data-source-type-unknown")
    return out


def _media_list_problems(value: Any, allow_str: bool) -> list[str]:
    """`str | list[TextBlock | DataBlock]` (tool_result.output, hint.hint, state.summary)."""
    if allow_str and isinstance(value, str):
        return []
    if not isinstance(value, list):
        return ["not-string-or-list"]
    out = []
    for item in value:
        if not isinstance(item, dict):
            out.append("item-not-object")
        elif item.get("type", "text") == "text" and "source" not in item:
            if not isinstance(item.get("text"), str):
                out.append("item-text-missing")
        elif item.get("type", "data") == "data":
            out.extend(source_problems(item.get("source")))
        else:
            out.append("item-type-not-text-or-data")
    return out


def _text_problems(block: dict[str, Any]) -> list[str]:
    return [] if isinstance(block.get("text"), str) else ["text-not-string"]


def _thinking_problems(block: dict[str, Any]) -> list[str]:
    return [] if isinstance(block.get("thinking"), str) else ["thinking-not-string"]


def _hint_problems(block: dict[str, Any]) -> list[str]:
    out = ["hint-" + p for p in _media_list_problems(block.get("hint"), True)]
    if not _opt_str(block.get("source")):
        out.append("hint-source-not-string")
    return out


def _id_name_problems(block: dict[str, Any], kind: str) -> list[str]:
    return [f"{kind}-{key}-missing" for key in ("id", "name") if not isinstance(block.get(key), str)]


def _tool_call_problems(block: dict[str, Any]) -> list[str]:
    out = _id_name_problems(block, "tool_call")
    if not isinstance(block.get("input"), str):
        out.append("tool_call-input-not-string")
    if "state" in block and block["state"] not in TOOL_CALL_STATES:
        out.append("tool_call-state-unknown")
    if "suggested_rules" in block and not isinstance(block["suggested_rules"], list):
        out.append("tool_call-suggested_rules-not-list")
    return out


def _tool_result_problems(block: dict[str, Any]) -> list[str]:
    out = _id_name_problems(block, "tool_result")
    out.extend("tool_result-output-" + p for p in _media_list_problems(block.get("output"), True))
    if "state" in block and block["state"] not in TOOL_RESULT_STATES:
        out.append("tool_result-state-unknown")
    if "metadata" in block and not isinstance(block["metadata"], dict):
        out.append("tool_result-metadata-not-object")
    return out


def _data_problems(block: dict[str, Any]) -> list[str]:
    out = source_problems(block.get("source"))
    if not _opt_str(block.get("name")):
        out.append("data-name-not-string")
    return out


_ABSENT: Final = object()  # summary_in's default: a key that is not there (None is a value to check)

_KIND_PROBLEMS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "text": _text_problems, "thinking": _thinking_problems, "hint": _hint_problems,
    "tool_call": _tool_call_problems, "tool_result": _tool_result_problems, "data": _data_problems}


# the fields each block model declares (message/_block.py): pydantic's smart union prefers the member with most set
_DECLARED = {"text": {"text"}, "thinking": {"thinking"}, "hint": {"hint", "source"},
             "tool_call": {"name", "input", "state", "suggested_rules"},
             "tool_result": {"name", "output", "state", "metadata"}, "data": {"source", "name"}}


def _typed_problems(block: dict[str, Any], kind: str) -> list[str]:
    out: list[str] = []
    _common_block(block, out)
    return out + _KIND_PROBLEMS[kind](block)


def effective_type(block: dict[str, Any]) -> Any:
    """The block's type as AgentScope reads it. `Msg.content` is a plain union, so a block without a "type" key is
    the member it validates as: the one with most of its declared fields set, the first in union order on a tie
    (None when it validates as none)."""
    if "type" in block:
        return block["type"]
    fits = [k for k in BLOCK_TYPES if not _typed_problems(block, k)]
    if not fits:
        return None
    return max(fits, key=lambda k: (len(_DECLARED[k] & block.keys()), -BLOCK_TYPES.index(k)))


def block_problems(block: Any) -> list[str]:
    """Rule names a block breaks on its own (the role rule is checked per message)."""
    if not isinstance(block, dict):
        return ["block-not-object"]
    kind = effective_type(block)
    if kind not in BLOCK_TYPES:
        return ["block-legacy-type" if kind in LEGACY_BLOCK_TYPES else "block-type-unknown"]
    return _typed_problems(block, kind)


def _usage_ok(usage: Any) -> bool:
    if usage is None:
        return True
    if not isinstance(usage, dict):
        return False
    for key in ("input_tokens", "output_tokens"):
        if not _is_int(usage.get(key)):
            return False
    return all(_is_int(usage[k]) for k in ("cache_input_tokens", "cache_creation_input_tokens") if k in usage)


def message_field_problems(msg: dict[str, Any]) -> list[str]:
    """Problems of a message's own fields (not its blocks)."""
    out = []
    if msg.get("role") not in ROLES:
        out.append("role-invalid")
    if not isinstance(msg.get("name"), str):
        out.append("name-missing")
    if not isinstance(msg.get("content"), list):
        out.append("content-not-list")
    if "id" in msg and not isinstance(msg["id"], str):
        out.append("id-not-string")
    if "metadata" in msg and not isinstance(msg["metadata"], dict):
        out.append("metadata-not-object")
    if "created_at" in msg and not isinstance(msg["created_at"], str):
        out.append("created_at-not-string")
    if "usage" in msg and not _usage_ok(msg["usage"]):
        out.append("usage-invalid")
    if "finished_at" in msg and not _opt_str(msg["finished_at"]):
        out.append("finished_at-not-string")
    if "finished_reason" in msg and msg["finished_reason"] is not None and msg["finished_reason"] not in FINISHED_REASONS:
        out.append("finished_reason-unknown")
    if "structured_output" in msg and not (msg["structured_output"] is None or isinstance(msg["structured_output"], dict)):
        out.append("structured_output-not-object")
    if "error" in msg and msg["error"] is not None and not isinstance(msg["error"], dict):
        out.append("error-not-object")
    return out


def message_violations(msg: Any, index: int) -> list[Violation]:
    if not isinstance(msg, dict):
        return [Violation("message-not-object", f"a {type(msg).__name__}, not a message object", index)]
    out = [Violation(rule, rule.replace("-", " "), index) for rule in message_field_problems(msg)]
    content = msg.get("content")
    if not isinstance(content, list):
        return out
    role = msg.get("role")
    allowed = ALLOWED_BY_ROLE.get(role) if isinstance(role, str) else None
    for j, block in enumerate(content):
        for rule in block_problems(block):
            out.append(Violation(rule, rule.replace("-", " "), index, j))
        kind = effective_type(block) if isinstance(block, dict) else None
        if allowed is not None and kind in BLOCK_TYPES and kind not in allowed:
            out.append(Violation(f"{msg['role']}-holds-{kind}",
                                 f"a {msg['role']} message may hold only {'/'.join(allowed)} blocks, not {kind}",
                                 index, j))
    return out


def _state_field_violations(state: dict[str, Any]) -> list[Violation]:
    out = []
    if "session_id" in state and not isinstance(state["session_id"], str):
        out.append(Violation("session_id-not-string", "session_id is not a string"))
    summary = gen2.summary_in(state, _ABSENT)
    if summary is not _ABSENT and _media_list_problems(summary, True):
        out.append(Violation("summary-invalid", "summary is not a string or a list of text/data blocks"))
    for key in ("reply_context", "permission_context", "tool_context", "tasks_context", "middle_context"):
        if key in state and not isinstance(state[key], dict):
            out.append(Violation(f"{key}-not-object", f"{key} is not an object"))
    reply = state.get("reply_context")
    if isinstance(reply, dict):
        if "reply_id" in reply and not isinstance(reply["reply_id"], str):
            out.append(Violation("reply_id-not-string", "reply_context.reply_id is not a string"))
        if "cur_iter" in reply and not _is_int(reply["cur_iter"]):
            out.append(Violation("cur_iter-not-int", "reply_context.cur_iter is not an integer"))
    tasks = state.get("tasks_context")
    if isinstance(tasks, dict) and "tasks" in tasks and not isinstance(tasks["tasks"], list):
        out.append(Violation("tasks-not-list", "tasks_context.tasks is not a list"))
    tools = state.get("tool_context")
    if isinstance(tools, dict):
        for key in ("read_file_cache", "activated_groups"):
            if key in tools and not isinstance(tools[key], list):
                out.append(Violation(f"{key}-not-list", f"tool_context.{key} is not a list"))
    return out


def state_violations(state: Any) -> list[Violation]:
    """Every reason `AgentState.model_validate(state)` fails, as far as this module knows them."""
    if not isinstance(state, dict):
        return [Violation("state-not-object", "agent.state is not an object")]
    out = _state_field_violations(state)
    context = gen2.context_in(state, [])
    if not isinstance(context, list):
        return out + [Violation("context-not-list", "state.context is not a list")]
    for i, msg in enumerate(context):
        out.extend(message_violations(msg, i))
    return out
