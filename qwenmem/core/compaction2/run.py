"""`compact` for one QwenPaw 2.x session file, native strategy (spec qwenpaw2-workspace.md §4.3, §10).

Under the workspace lock (taken by the caller), in this order, so that a crash anywhere loses nothing and a rerun
duplicates nothing:
  1. read with a snapshot; refuse damaged files and lone surrogates (repair first);
  2. AgentScope's decision and split (compaction2.native), the summary fields (LLM or offline extractive) rendered
     with AgentScope's summary_template, plus QwenPaw's offload reminder naming the dialog file;
  3. the compressed messages appended to dialog/<date>.jsonl in the 2.0 Msg shape (de-duplicated);
  4. the session file: original bytes backed up, replaced atomically (mode 0600), refused if it changed since 1.
Tier 1 (tool-result pruning, compaction2.prune) runs first for both strategies; its artifacts are written before
the session names them. Scroll sessions: missing history.db rows are written first (compaction2.history_write), then
compaction2.evict; only messages whose rows are in history.db leave the file, re-checked with SQL just before the
session is written.
"""

from __future__ import annotations

import copy
import sqlite3
from datetime import datetime
from typing import Any

from qwenmem.core.compaction.check import CompactOptions, CompactReport, TierReport, settings_dir
from qwenmem.core.compaction2 import native
from qwenmem.core.compaction2.check import NATIVE, Check2Options, check_gen2, file_strategy
from qwenmem.core.compaction2.dialog import missing_from_dialog, plan_dialog, write_dialog
from qwenmem.core.compaction2.prompt import system_prompt_estimate, tools_estimate
from qwenmem.core.compaction2.prune import PruneOutcome, prune, prune_limits_2x
from qwenmem.core.compaction2.summary import extractive_fields, llm_fields
from qwenmem.core.compaction2.tokens import count_tokens
from qwenmem.core.errors import ChangedUnderneathError, UsageError
from qwenmem.core.fsio import atomic_write_bytes, ensure_unchanged
from qwenmem.core.safety import preserve_original
from qwenmem.core.session_model import encode_document, gen2
from qwenmem.core.sessions import CORRUPT, load_session
from qwenmem.core.settings import user_tz
from qwenmem.core.workspace import Workspace

SESSION_MODE = 0o600


def unusable_2x(loaded: Any) -> str:
    if loaded.gen2_doc is None or loaded.health == CORRUPT:
        return "damaged (" + "; ".join(loaded.problems[:2]) + "); run `qwenmem sessions repair` first"
    if any("lone surrogate" in p for p in loaded.problems):
        return "holds lone surrogate characters; run `qwenmem sessions repair` first"
    agent = gen2.agent_of(loaded.gen2_doc)
    state = agent["state"] if agent else None
    if not isinstance(state, dict) or not isinstance(state.get("context", []), list):
        return "agent.state.context is not a list; run `qwenmem sessions repair` first"
    return ""


def _llm_client(opts: CompactOptions):
    if opts.summarizer not in ("auto", "llm", "extractive"):
        raise UsageError(f"unknown summarizer {opts.summarizer!r}; choose auto, llm or extractive")
    if opts.summarizer == "extractive" or opts.llm is None:
        if opts.summarizer == "llm":
            raise UsageError("--summarizer llm needs an LLM: pass --llm-base-url/--llm-model or set "
                             "QWENMEM_LLM_BASE_URL and QWENMEM_LLM_MODEL")
        return None
    from qwenmem.core.llm import ChatClient

    return ChatClient(opts.llm)


