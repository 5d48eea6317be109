"""`compact` for one QwenPaw 2.x session file, native strategy (spec qwenpaw2-workspace.md §4.3, §10).

Under the workspace lock (taken by the caller), in this order, so that a crash anywhere loses nothing and a rerun
duplicates nothing:
  1. read with a snapshot (once: the caller's read); refuse damaged files and lone surrogates (repair first);
  2. AgentScope's decision and split (gen2.native), the summary fields (LLM or offline extractive) rendered
     with AgentScope's summary_template, plus QwenPaw's offload reminder naming the dialog file;
  3. the compressed messages appended to dialog/<date>.jsonl in the 2.0 Msg shape (de-duplicated);
  4. the session file: original bytes backed up, replaced atomically (mode 0600), refused if it changed since 1.
Tier 1 (tool-result pruning, gen2.prune) runs first for both strategies; its artifacts are written before
the session names them. Scroll sessions: missing history.db rows are written first (gen2.history_write), then
gen2.evict; only messages whose rows are in history.db leave the file, re-checked with SQL just before the
session is written. Steps 1-2 of a native session write nothing (the LLM is awaited there); a scroll session needs
no LLM and does all its work in the commit step, since writing history.db rows is a write.
"""

from __future__ import annotations

import copy
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from qwenmem.core.jsonsafe import copy_json
from qwenmem.core.compaction.check import PARTIAL, CompactReport
from qwenmem.core.compaction.context import CompactRun
from qwenmem.core.compaction.tiers import (Gen2Decision, LongtermDetail, NativeDetail, PruneDetail, ScrollDetail,
                                           TierReport)
from qwenmem.core.compaction.gen2 import native
from qwenmem.core.compaction.gen2.check import (NATIVE, Gen2CheckReport, FileStrategy, check_gen2, file_strategy, fixed_parts,
                                            reply_id_of, compactable_state)
from qwenmem.core.compaction.gen2.dialog import DialogPlan, missing_from_dialog, plan_dialog, write_dialog
from qwenmem.core.compaction.gen2.evict import HistoryIndex
from qwenmem.core.compaction.gen2.prune import PruneOutcome, prune
from qwenmem.core.compaction.gen2.summary import Fields, extractive_fields, llm_fields
from qwenmem.core.compaction.gen2.tokens import Size, count_tokens
from qwenmem.core.errors import ChangedUnderneathError
from qwenmem.core.fsio import atomic_write_bytes, ensure_unchanged
from qwenmem.core.safety import preserve_original
from qwenmem.core.session_model import gen2
from qwenmem.core.sessions import CORRUPT, LoadedSession, SessionRef, parse_any_session

SESSION_MODE = 0o600

Commit = Callable[[], CompactReport]


def unusable_parts(doc: dict[str, Any] | None, corrupt: bool, problems: list[str]) -> str:
    if doc is None or corrupt:
        return "damaged (" + "; ".join(problems[:2]) + "); run `qwenmem sessions repair` first"
    if any("lone surrogate" in p for p in problems):
        return "holds lone surrogate characters; run `qwenmem sessions repair` first"
    if compactable_state(doc) is None:
        return "agent.state.context is not a list; run `qwenmem sessions repair` first"
    return ""


def unusable_gen2(loaded: LoadedSession) -> str:
    return unusable_parts(loaded.gen2_doc, loaded.health == CORRUPT, loaded.problems)


def _written_loads(data: bytes) -> str:
    """Why the bytes just written would not load ("" when they do): the exact bytes, not a second read."""
    again = parse_any_session(data)
    return unusable_parts(again.gen2_doc, again.corrupt, again.problems)


@dataclass
class _Session2:
    """One 2.x session being compacted: the file as read, a working copy of its document, and the tiers' results."""

    ref: SessionRef
    loaded: LoadedSession
    report: CompactReport
    check: Gen2CheckReport
    doc: dict[str, Any]
    state: dict[str, Any]
    context: list[Any]  # a copy of state.context (tier 1 cuts it in place)
    summary: Any
    strategy: FileStrategy
    fixed: Size
    pruned: PruneOutcome = field(default_factory=PruneOutcome)
    history_unwritable: str = ""  # why history.db rows could not be written (a lock held past the busy timeout)


