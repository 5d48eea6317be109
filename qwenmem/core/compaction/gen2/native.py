"""The native strategy: AgentScope 2.0's `_compress_context_impl` decision and `_split_context_for_compression`
walk, on raw Msg dicts (agentscope/agent/_agent.py L490-790, L2878-3031 @as2.0.10; spec §4.3).

    compacts when  count(system + summary + context, tools) >= trigger_ratio · C
    split: walk k from the newest message back while count(system + summary + context[k:], tools) < reserve · C;
           the boundary message is split by blocks (newest first, while the count stays <= reserve), an unfinished
           tool call of the reply in progress is never moved to the compressed side, and no tool result is kept
           without its call; if nothing would be compressed, the walk is redone with reserve 0.
    the reply in progress compressed whole: AgentScope appends an empty copy of it (same id, name and usage, no
           blocks) so the reply's usage survives (`_apply_change`, L745-752), and the reply goes on in that copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Sequence

from qwenmem.core.jsonsafe import copy_json
from qwenmem.core.compaction.gen2.tokens import ZERO, Size, block_size, blocks_of, message_size, summary_size, tokens_of

# AgentScope ContextConfig.summary_template (agentscope/agent/_config.py L119-135 @as2.0.10)
SUMMARY_TEMPLATE = ("<system-info>Here is a summary of your previous work\n"
                    "# Task Overview\n{task_overview}\n\n"
                    "# Current State\n{current_state}\n\n"
                    "# Important Discoveries\n{important_discoveries}\n\n"
                    "# Next Steps\n{next_steps}\n\n"
                    "# Context to Preserve\n{context_to_preserve}"
                    "</system-info>")
SUMMARY_FIELDS = ("task_overview", "current_state", "important_discoveries", "next_steps", "context_to_preserve")
TRUNCATION_SUMMARY = "<system-info>Some earlier messages were truncated for limited context.</system-info>"


def offload_reminder(path: str) -> str:
    return (f"<system-reminder>The compressed context is offloaded to '{path}', you can refer to it when "
            "needed.</system-reminder>")


def render_summary(fields: dict[str, str]) -> str:
    return SUMMARY_TEMPLATE.format(**{k: fields.get(k, "") for k in SUMMARY_FIELDS})


def effective_ratios(trigger_ratio: float, reserve_ratio: float) -> tuple[float, float]:
    """QwenPaw clamps the reserve below the trigger (runtime/builder.py L1046-1057)."""
    return trigger_ratio, min(reserve_ratio, trigger_ratio - 1e-6)


@dataclass
class Split:
    compress: list[Any]  # Msg dicts (the boundary message may be a copy holding its first blocks)
    reserve: list[Any]  # Msg dicts (the boundary message may be a copy holding its last blocks)
    boundary: int | None = None  # index of the split message in the context
    boundary_blocks: tuple[int, int] = (0, 0)  # (blocks compressed, blocks in the message)
    reserve_used: float = 0.0  # the reserve the split was computed with (0 after the fallback)
    fallback: bool = False
    reply_copy: bool = False  # reserve ends with AgentScope's zero-block copy of the reply compressed whole


@dataclass
class NativeDecision:
    context_size: int
    trigger_ratio: float
    reserve_ratio: float
    tokens: int
    would_compact: bool
    reason: str
    split: Split | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def trigger(self) -> float:
        return self.trigger_ratio * self.context_size

    @property
    def reserve(self) -> float:
        return self.reserve_ratio * self.context_size


def unfinished_tool_call_ids(context: Sequence[Any], reply_id: Any) -> set[str]:
    """AgentState.get_unfinished_tool_calls: calls without a result in the last message, if it is the assistant's
    reply in progress (its id is reply_context.reply_id)."""
    if not context or reply_id is None:
        return set()
    last = context[-1]
    if not isinstance(last, dict) or last.get("role") != "assistant" or last.get("id") != reply_id:
        return set()
    blocks = [b for b in blocks_of(last) if isinstance(b, dict)]
    results = {b.get("id") for b in blocks if b.get("type") == "tool_result"}
    return {str(b.get("id")) for b in blocks if b.get("type") == "tool_call" and b.get("id") not in results}


def _is_call(b: Any) -> bool:
    return isinstance(b, dict) and b.get("type") == "tool_call"


def _boundary_message(sizes_suffix: list[Size], base: Size, reserve_tokens: float) -> int:
    """The newest message whose suffix from it reaches the reserve (-1: the whole context fits)."""
    msg_index = len(sizes_suffix) - 2
    while msg_index >= 0:
        if tokens_of(base + sizes_suffix[msg_index]) >= reserve_tokens:
            break
        msg_index -= 1
    return msg_index


def _boundary_block(content: list[Any], base: Size, after: Size, reserve_tokens: float) -> int:
    """The last block of the boundary message that goes to the compressed side: blocks are kept newest first
    while the count stays within the reserve."""
    block_index = len(content) - 1
    kept = ZERO
    while block_index >= 0:
        kept = kept + block_size(content[block_index])
        if tokens_of(base + kept + after) > reserve_tokens:
            break
        block_index -= 1
    return block_index


def _no_result_without_call(content: list[Any], block_index: int, unfinished: set[Any]) -> int:
    """Move the cut so no kept tool result is without its call (repeat: a move can split another pair), never
    moving an unfinished call of the reply in progress to the compressed side."""
    unfinished_idx = [i for i, b in enumerate(content) if _is_call(b) and b.get("id") in unfinished]
    if unfinished_idx:
        block_index = min(block_index, min(unfinished_idx) - 1)
    while True:
        remain: dict[Any, int] = {}
        for i in range(len(content) - 1, block_index, -1):
            b = content[i]
            if isinstance(b, dict) and b.get("type") == "tool_result":
                remain[b.get("id")] = i
            elif _is_call(b):
                remain.pop(b.get("id"), None)
        if not remain:
            return block_index
        new_index = max(remain.values())
        if unfinished_idx and new_index >= min(unfinished_idx):
            block_index = min(i for i, b in enumerate(content) if _is_call(b) and b.get("id") in remain) - 1
        else:
            block_index = new_index


def split_context(context: Sequence[Any], fixed: Size, summary: Any, reserve_tokens: float,
                  reply_id: Any = None) -> Split:
    base = fixed + summary_size(summary)
    sizes = [message_size(m) for m in context]
    suffix = [ZERO] * (len(context) + 1)
    for i in range(len(context) - 1, -1, -1):
        suffix[i] = sizes[i] + suffix[i + 1]
    msg_index = _boundary_message(suffix, base, reserve_tokens)
    if msg_index < 0:
        return Split([], [copy_json(m) for m in context], reserve_used=reserve_tokens)
    unfinished = unfinished_tool_call_ids(context, reply_id)
    for index, msg in enumerate(context[:msg_index + 1]):
        if any(_is_call(b) and b.get("id") in unfinished for b in blocks_of(msg)):
            msg_index = index
            break
    compress = list(context[:msg_index])
    reserve = list(context[msg_index + 1:])
    boundary = context[msg_index]
    content = blocks_of(boundary)
    block_index = _boundary_block(content, base, suffix[msg_index + 1], reserve_tokens)
    block_index = _no_result_without_call(content, block_index, unfinished)
    head, tail = copy_json(boundary), copy_json(boundary)
    if isinstance(boundary, dict):
        head["content"] = copy_json(content[:block_index + 1])
        tail["content"] = copy_json(content[block_index + 1:])
    if head.get("content"):
        compress.append(head)
    if tail.get("content"):
        reserve.insert(0, tail)
    return Split(compress, reserve, msg_index, (block_index + 1, len(content)), reserve_tokens)


def _reply_usage(msgs: Sequence[Any], reply_id: Any, agent_name: str | None) -> tuple[Any, Any]:
    """(name, usage) of the reply in progress when it is the last message, the agent's own (its name), and carries
    a usage (Agent._get_last_msg, _get_reply_usage), else (None, None)."""
    last = msgs[-1] if msgs else None
    if (reply_id is None or not isinstance(last, dict) or last.get("role") != "assistant"
            or last.get("id") != reply_id or last.get("usage") is None
            or (agent_name is not None and last.get("name") != agent_name)):
        return None, None
    return last.get("name"), last.get("usage")


def zero_block_copy(context: Sequence[Any], reserve: Sequence[Any], reply_id: Any, now: datetime | None = None,
                    agent_name: str | None = None) -> dict[str, Any] | None:
    """The message AgentScope appends when the split compressed the reply in progress whole: the reply's id, name
    and usage, no blocks, the other Msg fields at their defaults (Msg(...).model_dump() order). `agent_name`: the
    agent's (agent.json `name`, else "QwenPaw"); None checks no name."""
    name, usage = _reply_usage(context, reply_id, agent_name)
    if usage is None or _reply_usage(reserve, reply_id, agent_name)[1] is not None:
        return None
    stamp = (now or datetime.now()).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return {"name": name, "content": [], "role": "assistant", "id": reply_id, "metadata": {}, "created_at": stamp,
            "usage": copy_json(usage), "finished_at": None, "finished_reason": None, "structured_output": None,
            "error": None}