async def compact_gen2_async(ws: Workspace, ref: Any, settings: Any, gen2_settings: Any, opts: CompactOptions,
                             stamp: str) -> CompactReport:
    opts2: Check2Options = getattr(opts, "gen2_check", None) or Check2Options(
        opts.max_input_length, opts.threshold_ratio, opts.reserve_ratio, force=opts.force)
    report = CompactReport(ref.key, ref.rel, "unchanged")
    loaded = load_session(ref)
    problem = unusable_2x(loaded)
    if problem:
        report.status, report.error, report.error_kind = "skipped", problem, "damaged"
        return report
    check = check_gen2(ws, ref, loaded, settings, gen2_settings, opts2)
    report.check = check  # type: ignore[assignment]
    doc: dict = copy.deepcopy(loaded.gen2_doc or {})
    state = gen2.agent_of(doc)["state"]  # type: ignore[index]  # unusable_2x checked it
    context = list(state.get("context") or [])
    summary = state.get("summary") or ""
    report.context_tokens_before = report.context_tokens_after = check.terms.total
    report.kept_ids = list(check.kept_ids) if check.would_compact else [str(m.get("id")) for m in context]
    strategy, _ = file_strategy(doc, gen2_settings.strategy)
    from qwenmem.core.settings2 import read_agent_json

    fixed = (system_prompt_estimate(ws, read_agent_json(ws), opts2.system_tokens).size
             + tools_estimate(opts2.tools_tokens).size)
    pruned = _tier1(ws, settings, opts, context, strategy != NATIVE, fixed, summary, report)
    if strategy != NATIVE:
        return _compact_scroll(ws, ref, loaded, doc, check, fixed, gen2_settings, settings, opts, stamp, report,
                               pruned)
    reply = state.get("reply_context") if isinstance(state.get("reply_context"), dict) else {}
    d = native.decide(context, fixed, summary, check.context_size, check.trigger_ratio, check.reserve_ratio,
                      reply.get("reply_id"), opts.force)
    report.tier2 = TierReport(False, d.tokens, d.tokens, {"reason": d.reason, "summarizer": None, "chunks": 0,
                                                          "removed_messages": 0, "kept_messages": len(context),
                                                          "dialog_files": [], "strategy": NATIVE})
    if not opts.summarize:
        report.tier2.detail["reason"] = "tier 2 disabled (--prune-only)"
    if not opts.summarize or not d.would_compact or d.split is None:
        return _write_pruned_only(ws, ref, loaded, doc, stamp, pruned, report, opts.dry_run)
    split = d.split
    client = _llm_client(opts)
    now = (opts.now or datetime.now(tz=user_tz(settings))).astimezone(user_tz(settings))
    if client is not None and opts.dry_run:
        fields = None  # an LLM call costs money and time; a dry run shows the split only
    elif client is not None:
        fields = await llm_fields(client, split.compress, summary, now, opts.extra_instruction)
    else:
        fields = extractive_fields(split.compress, summary)
    dialog_dir = settings_dir(ws, settings.dialog_path)
    dplan = plan_dialog(dialog_dir, split.compress, now.date())
    new_summary = native.render_summary(fields.values) if fields else summary
    if dplan.last_path is not None and fields is not None:
        reminder = native.offload_reminder(str(dplan.last_path))
        if reminder not in new_summary:
            new_summary += "\n" + reminder
    state["summary"] = new_summary
    state["context"] = split.reserve
    after = count_tokens(split.reserve, fixed, new_summary)
    report.kept_ids = [str(m.get("id")) for m in split.reserve]
    report.removed_ids = [str(m.get("id")) for m in split.compress]
    report.context_tokens_after = after
    report.tier2 = TierReport(True, d.tokens, after, {
        "reason": d.reason, "strategy": NATIVE,
        "summarizer": fields.summarizer if fields else "llm (not called in a dry run)", "chunks": 0,
        "llm_calls": fields.calls if fields else 0, "removed_messages": len(split.compress),
        "kept_messages": len(split.reserve), "boundary_blocks": list(split.boundary_blocks),
        "reserve_fallback": split.fallback, "dialog_files": [ws.relative(p) for p in dplan.files],
        "dialog_lines": dplan.count, "dialog_already_present": dplan.already_present})
    report.tier3 = TierReport(False, 0, 0, {"path": None, "duplicate": False, "written": False, "chars": 0})
    if opts.dry_run:
        report.status = "dry-run"
        return report
    data = encode_document(doc)  # before any write: an unencodable document stops us while nothing changed
    assert loaded.snapshot is not None  # a loaded, usable file always has one
    ensure_unchanged(loaded.snapshot)
    _write_artifacts(pruned)
    write_dialog(dplan)
    try:
        ensure_unchanged(loaded.snapshot)
        kept_at = preserve_original(ws, ref.path, "backups", stamp)
        atomic_write_bytes(ref.path, data, loaded.snapshot, mode=SESSION_MODE)
    except ChangedUnderneathError:
        raise ChangedUnderneathError(
            f"{ref.rel}: changed on disk while compacting (is QwenPaw running?); the session was not written. "
            "The compressed messages had already been appended to dialog/; a rerun will not duplicate them") from None
    report.backup = ws.relative(kept_at)
    report.status = "compacted"
    again = load_session(ref)
    if unusable_2x(again):
        report.warnings.append(f"verification: the written session does not load ({unusable_2x(again)})")
    missing = missing_from_dialog(dialog_dir, split.compress, now.date())
    if missing:
        report.warnings.append(f"verification: {len(missing)} compressed message(s) not found in dialog/")
    return report


