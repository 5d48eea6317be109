"""Compaction of one QwenPaw 1.x session: the three tiers in memory, then the writes (the run over several sessions,
of either generation, is qwenmem.core.compaction.run).

Order of events for a real run (under the workspace lock, taken by the run):
  1. read each session once, with a snapshot (the run's read); refuse corrupt files (repair them first) and lone
     surrogates;
  2. tier 1 on a copy: cut tool outputs (offload texts kept in memory for now);
  3. threshold decision on the pruned messages (or --force); if it compacts:
     tier 2 (summary) runs while tier 3 (daily-log note) runs concurrently; a tier-2 failure cancels tier 3 and
     nothing at all is written;
  4. writes, each durable, in an order where a crash at any point loses nothing and a rerun duplicates nothing:
     offload files → dialog/*.jsonl (deduplicated by message id) → memory/<date>.md (marker-deduplicated)
     → the session file (original bytes backed up, refused if it changed since step 1).
Steps 1-3 make no write and are the only ones that wait (for an LLM): `prepare_gen1` does them and returns step 4.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from qwenmem.core.jsonsafe import copy_json
from qwenmem.core.compaction import dialog as dialog_mod
from qwenmem.core.compaction.check import Commit, CompactReport
from qwenmem.core.compaction.context import CompactRun
from qwenmem.core.compaction.gen1 import longterm
from qwenmem.core.compaction.gen1.check import check_loaded, in_context, message_id, plan_for, unusable_reason
from qwenmem.core.compaction.gen1.longterm import DailyNote
from qwenmem.core.compaction.gen1.prune import PruneResult, prune_tool_results
from qwenmem.core.compaction.gen1.summarize import ExtractiveSummarizer, LLMSummarizer, SummaryOutcome
from qwenmem.core.compaction.gen1.threshold import Budget, Plan, tool_ids_aligned
from qwenmem.core.compaction.tiers import LongtermDetail, PruneDetail, SummaryDetail, TierReport
from qwenmem.core.errors import ChangedUnderneathError, QwenmemError
from qwenmem.core.fsio import atomic_write_bytes, ensure_unchanged
from qwenmem.core.safety import replace_preserving
from qwenmem.core.session_model import gen1
from qwenmem.core.sessions import Entry, LoadedSession, SessionDoc, SessionRef, parse_any_session
from qwenmem.core.tokens import message_tokens

__all__ = ["prepare_gen1"]


@dataclass
class _Session1:
    """One 1.x session being compacted: the file as read, a working copy, and what each tier decided."""

    ref: SessionRef
    loaded: LoadedSession
    report: CompactReport
    work: SessionDoc
    entries: list[Entry]
    msgs: list[Any]  # the in-context messages of `work` (tier 1 cuts them in place)
    summary_before: int  # tokens of the summary as read
    pruned: PruneResult = field(default_factory=PruneResult)
    after_prune: int = 0
    budget: Budget | None = None
    plan: Plan | None = None
    removed: list[Any] = field(default_factory=list)
    longterm: bool = False
    outcome: SummaryOutcome | None = None
    note_body: str | None = None  # tier 3's text, before it is placed in the day's log
    note: DailyNote | None = None
    dialog: dialog_mod.DialogPlan = field(default_factory=dialog_mod.DialogPlan)

    @property
    def compacting(self) -> bool:
        return bool(self.removed)


def _start(run: CompactRun, ref: SessionRef, loaded: LoadedSession) -> _Session1 | CompactReport:
    """The working copy of a usable session, or the report of one that is skipped."""
    report = CompactReport(ref.key, ref.rel, "unchanged")
    problem = unusable_reason(loaded)
    if problem:
        report.status, report.error, report.error_kind = "skipped", problem, "damaged"
        return report
    assert loaded.session is not None and loaded.snapshot is not None  # unusable_reason refused the others
    report.check = check_loaded(run, ref, loaded)
    work = SessionDoc(copy_json(loaded.session.doc), loaded.session.layout)
    entries, active = in_context(work)
    s = _Session1(ref, loaded, report, work, entries, [entries[i].msg for i in active],
                  run.counter.count(loaded.session.summary))
    budget = report.check.budget
    report.context_tokens_before = budget.system_tokens + budget.summary_tokens + _tokens(run, s.msgs)
    return s


def _tokens(run: CompactRun, msgs: list[Any]) -> int:
    return sum(message_tokens(x, run.counter) for x in msgs)


def tier1_prune(run: CompactRun, s: _Session1) -> None:
    """Tier 1: cut large tool outputs of the working copy (the full texts are written later, before the session)."""
    opts, settings = run.opts, run.settings
    before = _tokens(run, s.msgs)
    enabled = bool(opts.prune and (settings.pruning_enabled or opts.recent_max_bytes or opts.old_max_bytes))
    if enabled:
        s.pruned = prune_tool_results(s.msgs, run.prune_limits, run.ws.path)
    s.after_prune = _tokens(run, s.msgs)
    changes = s.pruned.changes
    s.report.tier1 = TierReport(enabled, before, s.after_prune, PruneDetail(
        outputs_cut=sum(c.kind == "truncated" for c in changes),
        outputs_recut=sum(c.kind == "re-truncated" for c in changes),
        bytes_removed=sum(c.bytes_before - c.bytes_after for c in changes),
        offload_files=[run.ws.relative(o.path) for o in s.pruned.offloads], skipped=s.pruned.skipped))


def tier2_decide(run: CompactRun, s: _Session1) -> None:
    """Tier 2's decision on the pruned messages: what leaves the context (nothing below the threshold)."""
    s.budget, s.plan, _ = plan_for(run, s.work, s.msgs)
    if run.opts.summarize and s.plan.would_compact:
        s.removed = [s.msgs[i] for i in s.plan.remove]
        s.report.kept_ids = [message_id(s.msgs[i]) for i in s.plan.keep]
    else:
        s.report.kept_ids = [message_id(m) for m in s.msgs]
    s.report.removed_ids = [message_id(m) for m in s.removed]
    wanted = run.opts.longterm if run.opts.longterm is not None else run.settings.summarize_when_compact
    s.longterm = s.compacting and wanted