def _start(run: CompactRun, ref: SessionRef, loaded: LoadedSession) -> _Session2 | CompactReport:
    report = CompactReport(ref.key, ref.rel, "unchanged")
    problem = unusable_gen2(loaded)
    if problem:
        report.status, report.error, report.error_kind = "skipped", problem, "damaged"
        return report
    check = check_gen2(run, ref, loaded)
    report.check = check
    doc: dict[str, Any] = copy_json(loaded.gen2_doc or {})
    state = compactable_state(doc)
    assert state is not None  # unusable_gen2 checked it
    context = list(gen2.context_in(state) or [])
    report.context_tokens_before = report.context_tokens_after = check.terms.total
    report.kept_ids = list(check.kept_ids) if check.would_compact else [str(m.get("id")) for m in context]
    strategy, _ = file_strategy(doc, run.gen2_settings.strategy)
    system, tools = fixed_parts(run, ref, doc, strategy)
    return _Session2(ref, loaded, report, check, doc, state, context, gen2.summary_in(state) or "", strategy,
                     system.size + tools.size)


def tier1_prune(run: CompactRun, s: _Session2) -> None:
    """Cut large tool outputs in place in the context copy, as QwenPaw's pruning middleware does."""
    opts = run.opts
    if not (opts.prune and (run.settings.pruning_enabled or opts.recent_max_bytes or opts.old_max_bytes)):
        return
    before = count_tokens(s.context, s.fixed, s.summary)
    s.pruned = pruned = prune(s.context, run.gen2_prune_limits(s.strategy != NATIVE))
    after = count_tokens(s.context, s.fixed, s.summary)
    s.report.tier1 = TierReport(True, before, after, PruneDetail(
        outputs_cut=pruned.cut, outputs_recut=pruned.recut, bytes_removed=pruned.bytes_removed,
        offload_files=[run.ws.relative(a.path) for a in pruned.artifacts], skipped=pruned.skipped))
    s.report.context_tokens_after = after


def _not_compacted(run: CompactRun, s: _Session2, tokens: int, reason: str) -> None:
    # scroll reports its own reason under --prune-only too (its eviction is not a summary)
    why = reason if run.opts.summarize or s.strategy != NATIVE else "tier 2 disabled (--prune-only)"
    s.report.tier2 = TierReport(False, tokens, tokens, Gen2Decision(why, s.strategy, kept_messages=len(s.context)))


async def tier2_native(run: CompactRun, s: _Session2) -> Commit:
    """AgentScope's decision and split, and the summary fields (the LLM is awaited here; nothing is written)."""
    d = native.decide(s.context, s.fixed, s.summary, s.check.context_size, s.check.trigger_ratio,
                      s.check.reserve_ratio, reply_id_of(s.state), run.opts.force, agent_name=run.gen2_agent_name)
    _not_compacted(run, s, d.tokens, d.reason)
    if not run.opts.summarize or not d.would_compact or d.split is None:
        return lambda: write_pruned_only(run, s)
    split = d.split
    client = run.chat_client
    now = run.now()
    fields: Fields | None
    if client is not None and run.opts.dry_run:
        fields = None  # an LLM call costs money and time; a dry run shows the split only
    elif client is not None:
        fields = await llm_fields(client, split.compress, s.summary, now, run.opts.extra_instruction)
    else:
        fields = extractive_fields(split.compress, s.summary)

    def commit() -> CompactReport:
        dplan = plan_dialog(run.dialog_dir, split.compress, now.date())
        _apply_native(run, s, d, split, fields, dplan)
        if run.opts.dry_run:
            s.report.status = "dry-run"
            return s.report
        return write_native(run, s, dplan, split, now)

    return commit


