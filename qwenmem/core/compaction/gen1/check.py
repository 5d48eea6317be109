"""The read-only `--check` of one QwenPaw 1.x session: tokens per part, threshold, room, and the planned split
(spec qwenpaw-workspace.md §4), and the helpers the 1.x run shares with it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from qwenmem.core.jsonsafe import copy_json
from qwenmem.core.compaction.context import CompactRun
from qwenmem.core.compaction.gen1.prune import prune_tool_results
from qwenmem.core.compaction.options import CompactOptions
from qwenmem.core.compaction.gen1.threshold import Budget, Plan, compute_budget, plan_compaction
from qwenmem.core.errors import WorkspaceError
from qwenmem.core.sessions import CORRUPT, Health, LoadedSession, SessionDoc, Entry, SessionRef, load_session
from qwenmem.core.settings import Settings
from qwenmem.core.settings.gen1 import ConfigLayout
from qwenmem.core.tokens import message_tokens, tool_output_tokens
from qwenmem.core.workspace import Workspace

__all__ = ["CheckReport", "Tokens", "check_loaded", "check_session", "in_context", "message_id", "plan_for",
           "unusable_reason"]


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
    generation: str  # the QwenPaw generation whose rules checked the file: always 1.x here
    config_layout: ConfigLayout  # agent.json key layout the settings came from
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
    health: Health = "ok"
    problems: list[str] = field(default_factory=list)


def in_context(doc: SessionDoc) -> tuple[list[Entry], list[int]]:
    entries = doc.entries()
    return entries, [i for i, e in enumerate(entries) if not e.compressed]


def message_id(msg: Any) -> str:
    return str(msg.get("id")) if isinstance(msg, dict) and msg.get("id") is not None else "?"


def unusable_reason(loaded: LoadedSession) -> str:
    if loaded.session is None or loaded.health == CORRUPT:
        return "damaged (" + "; ".join(loaded.problems[:2]) + "); run `qwenmem sessions repair` first"
    if any("lone surrogate" in p for p in loaded.problems):
        return "holds lone surrogate characters; run `qwenmem sessions repair` first"
    return ""


def plan_for(run: CompactRun, doc: SessionDoc, msgs: list[Any]) -> tuple[Budget, Plan, list[int]]:
    m, t, r = run.numbers
    budget = compute_budget(run.settings.config_layout, m, t, r, doc.sys_prompt, doc.summary, run.counter)
    tokens = [message_tokens(x, run.counter) for x in msgs]
    return budget, plan_compaction(msgs, tokens, budget, run.opts.force), tokens


# --------------------------------------------------------------------------------------------- check


def check_loaded(run: CompactRun, ref: SessionRef, loaded: LoadedSession) -> CheckReport:
    """The check of a session already read (raises WorkspaceError when it cannot be compacted)."""
    problem = unusable_reason(loaded)
    if problem:
        raise WorkspaceError(f"{ref.rel}: {problem}")
    doc = loaded.session
    assert doc is not None  # unusable_reason refuses a session that did not load
    counter = run.counter
    entries, active = in_context(doc)
    msgs = [entries[i].msg for i in active]
    budget, plan, tokens = plan_for(run, doc, msgs)
    pruned_msgs = copy_json(msgs)
    pruned = prune_tool_results(pruned_msgs, run.prune_limits, run.ws.path)
    return CheckReport(
        key=ref.key, path=ref.rel, generation="1.x", config_layout=run.settings.config_layout, tokenizer=counter.name,
        tokens=Tokens(budget.system_tokens, budget.summary_tokens, sum(tokens),
                      sum(tool_output_tokens(x, counter) for x in msgs)),
        budget=budget, message_count=len(msgs), legacy_compressed=len(entries) - len(active),
        would_compact=plan.would_compact, reason=plan.reason, room=plan.room,
        kept_ids=[message_id(msgs[i]) for i in plan.keep], removed_ids=[message_id(msgs[i]) for i in plan.remove],
        keep_tokens=plan.keep_tokens, aligned=plan.aligned, fallback=plan.fallback,
        prunable_outputs=len(pruned.changes),
        tokens_after_prune=sum(message_tokens(x, counter) for x in pruned_msgs),
        health=loaded.health, problems=loaded.problems)


def check_session(ws: Workspace, ref: SessionRef, settings: Settings, opts: CompactOptions) -> CheckReport:
    """The check of one 1.x session on its own (a run over several sessions shares one CompactRun)."""
    return check_loaded(CompactRun(ws, settings, opts), ref, load_session(ref))
