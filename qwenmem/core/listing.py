"""`sessions list` as data: one summary row per session file, computed one file at a time (memory stays flat)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
import functools
import multiprocessing as mp
import os
import re
from typing import TYPE_CHECKING, Any, Iterable, TypedDict

from qwenmem.core.errors import UsageError
from qwenmem.core.session_model.model import Generation
from qwenmem.core.sessions import Health, IdentitySource, LoadedSession, SessionRef, backed_up_name, is_session_backup, iter_session_refs, load_session
from qwenmem.core.tokens import EstimateCounter, TokenCounter, get_counter, message_tokens
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:  # overview imports settings.gen2 and the history reader: only when a listing is annotated
    from qwenmem.core.history.keys import RowsKeySource
    from qwenmem.core.history.overview import ListingHistory

SORT_KEYS = ("modified", "name", "size", "messages", "tokens", "health")


class BackupCopy(TypedDict):
    """A session's `*.json.backup_*` sibling, folded under its row (`repair --from-backup` reads it)."""

    key: str
    path: str
    messages: int
    size: int
    modified: str | None
    health: Health
    problems: list[str]


@dataclass
class SessionRow:
    key: str
    path: str
    channel: str | None
    user_id: str | None
    session_id: str | None
    identity: IdentitySource | RowsKeySource  # the file name and chats.json, or for 2.x the key history.db uses
    ambiguous: bool
    messages: int
    in_context: int
    tokens: int
    has_summary: bool
    summary_tokens: int
    size: int
    modified: str | None
    first_timestamp: str | None
    last_timestamp: str | None
    health: Health
    problems: list[str] = field(default_factory=list)
    stale_flat_copy: bool = False
    generation: Generation | None = None  # None: not readable as a session
    history_rows: int | None = None  # rows of this session in history.db (2.x workspaces; None: no store/unknown)
    at_risk: list[str] = field(default_factory=list)  # 1.x files whose turns QwenPaw 2.x will not import
    backups: list[BackupCopy] = field(default_factory=list)  # this session's *.json.backup_* siblings


BACKUP_FIELDS = tuple(BackupCopy.__annotations__)  # ("key", "path", "messages", …), in that order


def fold_backups(rows: list[SessionRow]) -> list[SessionRow]:
    """A backup sibling goes under the session it backs up, not in a row of its own; one whose session file is
    gone keeps its row (it may be all that is left: `repair --from-backup` rebuilds the session from it)."""
    live = {r.path: r for r in rows if not is_session_backup(r.path.rsplit("/", 1)[-1])}
    out = []
    for row in rows:
        head, _, name = row.path.rpartition("/")
        if not is_session_backup(name):
            out.append(row)
            continue
        owner = live.get(f"{head}/{backed_up_name(name)}" if head else backed_up_name(name))
        if owner is None:
            row.problems = row.problems + [f"a backup copy of {backed_up_name(name)}, which does not exist"]
            out.append(row)
        else:
            owner.backups.append(BackupCopy(key=row.key, path=row.path, messages=row.messages, size=row.size,
                                            modified=row.modified, health=row.health, problems=row.problems))
    for row in out:
        row.backups.sort(key=lambda b: b["path"])
    return out


def _row_gen2(loaded: LoadedSession, gen2_doc: dict[str, Any], counter: TokenCounter) -> SessionRow:
    """A 2.x file: `messages` is the live tail (the scroll placeholder is not transcript); the model sees them all."""
    from qwenmem.core.session_model.gen2 import quick_stats

    from qwenmem.core.history.keys import rows_key

    ref, st = loaded.ref, quick_stats(gen2_doc)
    key = rows_key(ref, gen2_doc)  # never agent.state.session_id: QwenPaw leaves it random
    session_id, identity = (key.session_id, key.source) if key.certain else (ref.session_id, ref.source)
    return SessionRow(
        key=ref.key, path=ref.rel, channel=ref.channel, user_id=ref.user_id, session_id=session_id,
        identity=identity, ambiguous=ref.ambiguous and not key.certain,
        messages=st["messages"], in_context=st["in_context"],
        tokens=sum(message_tokens(m, counter) for m in st["context"]),
        has_summary=bool(st["summary"] or st["continuation_summary"]), summary_tokens=counter.count(st["summary"]),
        size=loaded.size, modified=loaded.mtime.isoformat(timespec="seconds") if loaded.mtime else None,
        first_timestamp=st["first"], last_timestamp=st["last"], health=loaded.health, problems=loaded.problems,
        stale_flat_copy=ref.stale_flat_copy, generation="2.x")


