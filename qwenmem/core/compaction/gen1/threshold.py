"""When QwenPaw compacts, and which messages it keeps (spec qwenpaw-workspace.md §4.3-4.4, reme-index.md §4.3).

Two agent.json key layouts (QwenPaw 1.x releases) are reproduced exactly:
  * current (Q@HEAD LightContextManager): T=int(M*0.8), R=int(M*0.1), S=count(sys_prompt)+count(summary) as two
    separately rounded counts, L=T-S; compaction when the in-context message tokens reach L; the kept suffix is the
    largest suffix within R whose tool_use ids equal its tool_result ids (AsMsgHandler.context_check).
  * legacy (Q@PRE MemoryCompactionHook + ReMe 0.3.1.8): T=int(max_input_length*memory_compact_ratio) (98304 by
    default), S=count(sys_prompt+summary) as one count, ReMe asserts L>R (else compaction silently never happens);
    the kept set grows newest-first, pulling in the tool_use messages its tool_results depend on, and stops at the
    first message that does not fit; a misaligned result falls back to keeping the last 3, 2, 1 messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from qwenmem.core.settings.gen1 import CURRENT, LEGACY, ConfigLayout
from qwenmem.core.tokens import TokenCounter

LEGACY_KEEP_RECENT = 3  # QWENPAW_MEMORY_COMPACT_KEEP_RECENT default, used by the Q@PRE fallback


@dataclass(frozen=True)
class Budget:
    config_layout: ConfigLayout  # each has its own formula
    max_input_length: int
    threshold_ratio: float
    reserve_ratio: float
    threshold: int  # T
    reserve: int  # R
    system_tokens: int
    summary_tokens: int
    fixed_tokens: int  # S, as that key layout computes it
    left: int  # L = T - S
    blocked: str = ""  # why compaction can never trigger with these numbers ("" when it can)


def compute_budget(config_layout: ConfigLayout, max_input_length: int, threshold_ratio: float, reserve_ratio: float,
                   sys_prompt: str, summary: str, counter: TokenCounter) -> Budget:
    threshold = int(max_input_length * threshold_ratio)
    reserve = int(max_input_length * reserve_ratio)
    system_tokens, summary_tokens = counter.count(sys_prompt), counter.count(summary)
    if config_layout == LEGACY:
        fixed = counter.count(sys_prompt + summary)
    else:
        fixed = system_tokens + summary_tokens
    left = threshold - fixed
    blocked = ""
    if left <= 0:
        blocked = (f"system prompt + summary ({fixed} tokens) already use the whole threshold {threshold}; "
                   "QwenPaw skips compaction (it suggests /clear)")
    elif config_layout == LEGACY and left <= reserve:
        blocked = (f"left threshold {left} is not above the reserve {reserve}; ReMe's context check asserts L > R "
                   "and silently never compacts")
    return Budget(config_layout, max_input_length, threshold_ratio, reserve_ratio, threshold, reserve, system_tokens,
                  summary_tokens, fixed, left, blocked)


def _ids(msg: Any, kind: str) -> list[str]:
    content = msg.get("content") if isinstance(msg, dict) else None
    if not isinstance(content, list):
        return []
    # QwenPaw ignores blocks with an empty id (`if tool_id := block.get("id")`)
    return [str(b["id"]) for b in content if isinstance(b, dict) and b.get("type") == kind and b.get("id")]


def tool_ids_aligned(messages: Sequence[Any]) -> bool:
    """True when the set of tool_use ids equals the set of tool_result ids (validate_tool_ids_alignment)."""
    uses: set[str] = set()
    results: set[str] = set()
    for msg in messages:
        uses.update(_ids(msg, "tool_use"))
        results.update(_ids(msg, "tool_result"))
    return uses == results


def keep_count_current(messages: Sequence[Any], tokens: Sequence[int], reserve: int) -> int:
    """Q@HEAD: the largest aligned suffix whose token sum stays within the reserve (0 when none is aligned)."""
    best = 0
    kept = 0
    uses: dict[str, int] = {}
    results: dict[str, int] = {}
    unmatched = 0  # ids present on one side only; the suffix is aligned when this is 0 (kept incrementally: O(n))

    def add(side: dict[str, int], other: dict[str, int], tid: str) -> int:
        before = (side.get(tid, 0) > 0) != (other.get(tid, 0) > 0)
        side[tid] = side.get(tid, 0) + 1
        after = (side[tid] > 0) != (other.get(tid, 0) > 0)
        return int(after) - int(before)

    for k in range(1, len(messages) + 1):
        kept += tokens[-k]
        if kept > reserve:
            break
        msg = messages[-k]
        for tid in _ids(msg, "tool_use"):
            unmatched += add(uses, results, tid)
        for tid in _ids(msg, "tool_result"):
            unmatched += add(results, uses, tid)
        if unmatched == 0:
            best = k
    return best


def keep_indices_legacy(messages: Sequence[Any], tokens: Sequence[int], reserve: int) -> tuple[list[int], bool]:
    """Q@PRE (ReMe 0.3.1.8 context_check): newest-first greedy keep with tool_use dependencies.

    Returns the kept indices in order and whether they are aligned. The kept set need not be a contiguous suffix:
    a dependency can sit older than the first message that did not fit.
    """
    use_at: dict[str, int] = {}
    for idx, msg in enumerate(messages):
        for tid in _ids(msg, "tool_use"):
            use_at[tid] = idx
    keep: set[int] = set()
    accumulated = 0
    for i in range(len(messages) - 1, -1, -1):
        if i in keep:
            continue
        if accumulated + tokens[i] > reserve:
            break
        deps = {use_at[t] for t in _ids(messages[i], "tool_result") if t in use_at and use_at[t] not in keep
                and use_at[t] != i}
        extra = sum(tokens[d] for d in deps)
        if accumulated + tokens[i] + extra > reserve:
            break
        keep.add(i)
        keep.update(deps)
        accumulated += tokens[i] + extra
    ordered = sorted(keep)
    return ordered, tool_ids_aligned([messages[i] for i in ordered])


def legacy_fallback_keep(messages: Sequence[Any], keep_recent: int = LEGACY_KEEP_RECENT) -> int:
    """MemoryCompactionHook's fallback: keep the last 3, 2 or 1 messages, the first count whose tail is aligned."""
    n = keep_recent
    while n > 0 and not tool_ids_aligned(messages[max(len(messages) - n, 0):]):
        n -= 1
    return n