def _apply_native(run: CompactRun, s: _Session2, d: native.NativeDecision, split: native.Split,
                  fields: Fields | None, dplan: DialogPlan) -> None:
    """The new summary (with QwenPaw's reminder naming the dialog file) and the reserved messages, in the copy."""
    new_summary = native.render_summary(fields.values) if fields else s.summary
    if dplan.last_path is not None and fields is not None:
        reminder = native.offload_reminder(str(dplan.last_path))
        if reminder not in new_summary:
            new_summary += "\n" + reminder
    gen2.set_summary_in(s.state, new_summary)
    gen2.set_context_in(s.state, split.reserve)
    after = count_tokens(split.reserve, s.fixed, new_summary)
    report = s.report
    report.kept_ids = [str(m.get("id")) for m in split.reserve]
    report.removed_ids = [str(m.get("id")) for m in split.compress]
    report.context_tokens_after = after
    report.tier2 = TierReport(True, d.tokens, after, NativeDetail(
        reason=d.reason, strategy=NATIVE, summarizer=fields.summarizer if fields else "llm (not called in a dry run)",
        llm_calls=fields.calls if fields else 0, removed_messages=len(split.compress),
        kept_messages=len(split.reserve), boundary_blocks=list(split.boundary_blocks),
        reserve_fallback=split.fallback, dialog_files=[run.ws.relative(p) for p in dplan.files],
        dialog_lines=dplan.count, dialog_already_present=dplan.already_present))
    report.tier3 = TierReport(False, 0, 0, LongtermDetail())


def write_native(run: CompactRun, s: _Session2, dplan: DialogPlan, split: native.Split, now: datetime
                 ) -> CompactReport:
    report = s.report
    data = gen2.encode(s.doc)  # before any write: an unencodable document stops us while nothing changed
    assert s.loaded.snapshot is not None  # a loaded, usable file always has one
    ensure_unchanged(s.loaded.snapshot)
    _write_artifacts(s.pruned)
    write_dialog(dplan)
    report.backup = _write_session(run, s, data, "The compressed messages had already been appended to dialog/; "
                                                 "a rerun will not duplicate them")
    report.status = "compacted"
    problem = _written_loads(data)
    if problem:
        report.warnings.append(f"verification: the written session does not load ({problem})")
    missing = missing_from_dialog(run.dialog_dir, split.compress, now.date())
    if missing:
        report.warnings.append(f"verification: {len(missing)} compressed message(s) not found in dialog/")
    return report


def _write_session(run: CompactRun, s: _Session2, data: bytes, what: str) -> str:
    assert s.loaded.snapshot is not None  # a loaded, usable file always has one
    try:
        ensure_unchanged(s.loaded.snapshot)
        kept_at = preserve_original(run.ws, s.ref.path, "backups", run.stamp)
        atomic_write_bytes(s.ref.path, data, s.loaded.snapshot, mode=SESSION_MODE)
    except ChangedUnderneathError:
        raise ChangedUnderneathError(f"{s.ref.rel}: changed on disk while compacting (is QwenPaw running?); the "
                                     f"session was not written. {what}") from None
    return run.ws.relative(kept_at)


def _write_artifacts(pruned: PruneOutcome) -> None:
    for artifact in pruned.artifacts:  # before the session names them
        atomic_write_bytes(artifact.path, artifact.text.encode("utf-8"))


def write_pruned_only(run: CompactRun, s: _Session2) -> CompactReport:
    report = s.report
    if not (s.pruned.cut or s.pruned.recut):
        return report
    if run.opts.dry_run:
        report.status = "dry-run"
        return report
    data = gen2.encode(s.doc)  # before any write: an unencodable document stops us while nothing changed
    _write_artifacts(s.pruned)
    report.backup = _write_session(run, s, data, "The tool-result artifacts were written; a rerun makes new ones")
    report.status = "pruned"
    return report


