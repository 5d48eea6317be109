"""Options, report types and the read-only `--check`: tokens per part, threshold, room, and the planned split."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from qwenmem.core.compaction.prune import PruneLimits, prune_tool_results
from qwenmem.core.compaction.threshold import Budget, Plan, compute_budget, plan_compaction
from qwenmem.core.errors import UsageError, WorkspaceError
from qwenmem.core.sessions import CORRUPT, SessionDoc, SessionRef, load_session
from qwenmem.core.settings import LEGACY, Settings
from qwenmem.core.tokens import TokenCounter, get_counter, message_tokens, tool_output_tokens
from qwenmem.core.workspace import Workspace


@dataclass
class CompactOptions:
    max_input_length: int | None = None
    threshold_ratio: float | None = None
    reserve_ratio: float | None = None
    tokenizer: str = "estimate"
    force: bool = False
    dry_run: bool = False
    prune: bool = True
    summarize: bool = True
    longterm: bool | None = None  # None: agent.json summarize_when_compact
    summarizer: str = "auto"  # auto | llm | extractive
    recent_n: int | None = None
    old_max_bytes: int | None = None
    recent_max_bytes: int | None = None
    extra_instruction: str = ""
    llm: Any = None  # core.llm.LLMConfig
    now: datetime | None = None
    gen2_check: Any = None  # compaction2.check.Check2Options (2.x files: C override, system/tools tokens)


@dataclass
class Tokens:
    system: int
    summary: int
    messages: int
    tool_outputs: int

    @property
    def total(self) -> int:
        return self.system + self.summary + self.messages


@dataclass
class CheckReport:
    key: str
    path: str
    generation: str
    tokenizer: str
    tokens: Tokens
    budget: Budget
    message_count: int
    legacy_compressed: int
    would_compact: bool
    reason: str
    room: int
    kept_ids: list[str]
    removed_ids: list[str]
    keep_tokens: int
    aligned: bool
    fallback: str = ""
    prunable_outputs: int = 0
    tokens_after_prune: int = 0
    health: str = "ok"
    problems: list[str] = field(default_factory=list)


@dataclass
class TierReport:
    ran: bool = False
    tokens_before: int = 0
    tokens_after: int = 0
    detail: dict = field(default_factory=dict)


@dataclass
class CompactReport:
    key: str
    path: str
    status: str  # compacted | pruned | unchanged | dry-run | skipped | failed
    check: CheckReport | None = None
    tier1: TierReport = field(default_factory=TierReport)
    tier2: TierReport = field(default_factory=TierReport)
    tier3: TierReport = field(default_factory=TierReport)
    kept_ids: list[str] = field(default_factory=list)
    removed_ids: list[str] = field(default_factory=list)
    context_tokens_before: int = 0
    context_tokens_after: int = 0
    backup: str = ""
    warnings: list[str] = field(default_factory=list)
    error: str = ""
    error_kind: str = ""


# --------------------------------------------------------------------------------------------- helpers


def effective_numbers(settings: Settings, opts: CompactOptions) -> tuple[int, float, float]:
    m = opts.max_input_length or settings.max_input_length
    t = opts.threshold_ratio if opts.threshold_ratio is not None else settings.compact_threshold_ratio
    r = opts.reserve_ratio if opts.reserve_ratio is not None else settings.reserve_threshold_ratio
    if m <= 0 or not 0 < t <= 1 or not 0 <= r < 1:
        raise UsageError(f"max input length must be > 0 and ratios in (0, 1]: got {m}, {t}, {r}")
    return m, t, r


def settings_dir(ws: Workspace, configured: str):
    """A directory named in agent.json (dialog_path, tool_results_cache), refused if it leaves the workspace."""
    from qwenmem.core.errors import ConfigError, UnsafePathError

    try:
        return ws.resolve_inside(configured)
    except UnsafePathError:
        raise ConfigError(ws.path / "agent.json", f"{configured!r} points outside the workspace; "
                          "qwenmem will not write there") from None


def prune_limits(settings: Settings, opts: CompactOptions, ws: Workspace) -> PruneLimits:
    return PruneLimits(
        recent_n=opts.recent_n if opts.recent_n is not None else settings.pruning_recent_n,
        old_max_bytes=opts.old_max_bytes if opts.old_max_bytes is not None else settings.pruning_old_msg_max_bytes,
        recent_max_bytes=(opts.recent_max_bytes if opts.recent_max_bytes is not None
                          else settings.pruning_recent_msg_max_bytes),
        exempt_extensions=tuple(settings.exempt_file_extensions),
        exempt_tools=tuple(settings.exempt_tool_names),
        cache_dir=str(settings_dir(ws, settings.tool_results_cache).relative_to(ws.path.resolve())),
    )


def summary_budget(settings: Settings, opts: CompactOptions) -> int:
    m, t, _ = effective_numbers(settings, opts)
    # Q@HEAD formats the summarizer input within T; ReMe (Q@PRE) within int(M * ratio * 0.95)
    return int(m * t * 0.95) if settings.generation == LEGACY else int(m * t)


def in_context(doc: SessionDoc) -> tuple[list, list[int]]:
    entries = doc.entries()
    return entries, [i for i, e in enumerate(entries) if not e.compressed]


def message_id(msg: Any) -> str:
    return str(msg.get("id")) if isinstance(msg, dict) and msg.get("id") is not None else "?"


def unusable_reason(loaded) -> str:
    if loaded.session is None or loaded.health == CORRUPT:
        return "damaged (" + "; ".join(loaded.problems[:2]) + "); run `qwenmem sessions repair` first"
    if any("lone surrogate" in p for p in loaded.problems):
        return "holds lone surrogate characters; run `qwenmem sessions repair` first"
    return ""


def plan_for(doc: SessionDoc, msgs: list, settings: Settings, opts: CompactOptions, counter: TokenCounter
              ) -> tuple[Budget, Plan, list[int]]:
    m, t, r = effective_numbers(settings, opts)
    budget = compute_budget(settings.generation, m, t, r, doc.sys_prompt, doc.summary, counter)
    tokens = [message_tokens(x, counter) for x in msgs]
    return budget, plan_compaction(msgs, tokens, budget, opts.force), tokens


# --------------------------------------------------------------------------------------------- check


def check_session(ws: Workspace, ref: SessionRef, settings: Settings, opts: CompactOptions) -> CheckReport:
    counter = get_counter(opts.tokenizer, settings.token_count_estimate_divisor)
    loaded = load_session(ref)
    problem = unusable_reason(loaded)
    if problem:
        raise WorkspaceError(f"{ref.rel}: {problem}")
    doc = loaded.session
    assert doc is not None  # unusable_reason refuses a session that did not load
    entries, active = in_context(doc)
    msgs = [entries[i].msg for i in active]
    budget, plan, tokens = plan_for(doc, msgs, settings, opts, counter)
    pruned_msgs = copy.deepcopy(msgs)
    pruned = prune_tool_results(pruned_msgs, prune_limits(settings, opts, ws), ws.path)
    return CheckReport(
        key=ref.key, path=ref.rel, generation=settings.generation, tokenizer=counter.name,
        tokens=Tokens(budget.system_tokens, budget.summary_tokens, sum(tokens),
                      sum(tool_output_tokens(x, counter) for x in msgs)),
        budget=budget, message_count=len(msgs), legacy_compressed=len(entries) - len(active),
        would_compact=plan.would_compact, reason=plan.reason, room=plan.room,
        kept_ids=[message_id(msgs[i]) for i in plan.keep], removed_ids=[message_id(msgs[i]) for i in plan.remove],
        keep_tokens=plan.keep_tokens, aligned=plan.aligned, fallback=plan.fallback,
        prunable_outputs=len(pruned.changes),
        tokens_after_prune=sum(message_tokens(x, counter) for x in pruned_msgs),
        health=loaded.health, problems=loaded.problems)