def decide(context: Sequence[Any], fixed: Size, summary: Any, context_size: int, trigger_ratio: float,
           reserve_ratio: float, reply_id: Any = None, force: bool = False, now: datetime | None = None,
           agent_name: str | None = None) -> NativeDecision:
    t, r = effective_ratios(trigger_ratio, reserve_ratio)
    tokens = tokens_of(fixed + summary_size(summary) + sum((message_size(m) for m in context), ZERO))
    decision = NativeDecision(context_size, t, r, tokens, False, "")
    trigger = t * context_size
    if tokens < trigger and not force:
        decision.reason = f"{tokens:,} tokens < trigger {trigger:,.1f} (= {t:g}·C): no compaction"
        return decision
    if not context:
        decision.reason = (f"{tokens:,} tokens, nothing to compress: the context is empty"
                           + (" (the system prompt and summary alone reach the trigger; AgentScope raises here)"
                              if tokens >= trigger else ""))
        return decision
    split = split_context(context, fixed, summary, r * context_size, reply_id)
    if not split.compress:
        split = split_context(context, fixed, summary, 0.0, reply_id)
        split.fallback = True
        decision.notes.append(f"the reserve {r:g}·C leaves nothing to compress; AgentScope retries with reserve 0")
    kept_reply = zero_block_copy(context, split.reserve, reply_id, now, agent_name) if split.compress else None
    if kept_reply is not None:
        split.reserve.append(kept_reply)
        split.reply_copy = True
    decision.split = split
    decision.would_compact = bool(split.compress)
    how = "forced (like /compact)" if force and tokens < trigger else f">= trigger {trigger:,.1f} (= {t:g}·C)"
    decision.reason = f"{tokens:,} tokens {how}: compacts"
    return decision
