"""`qwenmem doctor` as data: what needs attention in every agent of a QwenPaw root, read-only.

For each agent: sessions that are corrupt, need a repair flag, or are close to the compaction threshold; the
search index (missing, stale, damaged, embedder, chunks, vectors missing); the last dream and what it changed;
the size and age of qwenmem's quarantine and backups and of the dream backups; whether QwenPaw's own dream_cron
would also run a dream; the history database of the generations that have one (QwenPaw 2.x history.db); stale
temporaries and index generations left by a killed run.

Nothing here writes: no lock is taken, no index is refreshed, no file is created. Sessions are listed through the
same fast path as `sessions list` (one parse per file); only the unhealthy ones are diagnosed further.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Final, Literal, TypedDict

from qwenmem.core.history.check import FtsVerdict
from qwenmem.core.history.state import HistoryStatus
from qwenmem.core.errors import QwenmemError
from qwenmem.core.workspace import Workspace, discover_workspace, is_qwenpaw_root, root_agent_ids

if TYPE_CHECKING:
    from qwenmem.core.settings import Settings
    from qwenmem.core.settings.gen2 import GenerationSummary, WorkspaceGeneration

ATTENTION: Final = "attention"  # exit 1: something is wrong or will go wrong
NOTE: Final = "note"  # worth knowing; nothing to do yet
NEAR_THRESHOLD = 0.9  # a session at 90 % of the compaction threshold is "close"
SHOWN_PER_KIND = 10  # session keys listed per finding (the counts are always complete)


Level = Literal["attention", "note"]
Area = Literal["sessions", "index", "dream", "storage", "schedule", "history", "temporaries", "workspace"]
IndexState = Literal["missing", "ok", "stale", "damaged"]
AgentHistoryStatus = Literal["not_applicable", HistoryStatus]
TemporariesStatus = Literal["not_checked", "ok", "found"]  # not_checked: the agent could not be opened


@dataclass
class Finding:
    level: Level
    area: Area
    message: str


class NearThreshold(TypedDict):
    key: str
    tokens: int  # the session's tokens plus its summary's
    threshold: int


@dataclass
class SessionsHealth:
    total: int = 0
    ok: int = 0
    corrupt: list[str] = field(default_factory=list)  # needs `sessions repair`
    needs_flag: list[str] = field(default_factory=list)  # repair needs --fix-tool-pairs / --from-backup
    unrecoverable: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # reported problems with nothing safe to change
    near_threshold: list[NearThreshold] = field(default_factory=list)
    compact_threshold: int = 0


@dataclass
class IndexHealth:
    state: IndexState = "missing"
    generation: str | None = None
    built_at: str | None = None
    embedder: str | None = None  # model id, or None for a full-text-only index
    chunks: int = 0
    files: int = 0
    stale_files: list[str] = field(default_factory=list)
    vectors_missing: bool = False  # built with a model, but its vectors are absent or do not match


@dataclass
class DreamHealth:
    runs: int = 0
    last_time: str | None = None
    last_kind: str | None = None
    last_mode: str | None = None
    last_changes: dict[str, int] = field(default_factory=dict)  # action -> count
    last_backup: str | None = None


@dataclass
class StorageArea:
    name: str  # ".qwenmem/quarantine", ".qwenmem/backups", "backup"
    files: int = 0
    bytes: int = 0
    oldest: str | None = None
    newest: str | None = None


@dataclass
class ScheduleHealth:
    dream_cron: str = ""
    source: str = ""
    qwenpaw_dreams: bool = False  # QwenPaw's own dream job is scheduled


@dataclass
class HistoryHealth:
    status: AgentHistoryStatus = "not_applicable"
    path: str | None = None
    size: int = 0
    rows: int | None = None
    sessions: int | None = None
    detail: str = ""
    integrity: str = "not checked"  # PRAGMA integrity_check: ok, or what it reported
    fts: FtsVerdict = "not checked"  # the full-text table against the rows
    findings: list[str] = field(default_factory=list)  # what `qwenmem history check` found


@dataclass
class TemporariesHealth:
    status: TemporariesStatus = "not_checked"
    stale: list[str] = field(default_factory=list)
    bytes: int = 0


@dataclass
class AgentReport:
    agent: str | None
    workspace: str
    generation: WorkspaceGeneration = "unknown"
    error: str | None = None  # the agent could not be opened at all
    sessions: SessionsHealth = field(default_factory=SessionsHealth)
    index: IndexHealth = field(default_factory=IndexHealth)
    dream: DreamHealth = field(default_factory=DreamHealth)
    storage: list[StorageArea] = field(default_factory=list)
    schedule: ScheduleHealth = field(default_factory=ScheduleHealth)
    history: HistoryHealth = field(default_factory=HistoryHealth)
    temporaries: TemporariesHealth = field(default_factory=TemporariesHealth)
    findings: list[Finding] = field(default_factory=list)

    @property
    def needs_attention(self) -> bool:
        return any(f.level == ATTENTION for f in self.findings)


@dataclass
class DoctorReport:
    root: str
    agents: list[AgentReport]
    elapsed_ms: int = 0

    @property
    def needs_attention(self) -> bool:
        return any(a.needs_attention for a in self.agents)

    @property
    def attention_count(self) -> int:
        return sum(f.level == ATTENTION for a in self.agents for f in a.findings)


# ---- where the agents are


def _targets(workspace: str | os.PathLike[str] | None, agent: str | None) -> tuple[Path, list[tuple[str, str | None]]]:
    """(root shown, [(path, agent) to open]). A root means every agent in it; an agent directory, or --agent, one."""
    if agent is not None:
        ws = discover_workspace(workspace, agent)
        return ws.root, [(str(ws.root), agent)]
    ws = discover_workspace(workspace, None)
    base = Path(workspace).expanduser() if workspace is not None else ws.root
    if is_qwenpaw_root(base):
        agents: list[str | None] = [*root_agent_ids(base)]
        return base, [(str(base), a) for a in agents or [None]]
    return ws.root, [(str(ws.path), None)]


def run_doctor(workspace: str | os.PathLike[str] | None = None, agent: str | None = None,
               now: datetime | None = None) -> DoctorReport:
    started = time.monotonic()
    now = now or datetime.now(timezone.utc)
    root, targets = _targets(workspace, agent)
    agents = [check_agent(path, agent_id, now) for path, agent_id in targets]
    return DoctorReport(str(root), agents, int((time.monotonic() - started) * 1000))


def check_agent(path: str, agent_id: str | None, now: datetime) -> AgentReport:
    from qwenmem.core.settings import load_settings

    try:
        ws = discover_workspace(path, agent_id)
        settings = load_settings(ws)
    except QwenmemError as exc:
        report = AgentReport(agent_id, path, error=str(exc))
        report.findings.append(Finding(ATTENTION, "workspace", str(exc)))
        return report
    report = AgentReport(ws.agent_id or agent_id, str(ws.path))
    report.findings.extend(Finding(NOTE, "workspace", notice) for notice in ws.notices)
    _sessions(ws, settings, report)
    _index(ws, report)
    _dream(ws, report)
    _storage(ws, report, now)
    _schedule(settings, report)
    _history(ws, report)
    _temporaries(ws, report)
    return report


# ---- sessions


def _sessions(ws: Workspace, settings: Settings, report: AgentReport) -> None:
    from qwenmem.core.listing import list_sessions
    from qwenmem.core.repair import CHECK, run_repair
    from qwenmem.core.sessions import iter_session_refs
    from qwenmem.core.settings.gen2 import workspace_generation
    from qwenmem.core.tokens import get_counter

    health = report.sessions
    counter = get_counter("estimate", settings.token_count_estimate_divisor)
    rows = list_sessions(ws, counter, sort="name")
    health.total = len(rows)
    report.generation = _generation(ws, workspace_generation, health.total)
    threshold = health.compact_threshold = _threshold(ws, settings, report.generation)
    unhealthy = {r.key for r in rows if r.health != "ok"}
    health.ok = len(rows) - len(unhealthy)
    for row in rows:
        used = row.tokens + row.summary_tokens
        if row.health != "corrupt" and used >= NEAR_THRESHOLD * threshold:
            health.near_threshold.append({"key": row.key, "tokens": used, "threshold": threshold})
    if unhealthy:
        refs = [r for r in iter_session_refs(ws, include_backups=True) if r.key in unhealthy]
        backups = {r.key for r in refs if r.is_backup}
        for rep in run_repair(ws, refs, CHECK).files:  # CHECK reads and classifies; it never writes or locks
            bucket = {"needs_repair": health.corrupt, "needs_flag": health.needs_flag,
                      "unrecoverable": health.unrecoverable, "error": health.unrecoverable,
                      "warning": health.warnings}.get(rep.status)
            if rep.key in backups and rep.status != "ok":
                bucket = health.warnings  # evidence that `repair --from-backup` reads; `repair --all` rightly skips it
            if bucket is not None:
                bucket.append(rep.key)
            elif rep.status == "ok":
                health.ok += 1
    _session_findings(health, report.findings)


def _threshold(ws: Workspace, settings: Settings, generation: str) -> int:
    """The compaction threshold `info` reports: in a 2.x workspace QwenPaw 2.x's, for its 1.x files too."""
    from qwenmem.core.settings.gen2 import derived_limits, load_gen2_settings

    if generation not in ("2.x", "mixed"):
        return settings.compact_threshold
    try:
        gen2 = load_gen2_settings(ws)
    except (OSError, ValueError, QwenmemError):  # a damaged agent.json is `info`'s and the schedule's business
        return settings.compact_threshold
    return derived_limits(settings, gen2)["compact_threshold"]