def _write_session(ws: Workspace, ref: Any, loaded: Any, doc: dict, stamp: str, what: str) -> str:
    data = encode_document(doc)  # before any write: an unencodable document stops us while nothing changed
    assert loaded.snapshot is not None  # a loaded, usable file always has one
    try:
        ensure_unchanged(loaded.snapshot)
        kept_at = preserve_original(ws, ref.path, "backups", stamp)
        atomic_write_bytes(ref.path, data, loaded.snapshot, mode=SESSION_MODE)
    except ChangedUnderneathError:
        raise ChangedUnderneathError(f"{ref.rel}: changed on disk while compacting (is QwenPaw running?); the "
                                     f"session was not written. {what}") from None
    return ws.relative(kept_at)


def _tier1(ws: Workspace, settings: Any, opts: CompactOptions, context: list, scroll_strategy: bool, fixed: Any,
           summary: Any, report: CompactReport) -> PruneOutcome:
    """Cut large tool outputs in place in `context` (a copy of the file's), as QwenPaw's pruning middleware does."""
    before = count_tokens(context, fixed, summary)
    if not (opts.prune and (settings.pruning_enabled or opts.recent_max_bytes or opts.old_max_bytes)):
        return PruneOutcome()
    pruned = prune(context, prune_limits_2x(ws, settings, opts, scroll_strategy))
    after = count_tokens(context, fixed, summary)
    report.tier1 = TierReport(True, before, after, {
        "outputs_cut": pruned.cut, "outputs_recut": pruned.recut, "bytes_removed": pruned.bytes_removed,
        "offload_files": [ws.relative(a.path) for a in pruned.artifacts], "skipped": pruned.skipped})
    report.context_tokens_after = after
    return pruned


def _write_artifacts(pruned: PruneOutcome) -> None:
    for artifact in pruned.artifacts:  # before the session names them
        atomic_write_bytes(artifact.path, artifact.text.encode("utf-8"))


def _write_pruned_only(ws: Workspace, ref: Any, loaded: Any, doc: dict, stamp: str, pruned: PruneOutcome,
                       report: CompactReport, dry_run: bool) -> CompactReport:
    if not (pruned.cut or pruned.recut):
        return report
    if dry_run:
        report.status = "dry-run"
        return report
    _write_artifacts(pruned)
    report.backup = _write_session(ws, ref, loaded, doc, stamp, "The tool-result artifacts were written; a rerun "
                                   "makes new ones")
    report.status = "pruned"
    return report


