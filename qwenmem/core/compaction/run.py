"""Orchestration of the three tiers for one session (the read-only --check lives in check.py).

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
from datetime import datetime

from qwenmem.core.compaction import dialog as dialog_mod
from qwenmem.core.compaction import longterm
from qwenmem.core.compaction.check import (CheckReport, CompactOptions, CompactReport, TierReport, check_session,
                                           in_context, message_id, plan_for, prune_limits, settings_dir,
                                           summary_budget, unusable_reason)
from qwenmem.core.compaction.prune import PruneResult, prune_tool_results
from qwenmem.core.compaction.summarize import ExtractiveSummarizer, LLMSummarizer, SummaryOutcome
from qwenmem.core.compaction.threshold import tool_ids_aligned
from qwenmem.core.errors import LLMError, QwenmemError, UsageError
from qwenmem.core.errors import ChangedUnderneathError
from qwenmem.core.fsio import atomic_write_bytes, ensure_unchanged, exclusive_lock, timestamp_slug
from qwenmem.core.safety import replace_preserving
from qwenmem.core.sessions import CORRUPT, SessionDoc, SessionRef, encode_session, load_session
from qwenmem.core.settings import Settings, user_tz
from qwenmem.core.tokens import TokenCounter, get_counter, message_tokens
from qwenmem.core.workspace import Workspace

__all__ = ["CheckReport", "CompactOptions", "CompactReport", "check_session", "compact_session_async",
           "compact_sessions", "choose_summarizer"]


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
        text = await summarizer.daily_note(removed, budget, thinking)
        return text.encode("utf-8", "replace").decode("utf-8"), ""  # a lone surrogate from the LLM becomes "?"
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
    problem = unusable_reason(loaded)
    if problem:
        report.status, report.error, report.error_kind = "skipped", problem, "damaged"
        return report
    assert loaded.session is not None and loaded.snapshot is not None  # unusable_reason refused the others
    report.check = check_session(ws, ref, settings, opts)
    work = SessionDoc(copy.deepcopy(loaded.session.doc), loaded.session.layout)
    entries, active = in_context(work)
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
    budget, plan, tokens = plan_for(work, msgs, settings, opts, counter)
    report.kept_ids = [message_id(msgs[i]) for i in plan.keep]
    compacting = opts.summarize and plan.would_compact
    removed = [msgs[i] for i in plan.remove] if compacting else []
    report.removed_ids = [message_id(m) for m in removed]
    report.tier2 = TierReport(False, after_prune, after_prune, {
        "reason": plan.reason if opts.summarize else "tier 2 disabled (--prune-only)", "threshold": budget.left,
        "reserve": budget.reserve, "summarizer": None, "chunks": 0,
        "llm_calls": 0, "summary_tokens_before": counter.count(loaded.session.summary), "summary_tokens_after": None,
        "removed_messages": 0, "kept_messages": len(msgs), "aligned": tool_ids_aligned(msgs),
        "fallback": plan.fallback})
    if not compacting:
        report.kept_ids = [message_id(m) for m in msgs]
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
                note = longterm.plan_note(ws, now, ref.key, message_id(removed[0]), message_id(removed[-1]),
                                          len(removed), body)
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
    report.tier3 = TierReport(False, 0, 0, {"path": None, "duplicate": False, "written": False, "chars": 0})
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

    data = encode_session(work.doc)  # before any write: an unencodable document must stop us while nothing changed
    ensure_unchanged(loaded.snapshot)
    for off in pruned.offloads:
        atomic_write_bytes(off.path, off.text.encode("utf-8"))
    dialog_mod.write_dialog(dplan)
    if note is not None and note.text:
        longterm.write_note(ws, note, stamp)
        report.tier3.detail["written"] = True
    try:
        kept_at = replace_preserving(ws, ref.path, data, loaded.snapshot, area="backups", stamp=stamp)
    except ChangedUnderneathError:
        # The offloads above are append-only and de-duplicated on a rerun, so saying so is the whole truth.
        raise ChangedUnderneathError(
            f"{ref.rel}: changed on disk while compacting (is QwenPaw running?); the session was not written. "
            "Removed messages had already been appended to dialog/ (and the daily note to memory/); "
            "a rerun will not duplicate them") from None
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

    from qwenmem.core.compaction2.check import is_gen2_file

    gen2_settings = None

    async def one(ref: SessionRef) -> CompactReport:
        nonlocal gen2_settings
        if is_gen2_file(ref.path):  # QwenPaw 2.x: its own math and writer (qwenmem.core.compaction2)
            from qwenmem.core.compaction2.run import compact_gen2_async
            from qwenmem.core.settings2 import load_gen2_settings

            gen2_settings = gen2_settings or load_gen2_settings(ws)
            return await compact_gen2_async(ws, ref, settings, gen2_settings, opts, stamp)
        return await compact_session_async(ws, ref, settings, opts, summarizer, stamp)

    async def run_all() -> list[CompactReport]:
        out = []
        for ref in refs:
            if len(refs) == 1:
                out.append(await one(ref))
                continue
            try:
                out.append(await one(ref))
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
