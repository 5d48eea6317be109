"""One dream, end to end: lock, read, consolidate (deterministically or with an LLM), back up, write, log.

The order is what keeps data safe: the backup is written and verified before MEMORY.md is replaced, the replace
is atomic and refused if MEMORY.md changed since it was read (QwenPaw may be writing it), and the change log is
appended only after the new file is in place. A crash at any point leaves MEMORY.md either old or new.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal

from qwenmem.core.dream import backups
from qwenmem.core.dream.changelog import RESTORED, Change, ChangelogEntry, DreamMode, append_entry
from qwenmem.core.dream.consolidate import consolidate
from qwenmem.core.dream.embedder import TextEmbedder
from qwenmem.core.dream.promote import PROMOTE_MODES
from qwenmem.core.errors import LLMError, UsageError, WorkspaceError
from qwenmem.core import confine, interrupts
from qwenmem.core.fsio import Snapshot, atomic_write_bytes, exclusive_lock, read_with_snapshot
from qwenmem.core.settings import Settings, user_tz
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.llm import LLMConfig
    from qwenmem.core.memory_layout import MemoryLayout

NEW_MEMORY_TEMPLATE = "# Long-Term Memory\n"
STEPS = ("locked", "backed-up", "written", "logged")  # what `DreamOptions.checkpoint` is called with, in order


@dataclass
class DreamOptions:
    date: str | None = None
    dry_run: bool = False
    promote: str = "facts"
    use_embeddings: bool = True
    similarity: float = 0.9
    max_shrink: float = 0.5
    allow_shrink: bool = False
    keep: int | None = None
    llm: LLMConfig | None = None  # None = deterministic mode
    refresh_index: bool = True
    embedder: TextEmbedder | None = None  # an already loaded embedder (benchmarks, tests); skips index lookup
    # called with each name in STEPS as a writing dream passes it (the crash tests kill the process there)
    checkpoint: Callable[[str], None] | None = None


DreamStatus = Literal["changed", "unchanged", "dry-run"]
DreamRestoreStatus = Literal["restored", "unchanged", "dry-run"]


@dataclass
class DreamResult:
    status: DreamStatus
    mode: DreamMode
    date: str
    memory: str
    daily_log: str | None
    backup: str | None = None
    changelog: str | None = None
    sha256_before: str = ""
    sha256_after: str = ""
    bytes_before: int = 0
    bytes_after: int = 0
    changes: list[Change] = field(default_factory=list)
    flagged: list[Change] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    diff: str = ""
    pruned: list[str] = field(default_factory=list)
    index_refreshed: bool | None = None
    embedding_model: str | None = None
    llm_model: str | None = None
    warnings: list[str] = field(default_factory=list)
    snapshot: str | None = None  # QwenPaw 2.x: the `qwenmem snapshot` of memory/, digest/, MEMORY.md taken first

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.changes:
            out[c.action] = out.get(c.action, 0) + 1
        return out


@dataclass
class RestoreResult:
    status: DreamRestoreStatus
    memory: str
    restored_from: str
    backup: str | None
    changelog: str | None
    sha256_before: str
    sha256_after: str
    diff: str
    pruned: list[str] = field(default_factory=list)


def _passed(options: DreamOptions, step: str) -> None:
    if options.checkpoint is not None:
        options.checkpoint(step)


def resolve_date(date: str | None, settings: Settings, now: datetime) -> str:
    if date is None or date == "today":
        return now.date().isoformat()
    if date == "yesterday":  # for a cron job that runs just after midnight
        return (now.date() - timedelta(days=1)).isoformat()
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        raise UsageError(f"--date {date!r}: expected YYYY-MM-DD, today or yesterday")
    try:
        datetime.strptime(date, "%Y-%m-%d")
    except ValueError:
        raise UsageError(f"--date {date!r}: not a real calendar date") from None
    return date


def _decode(data: bytes, path: Path) -> tuple[str, str]:
    """Text and the BOM it had (kept on write)."""
    bom = "\ufeff" if data.startswith(b"\xef\xbb\xbf") else ""
    try:
        return data.decode("utf-8-sig"), bom
    except UnicodeDecodeError as exc:
        raise WorkspaceError(f"{path}: not valid UTF-8 at byte {exc.start}; not touching it") from None


def memory_target(ws: Workspace) -> Path:
    """The file to read and replace. A symlinked MEMORY.md stays a symlink and its target is what gets replaced,
    when that target is inside the workspace; a link out of it is refused (UnsafeLinkError)."""
    path = ws.memory_md
    if path.is_symlink():
        target = confine.check(path)  # UnsafeLinkError for a link out of the workspace (MEMORY.md -> ~/.bashrc)
        if not target.exists():
            raise WorkspaceError(f"{path} is a symlink to {target}, which does not exist; not touching it")
        return target
    return path


def _read_memory(ws: Workspace) -> tuple[bytes, Snapshot]:
    path = memory_target(ws)
    if not path.exists() and not path.is_symlink():
        return b"", Snapshot(path, False, 0, 0, "")
    return read_with_snapshot(path, max_bytes=20 * 1024 * 1024)


def _read_day(ws: Workspace, layout: MemoryLayout, date: str, warnings: list[str]) -> tuple[str | None, str | None]:
    """(the day's log text, what it was read from). 1.x: memory/<date>.md. 2.x: the day's ReMe notes, its day page
    and the digest pages citing them, each entry citing its file (core/reme_promote.py); read, never written."""
    if not layout.is_gen2:
        text = _read_log(ws, date, warnings)
        return text, f"memory/{date}.md" if text is not None else None
    from qwenmem.core.reme_promote import day_log

    log = day_log(ws, date, layout.daily_dir, layout.digest_dir)
    warnings.extend(log.warnings)
    return log.text, log.describe()


def _read_log(ws: Workspace, date: str, warnings: list[str]) -> str | None:
    path = ws.memory_dir / f"{date}.md"
    if not path.is_file():
        return None
    try:
        data, _ = read_with_snapshot(path, max_bytes=20 * 1024 * 1024)
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        warnings.append(f"memory/{date}.md is not valid UTF-8; reading it with replacement characters")
        return data.decode("utf-8", errors="replace")
    except WorkspaceError as exc:
        warnings.append(f"daily log skipped: {exc}")
        return None


def unified_diff(old: str, new: str, name: str = "MEMORY.md") -> str:
    """A patch(1)-compatible diff: a last line without a newline gets diff's "\\ No newline at end of file"."""
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{name}", f"b/{name}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _load_embedder(ws: Workspace, settings: Settings, warnings: list[str]) -> TextEmbedder | None:
    """The search index's embedder, only when an index exists (the issue: near-duplicates 'when an index exists'):
    the model it was built with, none when it was built without vectors."""
    from qwenmem.core import index

    try:
        return index.index_embedder(ws, settings)
    except Exception as exc:  # noqa: BLE001 - embeddings are an optional refinement; dedupe still runs without
        warnings.append(f"near-duplicate detection skipped: cannot load the index's embedding model ({exc})")
        return None


EMBED_PROBE_TIMEOUT = 2.0  # seconds: a dead or hanging endpoint costs a dream this much, not two 60 s timeouts


def _reachable(embedder: TextEmbedder | None, warnings: list[str]) -> TextEmbedder | None:
    """A configured embedding endpoint that is down, hangs or answers junk must not fail a deterministic dream (from
    cron it would fail every night): one short request first (no retries); when it fails, the near-duplicate pass
    is skipped with one warning and the rest of the dream goes on. Local models have no probe."""
    probe = getattr(embedder, "probe", None)
    if embedder is None or probe is None:
        return embedder
    problem = probe(EMBED_PROBE_TIMEOUT)
    if problem is None:
        return embedder
    warnings.append(f"near-duplicate detection skipped: {problem}")
    return None


def _refresh_index(ws: Workspace, settings: Settings, warnings: list[str]) -> bool | None:
    from qwenmem.core import index

    try:
        if not index.index_exists(ws):
            return None
        index.reindex(ws, settings, full=False)
        return True
    except Exception as exc:  # noqa: BLE001 - MEMORY.md is already safely written; a stale index is recoverable
        warnings.append(f"MEMORY.md was updated but the search index was not refreshed ({exc}); "
                        "run `qwenmem reindex` later")
        return False


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def dream(ws: Workspace, settings: Settings, options: DreamOptions, now: datetime | None = None) -> DreamResult:
    if options.promote not in PROMOTE_MODES:
        raise UsageError(f"--promote {options.promote!r}: choose one of {', '.join(PROMOTE_MODES)}")
    if not 0 < options.max_shrink <= 1:
        raise UsageError("--max-shrink must be a fraction in (0, 1]")
    if not 0 < options.similarity <= 1:
        raise UsageError("--similarity must be in (0, 1]")
    now = now or datetime.now(user_tz(settings))
    date = resolve_date(options.date, settings, now)
    if options.dry_run:
        return _dream_locked(ws, settings, options, now, date)
    with exclusive_lock(ws.lock_path):
        _passed(options, "locked")
        result = _dream_locked(ws, settings, options, now, date)
    if result.status == "changed" and options.refresh_index:
        result.index_refreshed = _refresh_index(ws, settings, result.warnings)
    return result


def _dream_locked(ws: Workspace, settings: Settings, options: DreamOptions, now: datetime, date: str) -> DreamResult:
    from qwenmem.core.settings import timezone_problem

    warnings: list[str] = [w for w in [timezone_problem(settings)] if w and options.date in (None, "today", "yesterday")]
    from qwenmem.core.memory_layout import memory_layout

    layout = memory_layout(ws)
    old_bytes, snap = _read_memory(ws)
    old_text, bom = _decode(old_bytes, ws.memory_md)
    log_text, log_name = _read_day(ws, layout, date, warnings)
    result = DreamResult("unchanged", "llm" if options.llm else "deterministic", date, str(ws.memory_md),
                         log_name, warnings=warnings, sha256_before=_sha(old_bytes), bytes_before=len(old_bytes))
    if log_text is None:
        warnings.append(f"no notes for {date} in {layout.daily_dir}/{date}/, {layout.daily_dir}/{date}.md or "
                        f"{layout.digest_dir}/; only deduplicating MEMORY.md" if layout.is_gen2 else
                        f"no daily log memory/{date}.md; only deduplicating MEMORY.md")
    if not snap.exists and not log_text:
        warnings.append("no MEMORY.md and no daily log: nothing to do")
        return _finish_unchanged(result, old_bytes)
    if options.llm:
        new_text, changes, flagged, skipped = _llm_text(options, options.llm, old_text, log_text, date, result)
    else:
        embedder = options.embedder if options.embedder is not None else (
            _reachable(_load_embedder(ws, settings, warnings), warnings) if options.use_embeddings else None)
        result.embedding_model = getattr(embedder, "model_id", None) if embedder is not None else None
        base = old_text if snap.exists else NEW_MEMORY_TEMPLATE
        try:
            done = consolidate(base, log_text, date, embedder, options.similarity, options.promote)
        except LLMError as exc:  # the endpoint answered the probe, then failed: the same dream without it
            warnings.append(f"near-duplicate detection skipped: {exc}")
            result.embedding_model = None
            done = consolidate(base, log_text, date, None, options.similarity, options.promote)
        new_text, changes, flagged, skipped = done.text, done.changes, done.flagged, done.skipped
        warnings.extend(done.notes)
    result.changes, result.flagged, result.skipped = changes, flagged, skipped
    if not snap.exists and new_text == NEW_MEMORY_TEMPLATE:
        new_text = ""
    new_bytes = (bom + new_text).encode("utf-8")
    if new_bytes == old_bytes:
        return _finish_unchanged(result, old_bytes)
    result.diff = unified_diff(old_text, new_text)
    result.sha256_after, result.bytes_after = _sha(new_bytes), len(new_bytes)
    if options.dry_run:
        result.status = "dry-run"
        if options.keep:
            result.pruned = [str(p) for p in backups.prune_backups(ws, options.keep, dry_run=True, pending=1 if snap.exists else 0)]
        return result
    if layout.is_gen2:  # ReMe keeps no backups of memory/ and digest/: one before qwenmem writes anything
        from qwenmem.core.snapshot import create_locked

        result.snapshot = create_locked(ws, reason=f"before qwenmem dream {date}").snapshot.id
    backup = backups.create_backup(ws, old_bytes, now) if snap.exists else None
    result.backup = ws.relative(backup) if backup else None
    _passed(options, "backed-up")
    with interrupts.deferred():  # a Ctrl-C / SIGTERM here stops after the change log, never between write and log
        atomic_write_bytes(snap.path, new_bytes, expected=snap)
        result.status = "changed"
        _passed(options, "written")
        entry = ChangelogEntry(now.isoformat(timespec="seconds"), now.strftime("%Y%m%dT%H%M%S%f"), "dream",
                               result.mode, ws.relative(ws.memory_md), result.backup, result.sha256_before,
                               result.sha256_after, result.bytes_before, result.bytes_after, date, result.daily_log,
                               result.llm_model, changes + flagged)
        result.changelog = ws.relative(append_entry(ws.backup_dir, entry))
    _passed(options, "logged")
    if options.keep:
        result.pruned = [ws.relative(p) for p in backups.prune_backups(ws, options.keep, protect=backup)]
    return result


def _finish_unchanged(result: DreamResult, old_bytes: bytes) -> DreamResult:
    result.status = "unchanged"
    result.sha256_after, result.bytes_after = result.sha256_before, len(old_bytes)
    return result


def _llm_text(options: DreamOptions, llm: LLMConfig, old_text: str, log_text: str | None, date: str,
              result: DreamResult) -> tuple[str, list[Change], list[Change], list[str]]:
    from qwenmem.core.dream.llm_rewrite import propose, reattach_front_matter, split_front_matter
    from qwenmem.core.dream.validate import check_rewrite
    from qwenmem.core.llm import ChatClient

    front_matter, body = split_front_matter(old_text)
    result.llm_model = getattr(llm, "model", None)
    proposed, changes = propose(ChatClient(llm), body, log_text, date)
    if old_text.count("\r\n") * 2 > old_text.count("\n"):  # a CRLF file stays CRLF (models answer with LF)
        proposed = proposed.replace("\r\n", "\n").replace("\n", "\r\n")
    new_text = reattach_front_matter(front_matter, body, proposed)
    _, new_body = split_front_matter(new_text)
    changes = check_rewrite(body, new_body, changes, options.max_shrink, options.allow_shrink)
    return new_text, changes, [], []


def restore(ws: Workspace, settings: Settings, name: str | None, dry_run: bool = False, keep: int | None = None,
            now: datetime | None = None) -> RestoreResult:
    """Put a backup back as MEMORY.md; the current MEMORY.md is itself backed up first."""
    now = now or datetime.now(user_tz(settings))
    source = backups.resolve_backup(ws, name)
    if dry_run:
        return _restore_locked(ws, source, True, keep, now)
    with exclusive_lock(ws.lock_path):
        return _restore_locked(ws, source, False, keep, now)


def _restore_locked(ws: Workspace, source: Path, dry_run: bool, keep: int | None, now: datetime) -> RestoreResult:
    wanted, _ = read_with_snapshot(source)
    current, snap = _read_memory(ws)
    diff = unified_diff(current.decode("utf-8", errors="replace"), wanted.decode("utf-8", errors="replace"))
    result = RestoreResult("unchanged", str(ws.memory_md), ws.relative(source), None, None, _sha(current),
                           _sha(wanted), diff)
    if wanted == current:
        return result
    if dry_run:
        result.status = "dry-run"
        return result
    backup = backups.create_backup(ws, current, now) if snap.exists else None
    result.backup = ws.relative(backup) if backup else None
    atomic_write_bytes(snap.path, wanted, expected=snap)
    result.status = "restored"
    entry = ChangelogEntry(now.isoformat(timespec="seconds"), now.strftime("%Y%m%dT%H%M%S%f"), "restore", "restore",
                           ws.relative(ws.memory_md), result.backup, result.sha256_before, result.sha256_after,
                           len(current), len(wanted),
                           changes=[Change(RESTORED, f"restored from {ws.relative(source)} on request")])
    result.changelog = ws.relative(append_entry(ws.backup_dir, entry))
    if keep:
        result.pruned = [ws.relative(p) for p in backups.prune_backups(ws, keep, protect=backup)]
    return result