def _generation(ws: Workspace, workspace_generation: Callable[[Workspace, int, int], GenerationSummary],
                sessions: int) -> WorkspaceGeneration:
    """From the marker files (history.db, file_store, ...); a workspace with only sessions is 1.x."""
    generation = workspace_generation(ws, 0, 0).generation
    return "1.x" if generation == "unknown" and sessions else generation


def _keys(keys: list[str]) -> str:
    shown = ", ".join(keys[:SHOWN_PER_KIND])
    return shown + (f" and {len(keys) - SHOWN_PER_KIND} more" if len(keys) > SHOWN_PER_KIND else "")


def _session_findings(h: SessionsHealth, out: list[Finding]) -> None:
    if h.corrupt:
        out.append(Finding(ATTENTION, "sessions", f"{len(h.corrupt)} damaged (sessions repair --all): "
                           f"{_keys(h.corrupt)}"))
    if h.needs_flag:
        out.append(Finding(ATTENTION, "sessions", f"{len(h.needs_flag)} need a repair flag (sessions repair "
                           f"--check says which): {_keys(h.needs_flag)}"))
    if h.unrecoverable:
        out.append(Finding(ATTENTION, "sessions", f"{len(h.unrecoverable)} unrecoverable without a backup: "
                           f"{_keys(h.unrecoverable)}"))
    if h.warnings:
        out.append(Finding(NOTE, "sessions", f"{len(h.warnings)} with warnings (nothing safe to change): "
                           f"{_keys(h.warnings)}"))
    if h.near_threshold:
        keys = [s["key"] for s in sorted(h.near_threshold, key=lambda s: -s["tokens"])]
        out.append(Finding(NOTE, "sessions", f"{len(keys)} at ≥{NEAR_THRESHOLD:.0%} of the compaction threshold "
                           f"({h.compact_threshold:,} tokens): {_keys(keys)}"))