def tier2_scroll(run: CompactRun, s: _Session2) -> CompactReport:
    """Scroll: persist the live messages QwenPaw never persisted, then evict the middle into a Tier-0 block. When
    history.db stays locked, what already had rows may still leave the file: that is a partial success (exit 1);
    with nothing written at all the session is busy (exit 4), as `history salvage` is on a locked store."""
    report = _tier2_scroll(run, s)
    if s.history_unwritable and report.status in ("compacted", "pruned"):
        report.error_kind = PARTIAL
        report.error = (f"history.db stayed locked ({s.history_unwritable}): the messages without rows stay in the "
                        "file; rerun `compact` when QwenPaw is idle")
    elif s.history_unwritable and report.status == "unchanged":
        report.status, report.error_kind = "failed", "busy"
        report.error = (f"history.db stayed locked ({s.history_unwritable}): nothing written; rerun `compact` when "
                        "QwenPaw is idle")
    return report


def _tier2_scroll(run: CompactRun, s: _Session2) -> CompactReport:
    from qwenmem.core.compaction.gen2 import scroll
    from qwenmem.core.compaction.gen2.evict import evict, read_history_index
    from qwenmem.core.history.keys import rows_key_in

    report, opts = s.report, run.opts
    db = run.gen2_settings.history_db
    if db is None or not db.is_file():
        report.status, report.error_kind = "skipped", "unsupported"
        report.error = "no history.db rows to evict against (nothing may leave the file that is not in history.db)"
        return report
    key = rows_key_in(s.ref, s.doc, db)  # the chat's session id, never agent.state.session_id
    sid = key.session_id
    if sid is None or not key.certain:
        report.status, report.error_kind = "skipped", "unsupported"
        report.error = ("the history.db session id of this file is not known (not registered in chats.json, no "
                        "scroll index names it): rows written under a guess would not be the session's")
        return report
    context = list(gen2.context_in(s.state) or [])
    model = s.loaded.as_model()
    synthetic = [m.synthetic for m in model.messages] if model else [False] * len(context)
    hist, unpersisted, rows_written = _persist_live(run, s, db, str(sid), context, synthetic)
    d = scroll.decide(context, synthetic, [hist.has_rows(m) for m in context], s.fixed, s.check.context_size,
                      s.check.trigger_ratio, s.check.reserve_ratio, opts.force,
                      scroll_state=gen2.scroll_of(s.doc))
    _not_compacted(run, s, d.tokens, d.reason)
    if d.prefold and opts.summarize:
        report.warnings.append(f"QwenPaw would first replace {len(d.prefold)} completed tool result(s) with recovery "
                               "pointers (the originals stay in history.db); compact decides as it does but does not "
                               "fold them")
    if not opts.summarize or not d.would_compact:
        return write_pruned_only(run, s)
    block, evicted = evict(s.doc, d.evict, hist, str(sid), run.now().replace(tzinfo=None))
    live = gen2.context_in(s.state)
    after = count_tokens(live, s.fixed)
    report.removed_ids = [str(m.get("id")) for m in evicted]
    report.kept_ids = [str(m.get("id")) for m in live]
    report.context_tokens_after = after
    report.tier2 = TierReport(True, d.tokens, after, ScrollDetail(
        reason=d.reason, strategy="scroll", summarizer="none (continuation summary kept, marked stale)",
        removed_messages=len(evicted), kept_messages=len(live) - 1, evicted_seq=[block["seq_lo"], block["seq_hi"]],
        placeholder_id=live[0]["id"], history_rows_written=rows_written,
        history_rows_missing_before=len(unpersisted)))
    if opts.dry_run:
        report.status = "dry-run"
        return report
    again = read_history_index(db, str(sid))  # the rows must still be there right before the file loses them
    missing = [str(m.get("id")) for m in evicted if not again.has_rows(m)]
    if missing:
        report.status, report.error_kind = "failed", "changed"
        report.error = f"{len(missing)} message(s) to evict lost their history.db rows; nothing written"
        return report
    data = gen2.encode(s.doc)  # before any write: an unencodable document stops us while nothing changed
    _write_artifacts(s.pruned)
    report.backup = _write_session(run, s, data, "Rows written to history.db stay there (they are what QwenPaw "
                                                 "would have written; a rerun does not duplicate them)")
    report.status = "compacted"
    if _written_loads(data):
        report.warnings.append("verification: the written session does not load")
    return report


