"""`compact --check` for one QwenPaw 2.x session file: the strategy, C, every counted term, the trigger, the
reserve (and, under scroll, the hard limit), and the split AgentScope / scroll would make (spec §4.1-4.5)."""

from __future__ import annotations

import os

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from qwenmem.core.jsonsafe import copy_json
from qwenmem.core.compaction.context import CompactRun
from qwenmem.core.compaction.options import Gen2CheckOptions, settings_dir
from qwenmem.core.compaction.gen2 import native, scroll
from qwenmem.core.compaction.gen2.evict import HistoryIndex, read_history_index
from qwenmem.core.compaction.gen2.prompt import FixedPart, RequestValues, not_known_notice
from qwenmem.core.compaction.gen2.tokens import ZERO, Size, message_size, summary_size, tokens_of
from qwenmem.core.errors import UsageError, WorkspaceError
from qwenmem.core.session_model import gen2
from qwenmem.core.session_model.model import Generation
from qwenmem.core.sessions import CORRUPT, LoadedSession, SessionRef
from qwenmem.core.settings import Settings
from qwenmem.core.settings.gen2 import Gen2Settings
from qwenmem.core.workspace import Workspace

__all__ = ["NATIVE", "SCROLL", "Gen2CheckOptions", "Gen2CheckReport", "Terms", "check_gen2", "check_gen2_loaded",
           "check_ref", "file_strategy", "history_index", "is_gen2_file", "reply_id_of", "compactable_state"]

FileStrategy = Literal["scroll", "native"]  # how a 2.x session file was compacted (spec §4.1)
NATIVE: Final = "native"
SCROLL: Final = "scroll"


@dataclass
class Terms:
    """Tokens per part (each rounded for display) and the total AgentScope computes (one rounding)."""

    system: int
    system_source: str
    tools: int
    tools_source: str
    summary: int
    messages: int
    data_blocks: int
    total: int


@dataclass
class Gen2CheckReport:
    key: str
    path: str
    generation: Generation  # always 2.x here
    strategy: FileStrategy
    strategy_source: str
    context_size: int
    context_source: str
    trigger_ratio: float
    reserve_ratio: float
    trigger: float
    reserve: float
    hard_limit: int | None
    terms: Terms
    message_count: int
    would_compact: bool
    reason: str
    kept_ids: list[str]
    removed_ids: list[str]
    boundary_id: str | None = None
    boundary_blocks: list[int] | None = None  # [compressed blocks, blocks] of a split boundary message
    keep_tokens: int = 0
    not_in_history: int = 0
    notices: list[str] = field(default_factory=list)
    tokenizer: str = "agentscope(bytes/4, one rounding)"
    prunable_outputs: int = 0  # tool outputs 2.x pruning would cut or re-cut now
    tokens_after_prune: int = 0
    artifacts_named: int = 0  # tool_results/ files named by truncation notices in the context
    artifacts_missing: list[str] = field(default_factory=list)  # ... that no longer exist (spec §8.13)
    artifacts_expiring: int = 0  # ... older than offload_retention_days: QwenPaw deletes them at the next close


def file_strategy(doc: dict[str, Any], configured: str) -> tuple[FileStrategy, str]:
    """Scroll writes `agent.scroll` whenever it is wired; a file without it was compacted natively (QwenPaw falls
    back to native silently when scroll wiring fails, spec §4.1)."""
    has_scroll = isinstance(gen2.scroll_of(doc), dict)
    if has_scroll:
        return SCROLL, "the file carries agent.scroll"
    if configured == SCROLL:
        return NATIVE, "the file has no agent.scroll (agent.json says scroll: this session ran native)"
    return NATIVE, "the file has no agent.scroll" + (f" (agent.json strategy {configured})" if configured else "")


def request_values(ref: SessionRef, doc: dict[str, Any]) -> RequestValues:
    """The chat's ids as QwenPaw writes them into the system prompt's environment block."""
    from qwenmem.core.history.keys import rows_key

    key = rows_key(ref, doc)
    sid = key.session_id if key.certain else ref.session_id
    return RequestValues(str(sid or ""), str(ref.user_id or ""), str(ref.channel or ""))


def fixed_parts(run: CompactRun, ref: SessionRef, doc: dict[str, Any], strategy: str) -> tuple[FixedPart, FixedPart]:
    """The system prompt and tool schemas QwenPaw sends for this file's chat under `strategy`."""
    return run.gen2_fixed_parts(strategy, request_values(ref, doc))


def history_index(db_path: Path | None, session_id: Any) -> tuple[HistoryIndex | None, str]:
    """(HistoryIndex, "") of this session's rows in history.db, or (None, why) when it cannot be read."""
    if db_path is None or session_id is None:
        return None, ("no history.db" if db_path is None else "no chats.json entry or scroll index names this "
                      "file's history.db session id")
    if not db_path.is_file():
        return None, f"{db_path.name} does not exist"
    from qwenmem.core.history.store import HistoryError

    try:
        return read_history_index(db_path, str(session_id)), ""
    except HistoryError as exc:
        return None, str(exc)


