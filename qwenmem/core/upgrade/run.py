"""`qwenmem upgrade` of one workspace: the plan, then its writes, in an order a kill cannot hurt.

Under the workspace lock, refused (BusyError, exit 4) while QwenPaw holds a file of it open for writing:
  1. read every session file and dialog/ file; plan (nothing written; `--dry-run` stops here);
  2. snapshot memory/ (qwenmem.core.snapshot), open the journal, copy every original it will replace beside it;
  3. history.db: created with QwenPaw's schema if missing, then each record's rows in one transaction each
     (ON CONFLICT DO NOTHING: a rerun adds nothing);
  4. each session file: its 2.x document, built from the seqs now in history.db, replaced atomically if it did not
     change since step 1 (native: its compressed messages appended to dialog/ first, de-duplicated);
  5. agent.json with the 2.x keys; the journal marked done.
A kill anywhere leaves 1.x files that a rerun converts exactly as the first run would have (the conversion is
deterministic, the rows are keyed), 2.x files it leaves alone, and an incomplete journal it continues.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Literal

from qwenmem.core.compaction.gen2.tokens import ZERO, Size
from qwenmem.core.errors import BusyError, UsageError
from qwenmem.core.fsio import atomic_write_bytes, copy_preserving, exclusive_lock, read_with_snapshot
from qwenmem.core.upgrade import agentjson, journal, plan, shape, source, store
from qwenmem.core.workspace import Workspace

REME_LEFTOVERS = ("file_store", "embedding_cache", ".reme_store_v1", "memory_file_metadata.json")
Hook = Callable[[str], None]  # crash tests: called before each write with its name


@dataclass(frozen=True)
class Settings:
    strategy: shape.Strategy = shape.SCROLL
    dry_run: bool = False
    retention_days: int | None = None  # None: 0 (keep forever) when the record is older than QwenPaw's 30 days


SessionStatus = Literal["upgraded", "would upgrade", "already 2.x", "damaged"]
UpgradeStatus = Literal["upgraded", "dry-run", "unchanged"]

@dataclass
class SessionReport:
    key: str
    status: SessionStatus
    session_id: str | None = None
    registered: bool = False
    messages: int = 0
    compressed: int = 0
    rows_to_add: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    trigger: int = 0
    first_turn_compacts: bool = False
    qwenpaw_keeps: int = 0
    summary_in: shape.SummaryPlace = ""
    problem: str = ""


@dataclass
class DialogReport:
    file: str
    session_id: str
    messages: int
    rows_to_add: int
    unreadable_lines: int = 0


@dataclass
class UpgradeResult:
    workspace: str
    strategy: shape.Strategy
    status: UpgradeStatus
    history_db: str
    agent_id: str
    sessions: list[SessionReport] = field(default_factory=list)
    dialog: list[DialogReport] = field(default_factory=list)
    created_history_db: bool = False
    rows_added: int = 0
    agent_json_keys_added: list[str] = field(default_factory=list)
    retention_days: int | None = None
    reme_leftovers: list[str] = field(default_factory=list)
    snapshot: str | None = None
    journal: str | None = None
    warnings: list[str] = field(default_factory=list)


def _agent_id(ws: Workspace) -> str:
    return ws.agent_id or ws.path.name


def history_db_path(ws: Workspace, agent_doc: dict[str, Any]) -> Path:
    from qwenmem.core.settings.gen2 import history_db_path

    name = (((agent_doc.get("running") or {}).get("light_context_config") or {}).get("scroll_config") or {}).get(
        "db_filename")
    return history_db_path(ws.path, name if isinstance(name, str) and name else "history.db")


def read_agent_json(ws: Workspace) -> tuple[dict[str, Any] | None, bytes | None]:
    path = ws.path / "agent.json"
    if not path.is_file():
        return None, None
    data, _ = read_with_snapshot(path)
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise UsageError(f"{path} is not valid JSON: fix it before upgrading (QwenPaw 2.x refuses it too)") from None
    return (doc if isinstance(doc, dict) else None), data


def busy_reason(ws: Workspace, db: Path, sessions: list[source.SessionSource]) -> str:
    """Why QwenPaw holds the workspace now ("" when it does not): a process with history.db, agent.json,
    chats.json or a session file open for writing."""
    from qwenmem.core.busy import writers_of

    for path in [db, ws.path / "agent.json", ws.path / "chats.json", *(s.ref.path for s in sessions)]:
        holders = writers_of(path)
        if holders:
            return f"{path} is open for writing in {', '.join(map(str, holders[:3]))}"
    return ""


def _fixed_and_trigger(ws: Workspace, strategy: str) -> tuple[Size, float]:
    """What QwenPaw adds to every request (system prompt, tools: as `compact --check` estimates them) and its
    trigger, for this strategy's threshold math (spec §4.3, §4.4)."""
    from qwenmem.core.settings.gen2 import load_gen2_settings

    gen2 = load_gen2_settings(ws)
    h = gen2.provider.context_size if gen2.provider else 131072
    doc = (json.loads((ws.path / "agent.json").read_text("utf-8")) if (ws.path / "agent.json").is_file() else {})
    cfg = (((doc.get("running") or {}).get("light_context_config") or {}).get("context_compact_config") or {})
    ratio = cfg.get("compact_threshold_ratio")
    t = float(ratio) if isinstance(ratio, (int, float)) and 0.1 <= ratio <= 0.9 else 0.8
    return ZERO, t * h