# ---- search index


def _index(ws: Workspace, report: AgentReport) -> None:
    from qwenmem.core.index import store
    from qwenmem.core.index.search import stale_files

    idx = report.index
    gen = store.current_generation(ws)
    if gen is None:
        idx.state = "missing"
        has_memory = ws.memory_md.is_file() or (ws.memory_dir.is_dir() and any(ws.memory_dir.glob("*.md")))
        if has_memory:
            report.findings.append(Finding(NOTE, "index", "no search index yet (qwenmem reindex)"))
        return
    manifest = store.Manifest.load(gen)
    idx.generation = gen.name
    if manifest is None:
        idx.state = "damaged"
        report.findings.append(Finding(ATTENTION, "index", f"index {gen.name} is damaged (qwenmem reindex --full)"))
        return
    idx.built_at = manifest.built_at or None
    idx.embedder = (manifest.embedder or {}).get("model_id") or None
    idx.files = len(manifest.files)
    idx.chunks = sum(int(f.get("chunks") or 0) for f in manifest.files.values())
    if not store.usable(gen, manifest):
        idx.state = "damaged"
        idx.vectors_missing = bool(idx.embedder)
        report.findings.append(Finding(ATTENTION, "index", f"index {gen.name} is damaged: a part is missing or "
                                       "does not match (the next search or qwenmem reindex rebuilds it)"))
        return
    if manifest.vectors_missing and idx.embedder:  # what reindex and search say about the same manifest
        idx.vectors_missing = True
        report.findings.append(Finding(NOTE, "index", f"{manifest.vectors_missing} of {idx.chunks} chunk(s) have no "
                                       "vectors (the embedder failed when they were indexed): full text alone finds "
                                       "them until `qwenmem reindex` embeds them"))
    idx.stale_files = stale_files(ws, manifest)
    idx.state = "stale" if idx.stale_files else "ok"
    if idx.stale_files:
        report.findings.append(Finding(NOTE, "index", f"index is stale: {len(idx.stale_files)} file(s) changed "
                                       "since it was built (the next search refreshes it)"))