def _ratios(settings: Settings, opts: Gen2CheckOptions) -> tuple[float, float]:
    t = opts.trigger_ratio if opts.trigger_ratio is not None else settings.compact_threshold_ratio
    r = opts.reserve_ratio if opts.reserve_ratio is not None else settings.reserve_threshold_ratio
    if not 0 < t <= 1 or not 0 <= r < 1:
        raise UsageError(f"ratios must be in (0, 1]: got trigger {t}, reserve {r}")
    return t, r


def compactable_state(doc: dict[str, Any]) -> dict[str, Any] | None:
    """`agent.state` when it is an object whose context is a list (what compaction needs), else None."""
    state = gen2.state_of(doc)
    if not isinstance(state, dict) or not isinstance(gen2.context_in(state, []), list):
        return None
    return state


def reply_id_of(state: dict[str, Any]) -> Any:
    reply = state.get("reply_context")
    return reply.get("reply_id") if isinstance(reply, dict) else None


@dataclass
class _Inputs:
    """What both strategies' checks read from the file and the run."""

    context: list[Any]
    summary: Any
    ids: list[str]
    synthetic: list[bool]
    fixed: Size
    c: int
    t: float
    r: float


@dataclass
class _Verdict:
    """The strategy's answer, in the report's terms."""

    trigger_ratio: float
    reserve_ratio: float
    trigger: float
    reserve: float
    hard_limit: int | None
    would_compact: bool
    reason: str
    kept: list[str]
    removed: list[str]
    keep_tokens: int
    boundary_id: str | None = None
    boundary_blocks: list[int] | None = None
    not_in_history: int = 0
    notices: list[str] = field(default_factory=list)


def _native_verdict(x: _Inputs, state: dict[str, Any], force: bool, agent_name: str | None = None) -> _Verdict:
    d = native.decide(x.context, x.fixed, x.summary, x.c, x.t, x.r, reply_id_of(state), force,
                      agent_name=agent_name)
    split = d.split
    kept, removed = (x.ids, []) if split is None else ([str(m.get("id")) for m in split.reserve],
                                                       [str(m.get("id")) for m in split.compress])
    keep_tokens = tokens_of(x.fixed + summary_size(x.summary) + sum(
        (message_size(m) for m in (split.reserve if split else x.context)), ZERO))
    at = split.boundary if split is not None else None
    return _Verdict(d.trigger_ratio, d.reserve_ratio, d.trigger, d.reserve, None, d.would_compact, d.reason, kept,
                    removed, keep_tokens, x.ids[at] if split and at is not None else None,
                    list(split.boundary_blocks) if split and at is not None else None, notices=list(d.notes))


def _scroll_verdict(x: _Inputs, ref: SessionRef, doc: dict[str, Any], history_db: Path | None, force: bool
                    ) -> _Verdict:
    from qwenmem.core.history.keys import rows_key_in

    key = rows_key_in(ref, doc, history_db if history_db is not None and history_db.is_file() else None)
    hist, why = history_index(history_db, key.session_id if key.certain else None)
    notices = [] if hist is not None else [f"history.db not readable ({why}): nothing may be evicted"]
    in_history = [hist is not None and hist.has_rows(m) for m in x.context]
    missing = sum(1 for i, s in zip(in_history, x.synthetic) if not i and not s)
    if hist is not None and missing:
        notices.append(f"{missing} live message(s) have no rows in history.db yet: `compact` writes them first "
                       "(as QwenPaw's write-through does) and evicts only what it then finds there")
    # compact persists the missing rows before deciding; without a readable history.db nothing may leave
    d = scroll.decide(x.context, x.synthetic, [hist is not None] * len(x.context), x.fixed, x.c, x.t, x.r, force,
                      scroll_state=gen2.scroll_of(doc))
    keep_tokens = tokens_of(x.fixed + sum((message_size(x.context[i]) for i in d.keep), ZERO))
    return _Verdict(x.t, x.r, d.trigger, d.reserve, d.hard_limit, d.would_compact, d.reason,
                    [x.ids[i] for i in d.keep], [x.ids[i] for i in d.evict], keep_tokens, not_in_history=missing,
                    notices=notices + d.notes)


def check_gen2_loaded(run: CompactRun, ref: SessionRef, loaded: LoadedSession) -> Gen2CheckReport:
    """The check of a 2.x session already read (raises WorkspaceError when it is damaged)."""
    if loaded.health == CORRUPT:
        raise WorkspaceError(f"{ref.rel}: damaged ({'; '.join(loaded.problems[:2])}); run `qwenmem sessions repair` "
                             "first")
    return check_gen2(run, ref, loaded)


