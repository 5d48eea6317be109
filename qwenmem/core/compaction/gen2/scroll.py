"""The scroll strategy's numbers and eviction split (agents/context/scroll/manager.py L435-750 @2.2.2.post1;
spec qwenpaw2-workspace.md §4.4): the decision, which gen2.evict carries out.

    output_reserve = min(4096, max(1, int(0.05·H)))      hard_limit = H − output_reserve
    trigger        = t·H (compacts only when tokens > trigger)
    reserve        = min(40000, max(r·H, min(10000, 0.1·H)))      pressure = max(trigger, reserve)

Pre-fold (compress step 3, gen2.scroll_fold): over the trigger and not forced, every eligible completed-turn
tool result is first replaced by a recovery pointer; at or under the trigger after that, nothing is evicted.

Split (on the folded context): AgentScope's splitter at `reserve`, whole messages restored to the tail, the whole active turn (from the
latest real user message) kept live, the replies of a user message that fell into the middle moved with it, and
never a message whose rows are not in history.db (qwenmem's own rule: nothing leaves the file unless it is there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from qwenmem.core.compaction.gen2.native import split_context
from qwenmem.core.compaction.gen2.scroll_fold import Fold, fold_candidates, folded
from qwenmem.core.compaction.gen2.tokens import ZERO, Size, message_size, tokens_of

# runtime stubs that do not start a turn (spec §2.3 qwenpaw_tag values)
CONTINUATION_TAGS = ("auto_continue", "loop_continuation", "rubric_evaluation")


def output_reserve(h: int) -> int:
    return min(4096, max(1, int(h * 0.05)))


def hard_limit(h: int) -> int:
    return h - output_reserve(h)


def reserve_tokens(h: int, r: float) -> float:
    return min(40_000, max(r * h, min(10_000, 0.1 * h)))


@dataclass
class ScrollDecision:
    context_size: int
    trigger_ratio: float
    reserve_ratio: float
    tokens: int
    would_compact: bool
    reason: str
    evict: list[int] = field(default_factory=list)  # context indexes that would leave the file
    keep: list[int] = field(default_factory=list)
    active_turn_start: int | None = None
    blocked_not_in_history: list[int] = field(default_factory=list)
    prefold: list[Fold] = field(default_factory=list)  # the tool results QwenPaw folds before splitting
    tokens_after_prefold: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def trigger(self) -> float:
        return self.trigger_ratio * self.context_size

    @property
    def reserve(self) -> float:
        return reserve_tokens(self.context_size, self.reserve_ratio)

    @property
    def hard_limit(self) -> int:
        return hard_limit(self.context_size)

    @property
    def output_reserve(self) -> int:
        return output_reserve(self.context_size)

    @property
    def pressure(self) -> float:
        return max(self.trigger, self.reserve)


def _tag(msg: Any) -> Any:
    meta = msg.get("metadata") if isinstance(msg, dict) else None
    return meta.get("qwenpaw_tag") if isinstance(meta, dict) else None


def active_turn_start(context: Sequence[Any], synthetic: Sequence[bool]) -> int | None:
    for i in range(len(context) - 1, -1, -1):
        msg = context[i]
        if (isinstance(msg, dict) and msg.get("role") == "user" and not synthetic[i]
                and _tag(msg) not in CONTINUATION_TAGS):
            return i
    return None


def decide(context: Sequence[Any], synthetic: Sequence[bool], in_history: Sequence[bool], fixed: Size,
           context_size: int, trigger_ratio: float, reserve_ratio: float, force: bool = False,
           scroll_state: Any = None) -> ScrollDecision:
    tokens = tokens_of(fixed + sum((message_size(m) for m in context), ZERO))
    d = ScrollDecision(context_size, trigger_ratio, reserve_ratio, tokens, False, "")
    d.active_turn_start = active_turn_start(context, synthetic)
    if tokens > d.hard_limit:
        d.notes.append(f"{tokens:,} tokens > hard limit {d.hard_limit:,}: QwenPaw raises CONTEXT_UNFIT unless "
                       "eviction and folding bring it under")
    if tokens <= d.trigger and not force:
        d.reason = f"{tokens:,} tokens <= trigger {d.trigger:,.1f} (= {trigger_ratio:g}·H): no eviction"
        d.keep = list(range(len(context)))
        return d
    prefold = "" if force else _prefold(d, context, synthetic, in_history, fixed, scroll_state)
    if prefold and d.tokens_after_prefold is not None and d.tokens_after_prefold <= d.trigger:
        d.reason = (f"{tokens:,} tokens > trigger {d.trigger:,.1f}, {prefold} {d.tokens_after_prefold:,} <= trigger: "
                    "no eviction")
        d.keep = list(range(len(context)))
        return d
    if prefold:
        context = folded(context, d.prefold)
    transcript = [i for i in range(len(context)) if not synthetic[i]]
    msgs = [context[i] for i in transcript]
    split = split_context(msgs, fixed, "", d.reserve)
    # whole messages for the tail: a split boundary message stays live
    tail = len(msgs) - len(split.reserve) if split.boundary is None else split.boundary
    if split.boundary is not None and split.boundary_blocks[0] == split.boundary_blocks[1]:
        tail = split.boundary + 1  # the boundary went entirely to the compressed side
    active = d.active_turn_start
    active_pos = transcript.index(active) if active is not None else len(msgs)
    tail = min(tail, active_pos)
    # the replies of a user message in the middle go with it
    while tail < active_pos and isinstance(msgs[tail], dict) and msgs[tail].get("role") != "user":
        tail += 1
    middle = list(range(tail))
    blocked = [transcript[i] for i in middle if not in_history[transcript[i]]]
    if blocked:
        first = transcript.index(blocked[0])
        # only the prefix whose rows are all in history.db may leave, and it ends at a turn boundary (a user
        # message stays with its replies)
        while first > 0 and not (isinstance(msgs[first], dict) and msgs[first].get("role") == "user"):
            first -= 1
        middle = list(range(first))
        d.blocked_not_in_history = blocked
        d.notes.append(f"{len(blocked)} message(s) of the middle have no rows in history.db; eviction stops before "
                       "the first of them")
    d.evict = [transcript[i] for i in middle]
    d.keep = [i for i in range(len(context)) if i not in set(d.evict)]
    d.would_compact = bool(d.evict)
    how = "forced (like /compact)" if force and tokens <= d.trigger else f"> trigger {d.trigger:,.1f}"
    then = f" ({prefold} {d.tokens_after_prefold:,})" if prefold else ""
    d.reason = (f"{tokens:,} tokens {how}{then}: evicts {len(d.evict)} message(s)" if d.evict else
                f"{tokens:,} tokens {how}{then}, but nothing can be evicted (active turn / reserve / history.db)")
    return d


def _prefold(d: ScrollDecision, context: Sequence[Any], synthetic: Sequence[bool], in_history: Sequence[bool],
             fixed: Size, scroll_state: Any) -> str:
    """Compress step 3 (manager.py ScrollContextManager.compress -> _batch_fold_completed_tool_results): fills
    d.prefold / d.tokens_after_prefold and returns the phrase for the reason ("" when nothing is folded). QwenPaw
    persists first and does nothing when that fails (step 1), so without history.db rows nothing is folded either."""
    if not all(h for h, s in zip(in_history, synthetic) if not s):
        return ""
    d.prefold = fold_candidates(context, synthetic, d.active_turn_start, scroll_state)
    if not d.prefold:
        return ""
    d.tokens_after_prefold = tokens_of(fixed + sum((message_size(m) for m in folded(context, d.prefold)), ZERO))
    return f"folding {len(d.prefold)} completed tool result(s) first (as QwenPaw does) leaves"