def _persist_live(run: CompactRun, s: _Session2, db: Path, sid: str, context: list[Any], synthetic: list[bool]
                  ) -> tuple[HistoryIndex, list[Any], int]:
    """QwenPaw's step 1: every live message has its history.db rows before anything is evicted. Returns (the rows
    now there, the messages that had none, rows written). A dry run writes nothing and shows the eviction the rows
    would allow."""
    from qwenmem.core.compaction.gen2.evict import read_history_index

    hist = read_history_index(db, sid)
    unpersisted = [m for m, syn in zip(context, synthetic) if not syn and not hist.has_rows(m)]
    if run.opts.dry_run and unpersisted:
        return _as_if_persisted(hist, unpersisted), unpersisted, 0
    rows_written = 0
    if unpersisted:
        from qwenmem.core.compaction.gen2.history_write import rows_for_message, write_rows

        agent_id = hist.agent_id or run.ws.path.name
        rows = [row for m in unpersisted for row in rows_for_message(m, sid, agent_id)]
        try:
            rows_written = write_rows(db, rows)
        except sqlite3.Error as exc:
            s.history_unwritable = str(exc)
            s.report.warnings.append(f"history.db rows could not be written ({exc}); those messages stay in the "
                                     "file")
        hist = read_history_index(db, sid)  # what is really there now decides
    # rows that exist are recorded whoever wrote them: a rerun after a kill between the history.db commit and the
    # session rewrite finds them already there and must record them as the interrupted run would have
    _note_persisted(s.doc, context, synthetic, hist)
    return hist, unpersisted, rows_written


async def prepare_gen2(run: CompactRun, ref: SessionRef, loaded: LoadedSession) -> Commit:
    """Tier 1 and the native tier 2 of a 2.x session in memory; returns the step that writes them (a scroll
    session does its whole work there)."""
    s = _start(run, ref, loaded)
    if isinstance(s, CompactReport):
        skipped = s
        return lambda: skipped
    tier1_prune(run, s)
    if s.strategy != NATIVE:
        session = s
        return lambda: tier2_scroll(run, session)
    return await tier2_native(run, s)


def _as_if_persisted(hist: HistoryIndex, messages: list[Any]) -> HistoryIndex:
    """A copy of the history index with placeholder seqs for messages whose rows a real run would write."""
    out = copy.deepcopy(hist)  # a dataclass, not a JSON value
    nxt = max([0, *out.msg_seq.values(), *out.result_seq.values()]) + 1
    for m in messages:
        out.msg_seq.setdefault(str(m.get("id")), nxt)
        nxt += 1
        for b in m.get("content") or []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                out.result_seq.setdefault(str(b.get("id")), nxt)
                nxt += 1
    return out


def _note_persisted(doc: dict[str, Any], context: list[Any], synthetic: list[bool], hist: HistoryIndex) -> None:
    """Record the rows just written in the scroll bookkeeping (persisted_ids, persisted_tcids, seq_by_id,
    seq_by_tcid), as QwenPaw's _persist_new does, for messages that stay live."""
    scroll_state = gen2.scroll_of(doc)
    if not isinstance(scroll_state, dict):
        return
    for msg, syn in zip(context, synthetic):
        if syn or not hist.has_rows(msg):
            continue
        mid = str(msg.get("id"))
        seqs = hist.span(msg)
        ids = scroll_state.setdefault("persisted_ids", [])
        if mid not in ids:
            ids.append(mid)
        scroll_state.setdefault("seq_by_id", {}).setdefault(mid, [min(seqs), max(seqs)])
        for b in msg.get("content") or []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                tcids = scroll_state.setdefault("persisted_tcids", [])
                if b.get("id") not in tcids:
                    tcids.append(b.get("id"))
                scroll_state.setdefault("seq_by_tcid", {}).setdefault(str(b.get("id")), hist.result_seq[str(b.get("id"))])
    for key in ("persisted_ids", "persisted_tcids"):
        if isinstance(scroll_state.get(key), list):
            scroll_state[key] = sorted(scroll_state[key])
