"""Rendering of `compact --check` for QwenPaw 2.x files (the 1.x table stays in compact.py)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from qwenmem.cli import output
from qwenmem.cli.tables import Cell, Column, Kind, number
from qwenmem.cli.tables import render as render_table

if TYPE_CHECKING:
    from qwenmem.core.compaction2.check import Check2Report

CHECK2_COLUMNS = (Column("session", Kind.KEY), Column("strategy", Kind.LABEL, drop=5), Column("in ctx", Kind.NUMBER, "right"),
                  Column("system", Kind.NUMBER, "right", drop=2), Column("tools", Kind.NUMBER, "right", drop=2),
                  Column("summary", Kind.NUMBER, "right", drop=1), Column("messages", Kind.NUMBER, "right"),
                  Column("total", Kind.NUMBER, "right"), Column("C", Kind.NUMBER, "right", drop=4),
                  Column("trigger", Kind.NUMBER, "right"), Column("reserve", Kind.NUMBER, "right", drop=3),
                  Column("compact?", Kind.LABEL), Column("keep", Kind.NUMBER, "right"))


def _trigger_tokens(r: Check2Report) -> int:
    """The trigger as a whole token count with the same meaning: native compacts at total ≥ t·C, i.e. at total ≥
    ceil(t·C); scroll evicts at total > t·C, i.e. at total > floor(t·C) (a total is an integer)."""
    return math.floor(r.trigger) if r.strategy == "scroll" else math.ceil(r.trigger)


def render_check2(reports: list[Check2Report], detailed: bool) -> None:
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
        from qwenmem.core.compaction2.prompt import ASSUMES

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
