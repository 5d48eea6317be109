"""How people see `compact`: the check's table (one per generation: their terms differ) and the run's tiers."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from qwenmem.cli import output
from qwenmem.cli.tables import Cell, Column, Kind, number
from qwenmem.cli.tables import render as render_table

from qwenmem.core.compaction.tiers import (Gen2Decision, LongtermDetail, NativeDetail, PruneDetail, ScrollDetail,
                                           SummaryDetail)

if TYPE_CHECKING:
    from qwenmem.core.compaction.check import CompactReport
    from qwenmem.core.compaction.gen2.check import Gen2CheckReport

CHECK2_COLUMNS = (Column("session", Kind.KEY), Column("strategy", Kind.LABEL, drop=5), Column("in ctx", Kind.NUMBER, "right"),
                  Column("system", Kind.NUMBER, "right", drop=2), Column("tools", Kind.NUMBER, "right", drop=2),
                  Column("summary", Kind.NUMBER, "right", drop=1), Column("messages", Kind.NUMBER, "right"),
                  Column("total", Kind.NUMBER, "right"), Column("C", Kind.NUMBER, "right", drop=4),
                  Column("trigger", Kind.NUMBER, "right"), Column("reserve", Kind.NUMBER, "right", drop=3),
                  Column("compact?", Kind.LABEL), Column("keep", Kind.NUMBER, "right"))


def _trigger_tokens(r: Gen2CheckReport) -> int:
    """The trigger as a whole token count with the same meaning: native compacts at total ≥ t·C, i.e. at total ≥
    ceil(t·C); scroll evicts at total > t·C, i.e. at total > floor(t·C) (a total is an integer)."""
    return math.floor(r.trigger) if r.strategy == "scroll" else math.ceil(r.trigger)


def _check_gen2(reports: list[Gen2CheckReport], detailed: bool) -> None:
    con = output.out()
    render_table(CHECK2_COLUMNS, [
        [r.key, r.strategy, str(r.message_count), number(r.terms.system), number(r.terms.tools),
         number(r.terms.summary), number(r.terms.messages), number(r.terms.total), number(r.context_size),
         number(_trigger_tokens(r)), number(math.floor(r.reserve)), Cell("yes", "bold red") if r.would_compact else "no",
         f"{len(r.kept_ids)}/{len(r.kept_ids) + len(r.removed_ids) if r.would_compact else len(r.kept_ids)}"]
        for r in reports])
    if output.table_format() == "tsv":
        return
    output.para("[dim]in ctx: messages in the live context (`sessions list` msgs: every message in the file). "
              "2.x generation, AgentScope count: total = 2000×data blocks + int(bytes/4 + 0.5) over system, "
              "tools, summary and messages together (one rounding; the columns are rounded each). native: compacts "
              "at total ≥ trigger = ⌈t·C⌉, keeps ≤ reserve = ⌊r·C⌋; scroll: evicts at total > trigger = ⌊t·C⌋, reserve = "
              "min(40000, max(r·C, min(10000, 0.1·C))), hard = C − min(4096, max(1, int(0.05·C)))[/dim]",
                width=con.width)
    rebuilt = [r for r in reports if not (r.terms.system_source.startswith("--")
                                          and r.terms.tools_source.startswith("--"))]
    if rebuilt:
        from qwenmem.core.compaction.gen2.prompt import ASSUMES

        output.para(f"[dim]system and tools: what {ASSUMES} sends, rebuilt from this workspace (not stored in "
                    "the session file; --system-tokens/--tools-tokens override)[/dim]", width=con.width)
    for r in reports:
        if not detailed:
            continue
        t = r.terms
        con.print(f"\n{output.escape(r.key)}: strategy {r.strategy} ({output.escape(r.strategy_source)})")
        con.print(f"C = {r.context_size:,} ({output.escape(r.context_source)})")
        con.print(f"system prompt {t.system:,} tokens: {output.escape(t.system_source)}")
        con.print(f"tool schemas {t.tools:,} tokens: {output.escape(t.tools_source)}")
        con.print(f"summary {t.summary:,}; messages {t.messages:,}; data blocks {t.data_blocks} (2000 each); "
                  f"total {t.total:,}")
        line = f"trigger {r.trigger_ratio:g}·C = {r.trigger:,.1f}; reserve = {r.reserve:,.1f}"
        if r.hard_limit is not None:
            line += f"; hard limit {r.hard_limit:,}"
        con.print(line)
        con.print(output.escape(r.reason))
        if r.would_compact:
            verb = "evicts" if r.strategy == "scroll" else "compresses"
            con.print(f"keeps {len(r.kept_ids)} message(s) ({r.keep_tokens:,} tokens with system/tools/summary), "
                      f"{verb} {len(r.removed_ids)}")
            if r.boundary_blocks:
                con.print(f"boundary message {output.escape(r.boundary_id or '?')}: its first "
                          f"{r.boundary_blocks[0]} of {r.boundary_blocks[1]} block(s) are compressed")
            con.print("kept ids: " + output.escape(", ".join(r.kept_ids) or "(none)"), soft_wrap=True)
        if r.prunable_outputs:
            con.print(f"tool-result pruning would cut {r.prunable_outputs} output(s): total {t.total:,} → "
                      f"{r.tokens_after_prune:,}")
        if r.artifacts_named:
            con.print(f"{r.artifacts_named} tool_results/ artifact(s) named by notices: "
                      f"{len(r.artifacts_missing)} missing, {r.artifacts_expiring} past offload_retention_days")
        for notice in r.notices:
            con.print(f"note: {output.escape(notice)}")


CHECK_COLUMNS = (Column("session", Kind.KEY), Column("in ctx", Kind.NUMBER, "right"),
                 Column("system", Kind.NUMBER, "right", drop=2), Column("summary", Kind.NUMBER, "right", drop=1),
                 Column("messages", Kind.NUMBER, "right"), Column("tool out", Kind.NUMBER, "right", drop=1),
                 Column("threshold", Kind.NUMBER, "right"), Column("room", Kind.NUMBER, "right"),
                 Column("compact?", Kind.LABEL), Column("keep", Kind.NUMBER, "right"))


def check(reports: list[Any], detailed: bool) -> None:
    """`compact --check`: the 2.x sessions' table, then the 1.x sessions'."""
    con = output.out()
    if not reports:
        output.note("no sessions to check")
        return
    gen2_reports = [r for r in reports if getattr(r, "generation", "") == "2.x"]
    if gen2_reports:
        _check_gen2(gen2_reports, detailed)
        reports = [r for r in reports if r not in gen2_reports]
        if not reports:
            return
    render_table(CHECK_COLUMNS, [
        [r.key, str(r.message_count), number(r.tokens.system), number(r.tokens.summary), number(r.tokens.messages),
         number(r.tokens.tool_outputs), number(r.budget.left), number(r.room),
         Cell("yes", "bold red") if r.would_compact else "no", f"{len(r.kept_ids)}/{r.message_count}"]
        for r in reports])
    if output.table_format() == "tsv":
        return
    first = reports[0]
    b = first.budget
    output.para(f"[dim]QwenPaw 1.x rules, agent.json {first.config_layout} keys, {first.tokenizer}: M={b.max_input_length:,}, "
              f"T=int(M×{b.threshold_ratio:g})={b.threshold:,}, R=int(M×{b.reserve_ratio:g})={b.reserve:,}; "
              f"threshold = T − (system + summary); room = threshold − messages; in ctx: messages in the context "
              f"(`sessions list` msgs: every message in the file)[/dim]", width=con.width)
    if detailed:
        for r in reports:
            con.print(f"\n{output.escape(r.reason)}")
            if r.legacy_compressed:
                con.print(f"{r.legacy_compressed} legacy 'compressed' message(s) are not in context and are not counted")
            if r.would_compact:
                con.print(f"keeps {len(r.kept_ids)} message(s) ({r.keep_tokens:,} tokens), "
                          f"compacts {len(r.removed_ids)}")
                con.print("kept ids: " + output.escape(", ".join(r.kept_ids) or "(none)"), soft_wrap=True)
            if r.fallback:
                con.print(output.escape(r.fallback))
            if r.prunable_outputs:
                con.print(f"tier 1 would cut {r.prunable_outputs} tool output(s): "
                          f"{r.tokens.messages:,} → {r.tokens_after_prune:,} message tokens")


def results(reports: list[CompactReport], dry_run: bool) -> None:
    con = output.out()
    for r in reports:
        if r.status in ("failed", "skipped"):
            continue
        con.print(f"[bold]{output.escape(r.key)}[/bold]: {r.status}")
        for line, id_list in _tier_lines(r, dry_run):
            con.print(line, soft_wrap=id_list)  # an id list is never wrapped mid-id
        con.print(f"  context tokens {r.context_tokens_before:,} → {r.context_tokens_after:,}"
                  + (f"; original kept at {r.backup}" if r.backup else ""))


def _tier_lines(r: CompactReport, dry_run: bool) -> list[tuple[str, bool]]:
    """(line, whether it is an id list) per tier, from the typed tier reports."""
    verb = "would " if dry_run else ""
    lines: list[tuple[str, bool]] = []
    t1, d1 = r.tier1, r.tier1.detail
    if t1.ran and isinstance(d1, PruneDetail) and (d1.outputs_cut or d1.outputs_recut):
        lines.append((f"  tier 1: {verb}cut {d1.outputs_cut} tool output(s), re-cut {d1.outputs_recut} "
                     f"({d1.bytes_removed:,} bytes; full texts in {len(d1.offload_files)} new offload file(s)); "
                     f"message tokens {t1.tokens_before:,} → {t1.tokens_after:,}", False))
    d2 = r.tier2.detail
    if r.tier2.ran and isinstance(d2, ScrollDetail):  # QwenPaw 2.x scroll: evicted, rows in history.db
        lines.append((f"  scroll: {'would evict' if dry_run else 'evicted'} {d2.removed_messages} message(s) "
                     f"(seq {d2.evicted_seq[0]}–{d2.evicted_seq[1]}, rows in history.db), kept "
                     f"{d2.kept_messages} + placeholder", False))
    elif r.tier2.ran and isinstance(d2, (SummaryDetail, NativeDetail)):
        lines.append((f"  tier 2: {'would remove' if dry_run else 'removed'} {d2.removed_messages} message(s) to "
                     f"{', '.join(d2.dialog_files) or 'dialog/ (already there)'}, kept {d2.kept_messages}; "
                     f"summary by {d2.summarizer}" + (f" in {d2.chunks} chunk(s)" if d2.chunks else ""), False))
        lines.append(("  removed ids: " + output.escape(", ".join(r.removed_ids)), True))
        lines.append(("  kept ids: " + output.escape(", ".join(r.kept_ids) or "(none)"), True))
    else:
        reason = d2.reason if isinstance(d2, (SummaryDetail, Gen2Decision)) else ""
        lines.append((f"  tier 2: not needed ({output.escape(reason)})", False))
    d3 = r.tier3.detail
    if r.tier3.ran and isinstance(d3, LongtermDetail):
        state = ("already noted (rerun)" if d3.duplicate else "written" if d3.written else
                 "would be written" if dry_run and d3.chars else "nothing to note")
        lines.append((f"  tier 3: {d3.path}: {state}", False))
    return lines