@dataclass
class Plan:
    """The decision for one list of in-context messages: what is kept and what is compacted (indices into it)."""

    budget: Budget
    total_tokens: int
    would_compact: bool
    reason: str
    keep: list[int] = field(default_factory=list)
    remove: list[int] = field(default_factory=list)
    keep_tokens: int = 0
    aligned: bool = True
    fallback: str = ""

    @property
    def room(self) -> int:
        """Tokens left before compaction triggers (negative once past the threshold)."""
        return self.budget.left - self.total_tokens


def plan_compaction(messages: Sequence[Any], tokens: Sequence[int], budget: Budget, force: bool = False) -> Plan:
    total = sum(tokens)
    everything = list(range(len(messages)))
    if not messages:
        return Plan(budget, 0, False, "no messages in context", everything, [], 0)
    if not force:
        if budget.blocked:
            return Plan(budget, total, False, budget.blocked, everything, [], total)
        if total < budget.left:
            return Plan(budget, total, False, f"{total} message tokens are below the threshold {budget.left}",
                        everything, [], total)
    reason = "forced" if force and (budget.blocked or total < budget.left) else (
        f"{total} message tokens reach the threshold {budget.left}")
    if budget.config_layout == LEGACY:
        keep, aligned = keep_indices_legacy(messages, tokens, budget.reserve)
        fallback = ""
        if not aligned:
            n = legacy_fallback_keep(messages)
            keep = list(range(len(messages) - n, len(messages)))
            fallback = f"kept set was not tool-aligned; fell back to keeping the last {n} message(s)"
            aligned = tool_ids_aligned([messages[i] for i in keep])
    else:
        n = keep_count_current(messages, tokens, budget.reserve)
        keep = list(range(len(messages) - n, len(messages)))
        aligned, fallback = True, ""
    kept = set(keep)
    remove = [i for i in everything if i not in kept]
    if not remove:
        return Plan(budget, total, False, "every message fits in the reserve; nothing to compact", keep, [],
                    sum(tokens[i] for i in keep), aligned, fallback)
    return Plan(budget, total, True, reason, keep, remove, sum(tokens[i] for i in keep), aligned, fallback)


__all__ = ["Budget", "Plan", "compute_budget", "plan_compaction", "tool_ids_aligned", "keep_count_current",
           "keep_indices_legacy", "legacy_fallback_keep", "CURRENT", "LEGACY"]