# ---- dream


def _dream(ws: Workspace, report: AgentReport) -> None:
    from qwenmem.core.dream.changelog import read_entries

    entries = read_entries(ws.backup_dir)
    d = report.dream
    d.runs = len(entries)
    if not entries:
        return
    last = entries[-1]
    d.last_time, d.last_kind, d.last_mode = last.get("time"), last.get("kind"), last.get("mode")
    d.last_backup = last.get("backup")
    for change in last.get("changes") or []:
        action = change.get("action") if isinstance(change, dict) else None
        if isinstance(action, str):
            d.last_changes[action] = d.last_changes.get(action, 0) + 1
    flagged = d.last_changes.get("flagged", 0)
    if flagged:
        report.findings.append(Finding(NOTE, "dream", f"the last dream flagged {flagged} possible "
                                       "contradiction(s) in MEMORY.md for a person to read"))


# ---- storage


def _stamp(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


def _area(name: str, top: Path) -> StorageArea:
    area = StorageArea(name)
    oldest = newest = None
    stack = [top]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                        continue
                    st = entry.stat(follow_symlinks=False)
                    area.files += 1
                    area.bytes += st.st_size
                    oldest = st.st_mtime if oldest is None else min(oldest, st.st_mtime)
                    newest = st.st_mtime if newest is None else max(newest, st.st_mtime)
        except OSError:
            continue
    area.oldest = _stamp(oldest) if oldest is not None else None
    area.newest = _stamp(newest) if newest is not None else None
    return area


def _storage(ws: Workspace, report: AgentReport, now: datetime) -> None:
    for name, top in ((".qwenmem/quarantine", ws.data_dir / "quarantine"), (".qwenmem/backups", ws.data_dir / "backups"),
                      ("backup", ws.backup_dir)):
        if top.is_dir() and not top.is_symlink():
            report.storage.append(_area(name, top))
    for area in report.storage:
        if area.name == ".qwenmem/quarantine" and area.oldest:
            age = (now - datetime.fromisoformat(area.oldest)).days
            if age >= 30:
                report.findings.append(Finding(NOTE, "storage", f"quarantine holds {area.files} file(s), "
                                               f"{area.bytes:,} bytes, the oldest {age} days old (never deleted by "
                                               "qwenmem; remove what you no longer need)"))


# ---- QwenPaw's own dream job


def _schedule(settings: Settings, report: AgentReport) -> None:
    sched = report.schedule
    sched.dream_cron = str(settings.dream_cron or "")
    sched.source = settings.source_of("dream_cron")
    # QwenPaw 2.x: `if cfg.dream_cron_enabled and cfg.dream_cron` (reme_light_memory_manager.py L428 @2.2.2.post1)
    sched.qwenpaw_dreams = settings.dream_cron_enabled and bool(sched.dream_cron.strip())
    if sched.qwenpaw_dreams and report.dream.runs and report.dream.last_kind != "restore":
        switch = ("set dream_cron_enabled to false" if settings.source_of("dream_cron_enabled") != "default"
                  else f"set dream_cron {sched.dream_cron!r} to \"\"")
        report.findings.append(Finding(ATTENTION, "schedule", f"two dreams run: {switch} in agent.json"))
    elif sched.qwenpaw_dreams:
        report.findings.append(Finding(NOTE, "schedule", f"QwenPaw's own dream runs at {sched.dream_cron!r} "
                                       "(no validation, no rollback)"))


# ---- history database (QwenPaw 2.x)


def _history(ws: Workspace, report: AgentReport) -> None:
    """`qwenmem history check` (integrity, full-text table, bad JSON, dangling pointers, retention), read-only."""
    from qwenmem.core.history.check import PROBLEM, check_history
    from qwenmem.core.settings.gen2 import load_gen2_settings

    h = report.history
    try:
        gen2 = load_gen2_settings(ws)
    except Exception as exc:  # noqa: BLE001 - a config this reader does not know is reported, not fatal
        h.status, h.detail = "unreadable", f"cannot read the 2.x settings: {exc}"
        report.findings.append(Finding(ATTENTION, "history", h.detail))
        return
    path = gen2.history_db
    if path is None or not (path.exists() or report.generation in ("2.x", "mixed")):
        return  # a 1.x workspace has no history database
    from qwenmem.core.session_rows import rows_locator

    check = check_history(path, ws.sessions_dir, gen2.history_retention_days, locate=rows_locator(ws))
    state = check.state
    h.status, h.path, h.size, h.rows, h.sessions, h.detail = (state.status, state.path, state.size, state.rows,
                                                              state.sessions, state.detail)
    h.integrity, h.fts = check.integrity, check.fts
    if state.status == "ok" and check.integrity not in ("ok", "not checked"):
        h.status = "corrupt"
    for f in check.findings:
        h.findings.append(f.message)
        report.findings.append(Finding(ATTENTION if f.severity == PROBLEM else NOTE, "history", f.message))
    if state.status not in ("ok", "missing") and not check.findings:
        report.findings.append(Finding(ATTENTION, "history", f"history.db is {state.status}: {state.detail}"))


# ---- what a killed run left behind (core.leftovers: dead writers' temporaries, abandoned index generations)


def _temporaries(ws: Workspace, report: AgentReport) -> None:
    from qwenmem.core.leftovers import find_stale_leftovers

    t = report.temporaries
    stale = find_stale_leftovers(ws)  # writes nothing, not even the index lock file
    t.status = "found" if stale else "ok"
    t.stale = [f"{ws.relative(Path(s.path))} ({s.kind})" for s in stale]
    t.bytes = sum(int(s.size) for s in stale)
    if stale:
        report.findings.append(Finding(NOTE, "temporaries", f"{len(stale)} leftover(s) of a killed run "
                                       f"({t.bytes:,} bytes; the next locked run removes them)"))


def to_json(report: DoctorReport) -> dict[str, Any]:
    """The `doctor --json` result (keys pinned by tests/contract/test_json_contract.py)."""
    from dataclasses import asdict

    doc = asdict(report)
    doc["needs_attention"] = report.needs_attention
    for agent, data in zip(report.agents, doc["agents"]):
        data["needs_attention"] = agent.needs_attention
    plain: dict[str, Any] = json.loads(json.dumps(doc, default=str))  # a JSON object: asdict of a dataclass
    return plain