def row_for(loaded: LoadedSession, counter: TokenCounter) -> SessionRow:
    if loaded.gen2_doc is not None:
        return _row_gen2(loaded, loaded.gen2_doc, counter)
    ref, doc = loaded.ref, loaded.session
    messages = in_context = tokens = summary_tokens = 0
    first = last = None
    if doc is not None:
        content = doc.content
        messages = len(content)
        for item in content:  # raw items, not Entry objects: this loop runs for every message of every session
            if type(item) is list and len(item) == 2:
                msg, marks = item
                if type(marks) is list and "compressed" in marks:
                    continue
            else:
                msg = item
            in_context += 1
            tokens += message_tokens(msg, counter)
        # only strings: a row travels back from a pool worker by pickle, which a deeply nested value breaks
        stamps = [m["timestamp"] for m in (i[0] if type(i) is list and i else i for i in content)
                  if type(m) is dict and type(m.get("timestamp")) is str and m["timestamp"]]
        first, last = (stamps[0], stamps[-1]) if stamps else (None, None)
        summary_tokens = counter.count(doc.summary)
    return SessionRow(
        key=ref.key, path=ref.rel, channel=ref.channel, user_id=ref.user_id, session_id=ref.session_id,
        identity=ref.source, ambiguous=ref.ambiguous, messages=messages, in_context=in_context, tokens=tokens,
        has_summary=bool(doc and doc.summary), summary_tokens=summary_tokens, size=loaded.size,
        modified=loaded.mtime.isoformat(timespec="seconds") if loaded.mtime else None,
        first_timestamp=first, last_timestamp=last, health=loaded.health, problems=loaded.problems,
        stale_flat_copy=ref.stale_flat_copy, generation="1.x" if doc is not None else None,
    )


PARALLEL_MIN_FILES = 64


def _init_worker() -> None:
    from qwenmem.core.interrupts import quiet_worker_signals

    quiet_worker_signals()


@functools.lru_cache(maxsize=2)  # a cache, not state: one counter per (name, divisor) in each pool worker process
def _counter_in_worker(counter_name: str, divisor: float) -> TokenCounter:
    return get_counter(counter_name, divisor)


def _row_in_worker(counter_name: str, divisor: float, ref: SessionRef) -> SessionRow:
    return row_for(load_session(ref), _counter_in_worker(counter_name, divisor))


def _rows(refs: list[SessionRef], counter: TokenCounter) -> list[SessionRow]:
    """Parse sessions one at a time; on a multi-core machine, in a small fork pool (JSON parsing is CPU-bound)."""
    workers = min(os.cpu_count() or 1, 4)
    if len(refs) < PARALLEL_MIN_FILES or workers < 2 or "fork" not in mp.get_all_start_methods():
        return [row_for(load_session(ref), counter) for ref in refs]
    spec = ("estimate", getattr(counter, "divisor", 4)) if isinstance(counter, EstimateCounter) else (counter.name, 4)
    with mp.get_context("fork").Pool(workers, _init_worker) as pool:
        return pool.map(functools.partial(_row_in_worker, *spec), refs, chunksize=16)


_DURATION = re.compile(r"^(\d+)\s*([smhdw])$")