def _reports(plans: list[plan.SessionPlan], others: list[source.SessionSource], verb: SessionStatus) -> list[SessionReport]:
    out = []
    for p in plans:
        assert p.shaped is not None
        out.append(SessionReport(p.source.ref.key, verb, p.session_id, p.registered, len(p.conv.messages),
                                 p.source.compressed, p.rows_to_add, p.tokens_before, p.tokens_after, int(p.trigger),
                                 p.would_compact, p.qwenpaw_keeps, p.shaped.summary_in))
    for s in others:
        out.append(SessionReport(s.ref.key, "already 2.x" if s.kind == source.GEN2 else "damaged",
                                 problem=s.problem))
    return sorted(out, key=lambda r: r.key)


def _retention(settings: Settings, plans: list[plan.SessionPlan], dialogs: list[plan.DialogPlan],
               now: datetime) -> int:
    if settings.retention_days is not None:
        return settings.retention_days
    old = any(p.qwenpaw_keeps < len(p.conv.messages) for p in plans if p.registered) or bool(dialogs) or any(
        not p.registered for p in plans)
    return agentjson.KEEP_FOREVER if old else 30


def upgrade(ws: Workspace, settings: Settings, hook: Hook | None = None) -> UpgradeResult:
    if settings.strategy not in (shape.SCROLL, shape.NATIVE):
        raise UsageError(f"--strategy must be scroll or native, not {settings.strategy!r}")
    if settings.dry_run:
        return _run(ws, settings, hook)
    with exclusive_lock(ws.lock_path):
        return _run(ws, settings, hook)


def _run(ws: Workspace, settings: Settings, hook: Hook | None) -> UpgradeResult:
    now = datetime.now()
    agent_doc, agent_bytes = read_agent_json(ws)
    db = history_db_path(ws, agent_doc or {})
    sources = source.read_sessions(ws)
    busy = busy_reason(ws, db, sources)
    if busy:
        raise BusyError(f"QwenPaw holds the workspace ({busy}): stop it, then run `qwenmem upgrade` again")
    gen1 = [s for s in sources if s.kind == source.GEN1]
    taken = store.session_keys(db, source.DIALOG_PREFIX)
    known = {str(i.payload.get("id")) for s in gen1 for i in s.items} | taken
    agent_id = _agent_id(ws)
    plans = [plan.plan_session(s, agent_id, db) for s in gen1]
    every_dialog = [plan.plan_dialog(d, agent_id, db, taken) for d in source.read_dialog(ws, known)]
    dialogs = [d for d in every_dialog if d.rows_to_add]  # a dialog file already in history.db is done
    result = UpgradeResult(str(ws.path), settings.strategy, "dry-run" if settings.dry_run else "unchanged", str(db),
                           agent_id)
    result.reme_leftovers = [name for name in REME_LEFTOVERS if (ws.path / name).exists()]
    unfinished = journal.unfinished(ws)  # a killed run's: its last steps are still to do
    retention = unfinished.retention_days if unfinished and unfinished.retention_days is not None else \
        _retention(settings, plans, dialogs, now)
    work = bool(plans or dialogs or unfinished)
    new_agent = None
    if agent_doc is not None and work:
        new_agent, result.agent_json_keys_added, notes = agentjson.upgraded(agent_doc, settings.strategy, retention)
        result.warnings += notes
        result.retention_days = retention
    elif agent_doc is None and work:
        if settings.strategy == shape.NATIVE:
            raise UsageError("no agent.json: QwenPaw 2.x would run scroll; `--strategy native` needs the agent.json "
                             "that selects it")
        result.warnings.append("no agent.json: QwenPaw 2.x runs its defaults (scroll, history_retention_days 30, "
                               "whose purge deletes imported rows older than 30 days)")
    fixed, trigger = _fixed_and_trigger(ws, settings.strategy)
    others = [s for s in sources if s.kind != source.GEN1]
    if settings.dry_run or not work:
        _preview(plans, settings.strategy, agent_id, db, fixed, trigger, now)
        result.sessions = _reports(plans, others, "would upgrade")
        result.dialog = [_dialog_report(d) for d in dialogs]
        _warn_compacting(result)
        return result
    _apply(ws, settings, result, plans, dialogs, db, agent_id, (fixed, trigger), now, (agent_bytes, new_agent),
           hook or (lambda _name: None))
    result.sessions = _reports(plans, others, "upgraded")
    result.dialog = [_dialog_report(d) for d in dialogs]
    result.status = "upgraded"
    _warn_compacting(result)
    return result