def check_gen2(run: CompactRun, ref: SessionRef, loaded: LoadedSession) -> Gen2CheckReport:
    doc = loaded.gen2_doc or {}
    state = compactable_state(doc)
    if state is None:
        raise WorkspaceError(f"{ref.rel}: agent.state.context is not a list; run `qwenmem sessions repair` first")
    opts, gen2_settings = run.gen2_options, run.gen2_settings
    context = list(gen2.context_in(state) or [])
    summary = gen2.summary_in(state) or ""
    strategy, strategy_source = file_strategy(doc, gen2_settings.strategy)
    if opts.context_size:
        c, c_source = opts.context_size, "--max-input-length"
    else:
        provider = gen2_settings.provider
        assert provider is not None  # load_gen2_settings always resolves one (a default when nothing is configured)
        c, c_source = provider.context_size, provider.context_source
    t, r = _ratios(run.settings, opts)
    system, tools = fixed_parts(run, ref, doc, strategy)
    session = loaded.as_model()
    synthetic = [m.synthetic for m in session.messages] if session else [False] * len(context)
    x = _Inputs(context, summary, [str(m.get("id")) if isinstance(m, dict) else "?" for m in context], synthetic,
                system.size + tools.size, c, t, r)
    v = (_native_verdict(x, state, opts.force, run.gen2_agent_name) if strategy == NATIVE
         else _scroll_verdict(x, ref, doc, gen2_settings.history_db, opts.force))
    msgs_size = sum((message_size(m) for m in context), ZERO)
    terms = Terms(system.tokens, system.source, tools.tokens, tools.source, summary_size(summary).tokens,
                  tokens_of(msgs_size), msgs_size.data + summary_size(summary).data,
                  tokens_of(x.fixed + summary_size(summary) + msgs_size))
    notice = not_known_notice(system, tools)
    notices = ([notice] if notice else []) + v.notices
    report = Gen2CheckReport(ref.key, ref.rel, "2.x", strategy, strategy_source, c, c_source, v.trigger_ratio,
                          v.reserve_ratio, v.trigger, v.reserve, v.hard_limit, terms,
                          sum(1 for s in synthetic if not s), v.would_compact, v.reason, v.kept, v.removed,
                          v.boundary_id, v.boundary_blocks, v.keep_tokens, v.not_in_history, notices)
    _tool_results(run, context, strategy == SCROLL, x.fixed, summary, report)
    return report


def _retention_days(ws: Workspace) -> int:
    """offload_retention_days: 30 in 2.x (1.x's default was 5), unless agent.json sets it."""
    from qwenmem.core.settings.gen2 import read_agent_json

    doc = read_agent_json(ws)
    value = (((doc.get("running") or {}).get("light_context_config") or {}).get("tool_result_pruning_config")
             or {}).get("offload_retention_days") if isinstance(doc, dict) else None
    return value if type(value) is int and value > 0 else 30


def _tool_results(run: CompactRun, context: list[Any], scroll_strategy: bool, fixed: Size, summary: Any,
                  report: Gen2CheckReport) -> None:
    import time

    from qwenmem.core.compaction.gen2.prune import notice_paths, prune, resolve_artifact

    work = copy_json(context)
    outcome = prune(work, run.gen2_prune_limits(scroll_strategy, defaults=True))
    report.prunable_outputs = outcome.cut + outcome.recut
    report.tokens_after_prune = tokens_of(fixed + summary_size(summary) + sum((message_size(m) for m in work), ZERO))
    cache = settings_dir(run.ws, run.settings.tool_results_cache)
    paths = notice_paths(context)
    report.artifacts_named = len(paths)
    cutoff = time.time() - _retention_days(run.ws) * 86400
    for path in paths:
        found = resolve_artifact(path, cache)
        if found is None:
            report.artifacts_missing.append(path)
        elif found.stat().st_mtime < cutoff:
            report.artifacts_expiring += 1
    if report.artifacts_missing:
        report.notices.append(f"{len(report.artifacts_missing)} truncation notice(s) point at tool_results/ files "
                              "that no longer exist (expired or deleted): the full outputs are gone")


MAX_SNIFF_BYTES = 256 << 20  # larger files are left to the 1.x loader, which names its own size limit


def is_gen2_file(path: str | os.PathLike[str]) -> bool:
    """From the first bytes when they are the usual `{"agent": {"state": …`; else by parsing the whole file. A file
    that cannot be read or parsed here (a link leaving the workspace, nesting too deep, too large) is not 2.x: the
    1.x path then loads it and reports what is wrong with it, as one line."""
    from qwenmem.core.session_model.detect import GEN2, generation_of_file

    return generation_of_file(os.fspath(path), max_bytes=MAX_SNIFF_BYTES) == GEN2


def check_ref(ws: Workspace, ref: SessionRef, settings: Settings, opts: Gen2CheckOptions,
              gen2_settings: Gen2Settings | None = None) -> Gen2CheckReport | None:
    """The 2.x check of `ref` on its own, or None when the file is not a 2.x session (the 1.x check applies).
    A run over several sessions uses compaction.run.check_one instead (one read per session, shared settings)."""
    if not is_gen2_file(ref.path):
        return None
    from qwenmem.core.compaction.options import CompactOptions
    from qwenmem.core.sessions import load_session

    loaded = load_session(ref)
    if loaded.gen2_doc is None:
        return None
    run = CompactRun(ws, settings, CompactOptions(gen2_check=opts))
    if gen2_settings is not None:
        run.gen2_settings = gen2_settings
    return check_gen2_loaded(run, ref, loaded)