def parse_since(value: str, now: datetime | None = None) -> datetime:
    """'7d', '12h', '2026-05-01' or an ISO timestamp → an aware datetime."""
    now = now or datetime.now(timezone.utc)
    m = _DURATION.match(value.strip())
    if m:
        n, unit = int(m.group(1)), m.group(2)
        try:
            return now - timedelta(**{{"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[unit]: n})
        except OverflowError:  # further back than year 1: every file qualifies
            return datetime.min.replace(tzinfo=timezone.utc)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--since {value!r}: use a date (2026-05-01), a timestamp, or a duration like 7d or 12h") from None
    return parsed if parsed.tzinfo else parsed.astimezone()


def matches_user(ref: SessionRef, user: str) -> bool:
    """The user id, or any user id an ambiguous file name could split into (`ou_x_y.json` may be user `ou_x`)."""
    return ref.user_id == user or any(u == user for u, _ in ref.alternatives)


def _names(values: Iterable[str | None]) -> str:
    names = sorted(v for v in set(values) if v)
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    return shown or "none"


def no_match_note(ws: Workspace, channel: str | None = None, user: str | None = None, since: datetime | None = None) -> str:
    """Why `sessions list` printed nothing: no files at all, or filters that match none of them (and what exists)."""
    refs = list(iter_session_refs(ws))
    if not refs:
        return f"no session files under {ws.sessions_dir}"
    given = [f"--{name} {value}" for name, value in (("channel", channel), ("user", user)) if value is not None]
    if since is not None:
        given.append(f"--since {since.isoformat(timespec='seconds')}")
    hints = []
    if channel is not None:
        hints.append(f"channels: {_names(r.channel for r in refs)}")
    if user is not None:
        scope = [r for r in refs if channel is None or (r.channel or "") == channel]
        users = (u for r in scope for u in ([r.user_id] if not r.ambiguous else [a for a, _ in r.alternatives]))
        hints.append(f"users{' in ' + channel if channel is not None else ''}: {_names(users)}")
    return (f"no session matches {' '.join(given) or 'the filters'} ({len(refs)} session file(s) in "
            f"{ws.sessions_dir}" + ("; " + "; ".join(hints) if hints else "") + ")")


def list_sessions(ws: Workspace, counter: TokenCounter, channel: str | None = None, user: str | None = None,
                  since: datetime | None = None, sort: str = "modified", reverse: bool = False,
                  limit: int | None = None) -> list[SessionRow]:
    return list_sessions_with_history(ws, counter, channel, user, since, sort, reverse, limit)[0]


def list_sessions_with_history(ws: Workspace, counter: TokenCounter, channel: str | None = None,
                               user: str | None = None, since: datetime | None = None, sort: str = "modified",
                               reverse: bool = False, limit: int | None = None
                               ) -> tuple[list[SessionRow], ListingHistory]:
    """(rows, ListingHistory): the rows with their history.db row counts and at-risk flags, plus the workspace's
    generation, the store's state and the sessions that exist only in history.db."""
    from qwenmem.core.history.keys import ref_candidates
    from qwenmem.core.history.overview import annotate

    if sort not in SORT_KEYS:
        raise UsageError(f"--sort {sort!r}: choose one of {', '.join(SORT_KEYS)}")
    refs = []
    all_ids: set[str] = set()
    for ref in iter_session_refs(ws, include_backups=True):
        if ref.session_id and ref.source == "chats.json":
            all_ids.add(ref.session_id)
        if channel is not None and (ref.channel or "") != channel:
            continue
        if user is not None and not matches_user(ref, user):
            continue
        if since is not None:
            try:
                if datetime.fromtimestamp(ref.path.stat().st_mtime, tz=timezone.utc) < since:
                    continue
            except OSError:
                pass
        refs.append(ref)
    rows = fold_backups(_rows(refs, counter))
    extras = annotate(ws, rows, all_ids, {ref.rel: ref_candidates(ref) for ref in refs})
    keyfunc = {
        "modified": lambda r: r.modified or "",
        "name": lambda r: r.key,
        "size": lambda r: r.size,
        "messages": lambda r: r.messages,
        "tokens": lambda r: r.tokens,
        "health": lambda r: ("corrupt", "warnings", "ok").index(r.health),
    }[sort]
    # newest / largest first by default; names alphabetically
    rows.sort(key=keyfunc, reverse=(sort not in ("name", "health")) != reverse)
    return (rows[:limit] if limit else rows), extras