def _dialog_report(d: plan.DialogPlan) -> DialogReport:
    return DialogReport("dialog/" + d.source.path.name, d.source.session_id, len(d.source.messages), d.rows_to_add,
                        d.source.unreadable_lines)


def _warn_compacting(result: UpgradeResult) -> None:
    for r in result.sessions:
        if r.first_turn_compacts:
            result.warnings.append(f"{r.key}: its 1.x live context ({r.tokens_after} tokens) is over the 2.x trigger "
                                   f"({r.trigger}): QwenPaw's first turn compacts it")


def _preview(plans: list[plan.SessionPlan], strategy: str, agent_id: str, db: Path, fixed: Size, trigger: float,
             now: datetime) -> None:
    start = _max_seq(db) + 1
    for p in plans:
        seqs = plan.predicted_seqs(p, start)
        start += len(p.rows)
        plan.finish(p, strategy, agent_id, seqs, fixed, trigger, now)


def _max_seq(db: Path) -> int:
    if not db.is_file():
        return 0
    from qwenmem.core.history.store import open_history

    with open_history(db) as reader:
        rows = reader._query("SELECT max(seq) FROM conversation_history")
    return int(rows[0][0] or 0) if rows else 0


def _apply(ws: Workspace, settings: Settings, result: UpgradeResult, plans: list[plan.SessionPlan],
           dialogs: list[plan.DialogPlan], db: Path, agent_id: str, limits: tuple[Size, float], now: datetime,
           agent: tuple[bytes | None, dict[str, Any] | None], hook: Hook) -> None:
    from qwenmem.core.snapshot import create_locked

    j = journal.open_journal(ws, settings.strategy)
    if j.retention_days is None:
        j.retention_days = result.retention_days
    if j.snapshot is None:
        hook("snapshot")
        j.snapshot = create_locked(ws, reason="before qwenmem upgrade").snapshot.id
    result.snapshot, result.journal = j.snapshot, j.directory
    agent_bytes, new_agent = agent
    targets = [(p.source.ref.rel, p.source.data) for p in plans]
    if agent_bytes is not None and new_agent is not None and new_agent != json.loads(agent_bytes):
        targets.append(("agent.json", agent_bytes))
    for rel, data in targets:
        if j.file(rel) is None:
            hook(f"backup {rel}")
            kept = copy_preserving(ws.path / rel, Path(j.directory) / "originals" / rel)
            j.files.append(journal.FileChange(rel, plan.sha256(data), "", str(kept.relative_to(j.directory))))
    if not j.created_store and not db.exists():
        j.created_store = True
    for d in dialogs:
        j.rows.setdefault(d.source.session_id, sorted({str(r[-1]) for r in d.rows} - d.rows_there))
    for p in plans:
        j.rows.setdefault(p.session_id, sorted({str(r[-1]) for r in p.rows} - p.rows_there))
    hook("journal")
    j.save()
    hook("history.db schema")
    result.created_history_db = store.ensure_store(db)
    for d in dialogs:
        hook(f"rows {d.source.session_id}")
        result.rows_added += store.insert(db, d.rows)
    fixed, trigger = limits
    for p in plans:
        hook(f"rows {p.session_id}")
        result.rows_added += store.insert(db, p.rows)
        plan.finish(p, settings.strategy, agent_id, store.seqs_by_key(db, p.session_id), fixed, trigger, now)
    for p in plans:
        _write_session(ws, j, p, hook)
    if new_agent is not None and j.file("agent.json") is not None:
        data = agentjson.encode(new_agent)
        change = j.file("agent.json")
        if change is not None:
            change.after_sha256 = plan.sha256(data)
        j.save()
        hook("agent.json")
        atomic_write_bytes(ws.path / "agent.json", data)
    j.done = True
    j.save()


def _write_session(ws: Workspace, j: journal.Journal, p: plan.SessionPlan, hook: Hook) -> None:
    from qwenmem.core.compaction.gen2.dialog import plan_dialog as plan_offload
    from qwenmem.core.compaction.gen2.dialog import write_dialog

    assert p.shaped is not None and p.source.snap is not None
    change = j.file(p.source.ref.rel)
    if change is not None:
        change.after_sha256 = plan.sha256(p.data)
    if p.shaped.dialog_messages:
        offload = plan_offload(ws.dialog_dir, p.shaped.dialog_messages)
        for path in offload.files:
            j.dialog_sizes.setdefault(ws.relative(path), path.stat().st_size if path.exists() else 0)
        j.save()
        hook(f"dialog {p.source.ref.rel}")
        write_dialog(offload)
    j.save()
    hook(f"session {p.source.ref.rel}")
    atomic_write_bytes(p.source.ref.path, p.data, p.source.snap)