async def tier2_summary(run: CompactRun, s: _Session1) -> None:
    """Tier 2's summary of what leaves the context, and tier 3's note text. An LLM is asked for both at once (a
    tier-2 failure cancels tier 3 and propagates: nothing is written); a dry run does not call it."""
    if not s.compacting:
        return
    summarizer, budget, thinking = run.summarizer, run.summary_budget, run.settings.compact_with_thinking_block
    if isinstance(summarizer, ExtractiveSummarizer):
        s.outcome = summarizer.summarize(s.removed, s.work.summary, budget, thinking, run.opts.extra_instruction)
        if s.longterm:
            s.note_body = _utf8(summarizer.daily_note(s.removed, budget, thinking))
        return
    if run.opts.dry_run:
        return  # an LLM call costs money and time; a dry run only shows the split
    note_task = asyncio.create_task(tier3_note_text(run, summarizer, s)) if s.longterm else None
    try:
        s.outcome = await summarizer.summarize(s.removed, s.work.summary, budget, thinking, run.opts.extra_instruction)
    except BaseException:
        if note_task:
            note_task.cancel()
            await asyncio.gather(note_task, return_exceptions=True)
        raise
    if note_task:
        await note_task


def _utf8(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate from the LLM becomes "?"


async def tier3_note_text(run: CompactRun, summarizer: LLMSummarizer, s: _Session1) -> None:
    """Tier 3's text from the LLM. A failure here must not sink tier 2: fall back to the extractive note."""
    budget, thinking = run.summary_budget, run.settings.compact_with_thinking_block
    try:
        s.note_body = _utf8(await summarizer.daily_note(s.removed, budget, thinking))
    except QwenmemError as exc:
        s.note_body = ExtractiveSummarizer(run.counter).daily_note(s.removed, budget, thinking)
        s.report.warnings.append(f"tier 3: the LLM failed ({exc}); wrote the extractive note instead")


def tier2_apply(run: CompactRun, s: _Session1) -> None:
    """Tier 2 on the working copy: the removed messages leave it and the new summary replaces the old one.
    Legacy "compressed"-marked items are not in context; they stay where they are, untouched."""
    assert s.plan is not None and s.budget is not None  # tier2_decide ran
    if s.compacting:
        removed = {id(m) for m in s.removed}
        s.work.set_entries([e for e in s.entries if id(e.msg) not in removed])
        if s.outcome is not None:
            s.work.summary = s.outcome.text
        kept = [s.msgs[i] for i in s.plan.keep]
        if not tool_ids_aligned(kept):
            s.report.warnings.append("the kept messages are not tool-aligned (the session was already unpaired)")
    else:
        kept = s.msgs
    counter = run.counter
    s.report.context_tokens_after = counter.count(s.work.sys_prompt) + counter.count(s.work.summary) + _tokens(
        run, [e.msg for e in s.work.entries() if not e.compressed])
    s.report.tier2 = TierReport(s.compacting, s.after_prune, _tokens(run, kept) if s.compacting else s.after_prune,
                                _summary_detail(run, s, kept))


def _summary_detail(run: CompactRun, s: _Session1, kept: list[Any]) -> SummaryDetail:
    assert s.plan is not None and s.budget is not None
    reason = s.plan.reason if run.opts.summarize else "tier 2 disabled (--prune-only)"
    out = s.outcome
    if s.compacting:
        summarizer: str | None = out.summarizer if out else f"{run.summarizer.name} (not called in a dry run)"
    else:
        summarizer = None
    return SummaryDetail(
        reason=reason, threshold=s.budget.left, reserve=s.budget.reserve, summarizer=summarizer,
        chunks=out.chunks if out else 0, llm_calls=out.calls if out else 0, summary_tokens_before=s.summary_before,
        summary_tokens_after=out.output_tokens if out else None, removed_messages=len(s.removed),
        kept_messages=len(kept), aligned=tool_ids_aligned(kept), fallback=s.plan.fallback)


def tier3_plan(run: CompactRun, s: _Session1) -> None:
    """Tier 3: the note placed in the day's log (not written yet; a rerun finds its marker and adds nothing)."""
    if s.longterm and s.note_body is not None:
        now = run.now()
        s.note = longterm.plan_note(run.ws, now, s.ref.key, message_id(s.removed[0]), message_id(s.removed[-1]),
                                    len(s.removed), s.note_body)
    note = s.note
    s.report.tier3 = TierReport(s.longterm, 0, 0, LongtermDetail(
        path=run.ws.relative(note.path) if note else None, duplicate=bool(note and note.duplicate),
        chars=len(note.text) if note else 0))


def offload_plan(run: CompactRun, s: _Session1) -> None:
    """The removed messages' lines for dialog/<date>.jsonl, leaving out those a previous run already wrote."""
    if s.removed:
        s.dialog = dialog_mod.plan_dialog(run.dialog_dir, s.removed)
    detail = s.report.tier2.detail
    assert isinstance(detail, SummaryDetail)
    detail.dialog_files = [run.ws.relative(p) for p in s.dialog.files]
    detail.dialog_lines, detail.dialog_already_present = s.dialog.count, s.dialog.already_present


def write_session(run: CompactRun, s: _Session1) -> CompactReport:
    """Every write of the session, in the order that loses nothing and duplicates nothing on a rerun."""
    report, ref = s.report, s.ref
    changed = bool(s.pruned.changes) or s.compacting
    if run.opts.dry_run:
        report.status = "dry-run" if changed else "unchanged"
        return report
    if not changed:
        return report
    assert s.loaded.snapshot is not None  # a usable session was read with one
    data = gen1.encode(s.work.doc)  # before any write: an unencodable document must stop us while nothing changed
    ensure_unchanged(s.loaded.snapshot)
    for off in s.pruned.offloads:
        atomic_write_bytes(off.path, off.text.encode("utf-8"))
    dialog_mod.write_dialog(s.dialog)
    if s.note is not None and s.note.text:
        longterm.write_note(run.ws, s.note, run.stamp)
        assert isinstance(report.tier3.detail, LongtermDetail)
        report.tier3.detail.written = True
    try:
        kept_at = replace_preserving(run.ws, ref.path, data, s.loaded.snapshot, area="backups", stamp=run.stamp)
    except ChangedUnderneathError:
        # The offloads above are append-only and de-duplicated on a rerun, so saying so is the whole truth.
        raise ChangedUnderneathError(
            f"{ref.rel}: changed on disk while compacting (is QwenPaw running?); the session was not written. "
            "Removed messages had already been appended to dialog/ (and the daily note to memory/); "
            "a rerun will not duplicate them") from None
    report.backup = run.ws.relative(kept_at) if kept_at else ""
    report.status = "compacted" if s.compacting else "pruned"
    _verify(run, s, data)
    return report


def _verify(run: CompactRun, s: _Session1, written: bytes) -> None:
    """What we wrote (the exact bytes, not a second read of the file) must parse cleanly, and every removed message
    must be in dialog/."""
    again = parse_any_session(written)
    if again.session is None or again.corrupt:
        s.report.warnings.append(f"verification: the written session does not load ({'; '.join(again.problems)})")
    missing = dialog_mod.all_in_dialog(run.dialog_dir, s.removed) if s.removed else []
    if missing:
        s.report.warnings.append(f"verification: {len(missing)} removed message(s) not found in dialog/")


async def prepare_gen1(run: CompactRun, ref: SessionRef, loaded: LoadedSession) -> Commit:
    """Tiers 1-3 of a 1.x session in memory (the LLM is awaited here); returns the step that writes them."""
    s = _start(run, ref, loaded)
    if isinstance(s, CompactReport):
        skipped = s
        return lambda: skipped
    tier1_prune(run, s)
    tier2_decide(run, s)
    await tier2_summary(run, s)
    tier2_apply(run, s)

    def commit() -> CompactReport:
        tier3_plan(run, s)
        offload_plan(run, s)
        return write_session(run, s)

    return commit