def _compact_scroll(ws: Workspace, ref: Any, loaded: Any, doc: dict, check: Any, fixed: Any, gen2_settings: Any,
                    settings: Any, opts: CompactOptions, stamp: str, report: CompactReport,
                    pruned: PruneOutcome) -> CompactReport:
    from qwenmem.core.compaction2 import scroll
    from qwenmem.core.compaction2.evict import evict, read_history_index

    state = gen2.agent_of(doc)["state"]  # type: ignore[index]
    context = list(state.get("context") or [])
    sid = state.get("session_id")
    db = gen2_settings.history_db
    if sid is None or db is None or not db.is_file():
        report.status, report.error_kind = "skipped", "unsupported"
        report.error = "no history.db rows to evict against (nothing may leave the file that is not in history.db)"
        return report
    hist = read_history_index(db, str(sid))
    synthetic = [m.synthetic for m in loaded.as_model().messages]
    unpersisted = [m for m, syn in zip(context, synthetic) if not syn and not hist.has_rows(m)]
    rows_written = 0
    if unpersisted and not opts.dry_run:  # QwenPaw's step 1: persist every live message before evicting
        from qwenmem.core.compaction2.history_write import rows_for_message, write_rows

        agent_id = hist.agent_id or ws.path.name
        rows = [row for m in unpersisted for row in rows_for_message(m, str(sid), agent_id)]
        try:
            rows_written = write_rows(db, rows)
        except sqlite3.Error as exc:
            report.warnings.append(f"history.db rows could not be written ({exc}); those messages stay in the file")
        hist = read_history_index(db, str(sid))  # what is really there now decides
        _note_persisted(doc, context, synthetic, hist)
    elif unpersisted:
        hist = _as_if_persisted(hist, unpersisted)  # a dry run shows the eviction the rows would allow
    d = scroll.decide(context, synthetic, [hist.has_rows(m) for m in context], fixed, check.context_size,
                      check.trigger_ratio, check.reserve_ratio, opts.force)
    report.tier2 = TierReport(False, d.tokens, d.tokens, {"reason": d.reason, "strategy": "scroll", "summarizer": None,
                                                          "chunks": 0, "removed_messages": 0,
                                                          "kept_messages": len(context), "dialog_files": []})
    if not opts.summarize or not d.would_compact:
        return _write_pruned_only(ws, ref, loaded, doc, stamp, pruned, report, opts.dry_run)
    now = (opts.now or datetime.now(tz=user_tz(settings))).astimezone(user_tz(settings))
    block, evicted = evict(doc, d.evict, hist, str(sid), now.replace(tzinfo=None))
    live = state["context"]
    after = count_tokens(live, fixed)
    report.removed_ids = [str(m.get("id")) for m in evicted]
    report.kept_ids = [str(m.get("id")) for m in live]
    report.context_tokens_after = after
    report.tier2 = TierReport(True, d.tokens, after, {
        "reason": d.reason, "strategy": "scroll", "summarizer": "none (continuation summary kept, marked stale)",
        "chunks": 0, "removed_messages": len(evicted), "kept_messages": len(live) - 1, "dialog_files": [],
        "evicted_seq": [block["seq_lo"], block["seq_hi"]], "placeholder_id": live[0]["id"],
        "history_rows_written": rows_written, "history_rows_missing_before": len(unpersisted)})
    if opts.dry_run:
        report.status = "dry-run"
        return report
    again = read_history_index(db, str(sid))  # the rows must still be there right before the file loses them
    missing = [str(m.get("id")) for m in evicted if not again.has_rows(m)]
    if missing:
        report.status, report.error_kind = "failed", "changed"
        report.error = f"{len(missing)} message(s) to evict lost their history.db rows; nothing written"
        return report
    _write_artifacts(pruned)
    report.backup = _write_session(ws, ref, loaded, doc, stamp, "Rows written to history.db stay there (they are "
                                   "what QwenPaw would have written; a rerun does not duplicate them)")
    report.status = "compacted"
    if unusable_2x(load_session(ref)):
        report.warnings.append("verification: the written session does not load")
    return report


def _as_if_persisted(hist: Any, messages: list) -> Any:
    """A copy of the history index with placeholder seqs for messages whose rows a real run would write."""
    import copy as _copy

    out = _copy.deepcopy(hist)
    nxt = max([0, *out.msg_seq.values(), *out.result_seq.values()]) + 1
    for m in messages:
        out.msg_seq.setdefault(str(m.get("id")), nxt)
        nxt += 1
        for b in m.get("content") or []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                out.result_seq.setdefault(str(b.get("id")), nxt)
                nxt += 1
    return out


def _note_persisted(doc: dict, context: list, synthetic: list, hist: Any) -> None:
    """Record the rows just written in the scroll bookkeeping (persisted_ids, persisted_tcids, seq_by_id,
    seq_by_tcid), as QwenPaw's _persist_new does, for messages that stay live."""
    scroll_state = gen2.agent_of(doc).get("scroll")  # type: ignore[union-attr]
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
