"""Orchestration of the three tiers for one session, and the read-only --check.

Order of events for a real run (under the workspace lock):
  1. read the session with a snapshot; refuse corrupt files (repair them first) and lone surrogates;
  2. tier 1 on a copy: cut tool outputs (offload texts kept in memory for now);
  3. threshold decision on the pruned messages (or --force); if it compacts:
     tier 2 (summary) runs while tier 3 (daily-log note) runs as a background asyncio task; a tier-2 failure
     cancels tier 3 and nothing at all is written;
  4. writes, each durable, in an order where a crash at any point loses nothing and a rerun duplicates nothing:
     offload files → dialog/*.jsonl (deduplicated by message id) → memory/<date>.md (marker-deduplicated)
     → the session file (original bytes backed up, refused if it changed since step 1).
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from qwenmem.core.compaction import dialog as dialog_mod
from qwenmem.core.compaction import longterm
from qwenmem.core.compaction.prune import PruneLimits, PruneResult, prune_tool_results
from qwenmem.core.compaction.summarize import ExtractiveSummarizer, LLMSummarizer, SummaryOutcome
from qwenmem.core.compaction.threshold import Budget, Plan, compute_budget, plan_compaction, tool_ids_aligned
from qwenmem.core.errors import LLMError, QwenmemError, UsageError, WorkspaceError
from qwenmem.core.fsio import atomic_write_bytes, ensure_unchanged, exclusive_lock, timestamp_slug
from qwenmem.core.safety import replace_preserving
from qwenmem.core.sessions import CORRUPT, SessionDoc, SessionRef, encode_session, load_session
from qwenmem.core.settings import LEGACY, Settings, user_tz
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


def _active(doc: SessionDoc) -> tuple[list, list[int]]:
    entries = doc.entries()
    return entries, [i for i, e in enumerate(entries) if not e.compressed]


def _mid(msg: Any) -> str:
    return str(msg.get("id")) if isinstance(msg, dict) and msg.get("id") is not None else "?"


def _usable(loaded) -> str:
    if loaded.session is None or loaded.health == CORRUPT:
        return "damaged (" + "; ".join(loaded.problems[:2]) + "); run `qwenmem sessions repair` first"
    if any("lone surrogate" in p for p in loaded.problems):
        return "holds lone surrogate characters; run `qwenmem sessions repair` first"
    return ""


def _plan_for(doc: SessionDoc, msgs: list, settings: Settings, opts: CompactOptions, counter: TokenCounter
              ) -> tuple[Budget, Plan, list[int]]:
    m, t, r = effective_numbers(settings, opts)
    budget = compute_budget(settings.generation, m, t, r, doc.sys_prompt, doc.summary, counter)
    tokens = [message_tokens(x, counter) for x in msgs]
    return budget, plan_compaction(msgs, tokens, budget, opts.force), tokens


# --------------------------------------------------------------------------------------------- check


def check_session(ws: Workspace, ref: SessionRef, settings: Settings, opts: CompactOptions) -> CheckReport:
    counter = get_counter(opts.tokenizer, settings.token_count_estimate_divisor)
    loaded = load_session(ref)
    problem = _usable(loaded)
    if problem:
        raise WorkspaceError(f"{ref.rel}: {problem}")
    doc = loaded.session
    entries, active = _active(doc)
    msgs = [entries[i].msg for i in active]
    budget, plan, tokens = _plan_for(doc, msgs, settings, opts, counter)
    pruned_msgs = copy.deepcopy(msgs)
    pruned = prune_tool_results(pruned_msgs, prune_limits(settings, opts, ws), ws.path)
    return CheckReport(
        key=ref.key, path=ref.rel, generation=settings.generation, tokenizer=counter.name,
        tokens=Tokens(budget.system_tokens, budget.summary_tokens, sum(tokens),
                      sum(tool_output_tokens(x, counter) for x in msgs)),
        budget=budget, message_count=len(msgs), legacy_compressed=len(entries) - len(active),
        would_compact=plan.would_compact, reason=plan.reason, room=plan.room,
        kept_ids=[_mid(msgs[i]) for i in plan.keep], removed_ids=[_mid(msgs[i]) for i in plan.remove],
        keep_tokens=plan.keep_tokens, aligned=plan.aligned, fallback=plan.fallback,
        prunable_outputs=len(pruned.changes),
        tokens_after_prune=sum(message_tokens(x, counter) for x in pruned_msgs),
        health=loaded.health, problems=loaded.problems)


# --------------------------------------------------------------------------------------------- compaction


def choose_summarizer(opts: CompactOptions, counter: TokenCounter, language: str):
    """(summarizer, announcement). The announcement says why the offline summarizer is used, if it is."""
    if opts.summarizer not in ("auto", "llm", "extractive"):
        raise UsageError(f"unknown summarizer {opts.summarizer!r}; choose auto, llm or extractive")
    if opts.summarizer == "extractive":
        return ExtractiveSummarizer(counter), ""
    if opts.llm is None:
        if opts.summarizer == "llm":
            raise UsageError("--summarizer llm needs an LLM: pass --llm-base-url/--llm-model or set "
                             "QWENMEM_LLM_BASE_URL and QWENMEM_LLM_MODEL")
        return ExtractiveSummarizer(counter), ("no LLM configured: using the offline extractive summarizer "
                                               "(--summarizer extractive)")
    from qwenmem.core.llm import ChatClient

    return LLMSummarizer(ChatClient(opts.llm), counter, language), ""


async def _daily_note_text(summarizer, removed: list, budget: int, thinking: bool, counter: TokenCounter
                           ) -> tuple[str, str]:
    """(note body, warning). An LLM failure here must not sink tier 2: fall back to the extractive note."""
    try:
        return await summarizer.daily_note(removed, budget, thinking), ""
    except QwenmemError as exc:
        text = await ExtractiveSummarizer(counter).daily_note(removed, budget, thinking)
        return text, f"tier 3: the LLM failed ({exc}); wrote the extractive note instead"


async def compact_session_async(ws: Workspace, ref: SessionRef, settings: Settings, opts: CompactOptions,
                                summarizer=None, stamp: str | None = None) -> CompactReport:
    """Run the tiers on one session. Raises QwenmemError (nothing written) on tier-2 failure or a changed file."""
    counter = get_counter(opts.tokenizer, settings.token_count_estimate_divisor)
    if summarizer is None:
        summarizer, _ = choose_summarizer(opts, counter, settings.language)
    stamp = stamp or timestamp_slug()
    report = CompactReport(ref.key, ref.rel, "unchanged")
    loaded = load_session(ref)
    problem = _usable(loaded)
    if problem:
        report.status, report.error, report.error_kind = "skipped", problem, "damaged"
        return report
    report.check = check_session(ws, ref, settings, opts)
    work = SessionDoc(copy.deepcopy(loaded.session.doc), loaded.session.layout)
    entries, active = _active(work)
    msgs = [entries[i].msg for i in active]
    before_msgs = sum(message_tokens(x, counter) for x in msgs)
    budget0 = report.check.budget
    report.context_tokens_before = budget0.system_tokens + budget0.summary_tokens + before_msgs

    # tier 1
    pruned = PruneResult()
    prune_enabled = opts.prune and (settings.pruning_enabled or opts.recent_max_bytes or opts.old_max_bytes)
    if prune_enabled:
        pruned = prune_tool_results(msgs, prune_limits(settings, opts, ws), ws.path)
    after_prune = sum(message_tokens(x, counter) for x in msgs)
    report.tier1 = TierReport(bool(prune_enabled), before_msgs, after_prune, {
        "outputs_cut": sum(c.kind == "truncated" for c in pruned.changes),
        "outputs_recut": sum(c.kind == "re-truncated" for c in pruned.changes),
        "bytes_removed": sum(c.bytes_before - c.bytes_after for c in pruned.changes),
        "offload_files": [ws.relative(o.path) for o in pruned.offloads],
        "skipped": pruned.skipped})

    # tier 2 decision on the pruned messages
    budget, plan, tokens = _plan_for(work, msgs, settings, opts, counter)
    report.kept_ids = [_mid(msgs[i]) for i in plan.keep]
    compacting = opts.summarize and plan.would_compact
    removed = [msgs[i] for i in plan.remove] if compacting else []
    report.removed_ids = [_mid(m) for m in removed]
    report.tier2 = TierReport(False, after_prune, after_prune, {"reason": plan.reason, "threshold": budget.left,
                                                                "reserve": budget.reserve})
    if not compacting:
        report.kept_ids = [_mid(m) for m in msgs]
    outcome: SummaryOutcome | None = None
    note: longterm.DailyNote | None = None
    do_longterm = compacting and (opts.longterm if opts.longterm is not None else settings.summarize_when_compact)
    if compacting:
        sbudget = summary_budget(settings, opts)
        thinking = settings.compact_with_thinking_block
        if opts.dry_run and isinstance(summarizer, LLMSummarizer):
            outcome = None  # an LLM call costs money and time; a dry run only shows the split
        else:
            note_task = (asyncio.create_task(_daily_note_text(summarizer, removed, sbudget, thinking, counter))
                         if do_longterm else None)
            try:
                outcome = await summarizer.summarize(removed, work.summary, sbudget, thinking, opts.extra_instruction)
            except BaseException:
                if note_task:
                    note_task.cancel()
                    await asyncio.gather(note_task, return_exceptions=True)
                raise
            if note_task:
                body, warning = await note_task
                if warning:
                    report.warnings.append(warning)
                now = (opts.now or datetime.now(tz=user_tz(settings))).astimezone(user_tz(settings))
                note = longterm.plan_note(ws, now, ref.key, _mid(removed[0]), _mid(removed[-1]), len(removed), body)
        removed_ids = {id(m) for m in removed}
        # legacy "compressed"-marked items are not in context; they stay where they are, untouched
        work.set_entries([e for e in entries if id(e.msg) not in removed_ids])
        if outcome is not None:
            work.summary = outcome.text
        kept_msgs = [msgs[i] for i in plan.keep]
        kept_tokens = sum(message_tokens(x, counter) for x in kept_msgs)
        report.tier2 = TierReport(True, after_prune, kept_tokens, {
            "reason": plan.reason, "threshold": budget.left, "reserve": budget.reserve,
            "summarizer": outcome.summarizer if outcome else f"{summarizer.name} (not called in a dry run)",
            "chunks": outcome.chunks if outcome else 0, "llm_calls": outcome.calls if outcome else 0,
            "summary_tokens_before": counter.count(loaded.session.summary),
            "summary_tokens_after": outcome.output_tokens if outcome else None,
            "removed_messages": len(removed), "kept_messages": len(kept_msgs), "aligned": tool_ids_aligned(kept_msgs),
            "fallback": plan.fallback})
        if not tool_ids_aligned(kept_msgs):
            report.warnings.append("the kept messages are not tool-aligned (the session was already unpaired)")
    system_after = counter.count(work.sys_prompt)
    report.context_tokens_after = system_after + counter.count(work.summary) + sum(
        message_tokens(e.msg, counter) for e in work.entries() if not e.compressed)
    dplan = dialog_mod.plan_dialog(settings_dir(ws, settings.dialog_path), removed) if removed else dialog_mod.DialogPlan()
    if do_longterm:
        report.tier3 = TierReport(True, 0, 0, {
            "path": ws.relative(note.path) if note else None,
            "duplicate": bool(note and note.duplicate), "written": False,
            "chars": len(note.text) if note else 0})
    report.tier2.detail["dialog_files"] = [ws.relative(p) for p in dplan.files]
    report.tier2.detail["dialog_lines"] = dplan.count
    report.tier2.detail["dialog_already_present"] = dplan.already_present

    changed = bool(pruned.changes) or compacting
    if opts.dry_run:
        report.status = "dry-run" if changed else "unchanged"
        return report
    if not changed:
        return report

    ensure_unchanged(loaded.snapshot)
    for off in pruned.offloads:
        atomic_write_bytes(off.path, off.text.encode("utf-8"))
    dialog_mod.write_dialog(dplan)
    if note is not None and note.text:
        longterm.write_note(ws, note, stamp)
        report.tier3.detail["written"] = True
    data = encode_session(work.doc)
    kept_at = replace_preserving(ws, ref.path, data, loaded.snapshot, area="backups", stamp=stamp)
    report.backup = ws.relative(kept_at) if kept_at else ""
    report.status = "compacted" if compacting else "pruned"
    _verify(report, ref, ws, settings, removed)
    return report


def _verify(report: CompactReport, ref: SessionRef, ws: Workspace, settings: Settings, removed: list) -> None:
    """Re-read what we wrote: it must parse cleanly and every removed message must be in dialog/."""
    again = load_session(ref)
    if again.session is None or again.health == CORRUPT:
        report.warnings.append(f"verification: the written session does not load ({'; '.join(again.problems)})")
    missing = dialog_mod.all_in_dialog(settings_dir(ws, settings.dialog_path), removed)
    if missing:
        report.warnings.append(f"verification: {len(missing)} removed message(s) not found in dialog/")


def compact_sessions(ws: Workspace, refs: list[SessionRef], settings: Settings, opts: CompactOptions
                     ) -> tuple[list[CompactReport], str]:
    """Compact several sessions under one workspace lock. Returns (reports, summarizer announcement).

    With a single session a failure propagates (exit code says why); with several, each failure is recorded in
    its report and the others still run.
    """
    counter = get_counter(opts.tokenizer, settings.token_count_estimate_divisor)
    summarizer, announcement = choose_summarizer(opts, counter, settings.language)
    stamp = timestamp_slug()

    async def run_all() -> list[CompactReport]:
        out = []
        for ref in refs:
            if len(refs) == 1:
                out.append(await compact_session_async(ws, ref, settings, opts, summarizer, stamp))
                continue
            try:
                out.append(await compact_session_async(ws, ref, settings, opts, summarizer, stamp))
            except QwenmemError as exc:
                from qwenmem.core.errors import ChangedUnderneathError, ValidationError

                kind = ("llm" if isinstance(exc, (LLMError, ValidationError)) else
                        "changed" if isinstance(exc, ChangedUnderneathError) else "error")
                out.append(CompactReport(ref.key, ref.rel, "failed", error=str(exc), error_kind=kind))
        return out

    if opts.dry_run:
        return asyncio.run(run_all()), announcement
    with exclusive_lock(ws.lock_path):
        return asyncio.run(run_all()), announcement


def with_retries(config, retries: int | None, timeout: float | None):
    if config is None:
        return None
    changes = {}
    if retries is not None:
        changes["max_retries"] = retries
    if timeout is not None:
        changes["timeout"] = timeout
    return replace(config, **changes) if changes else config
