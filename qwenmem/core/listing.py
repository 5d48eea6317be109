"""`sessions list` as data: one summary row per session file, computed one file at a time (memory stays flat)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
import re

from qwenmem.core.errors import UsageError
from qwenmem.core.sessions import LoadedSession, iter_session_refs, load_session
from qwenmem.core.tokens import TokenCounter, message_tokens
from qwenmem.core.workspace import Workspace

SORT_KEYS = ("modified", "name", "size", "messages", "tokens", "health")


@dataclass
class SessionRow:
    key: str
    path: str
    channel: str | None
    user_id: str | None
    session_id: str | None
    identity: str
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
    health: str
    problems: list[str] = field(default_factory=list)
    stale_flat_copy: bool = False


def row_for(loaded: LoadedSession, counter: TokenCounter) -> SessionRow:
    ref, doc = loaded.ref, loaded.session
    messages = in_context = tokens = summary_tokens = 0
    first = last = None
    if doc is not None:
        entries = doc.entries()
        messages = len(entries)
        for entry in entries:
            if not entry.compressed:
                in_context += 1
                tokens += message_tokens(entry.msg, counter)
        stamps = [e.msg.get("timestamp") for e in entries if isinstance(e.msg, dict) and e.msg.get("timestamp")]
        first, last = (stamps[0], stamps[-1]) if stamps else (None, None)
        summary_tokens = counter.count(doc.summary)
    return SessionRow(
        key=ref.key, path=ref.rel, channel=ref.channel, user_id=ref.user_id, session_id=ref.session_id,
        identity=ref.source, ambiguous=ref.ambiguous, messages=messages, in_context=in_context, tokens=tokens,
        has_summary=bool(doc and doc.summary), summary_tokens=summary_tokens, size=loaded.size,
        modified=loaded.mtime.isoformat(timespec="seconds") if loaded.mtime else None,
        first_timestamp=first, last_timestamp=last, health=loaded.health, problems=loaded.problems,
        stale_flat_copy=ref.stale_flat_copy,
    )


_DURATION = re.compile(r"^(\d+)\s*([smhdw])$")


def parse_since(value: str, now: datetime | None = None) -> datetime:
    """'7d', '12h', '2026-05-01' or an ISO timestamp → an aware datetime."""
    now = now or datetime.now(timezone.utc)
    m = _DURATION.match(value.strip())
    if m:
        n, unit = int(m.group(1)), m.group(2)
        return now - timedelta(**{{"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[unit]: n})
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--since {value!r}: use a date (2026-05-01), a timestamp, or a duration like 7d or 12h") from None
    return parsed if parsed.tzinfo else parsed.astimezone()


def list_sessions(ws: Workspace, counter: TokenCounter, channel: str | None = None, user: str | None = None,
                  since: datetime | None = None, sort: str = "modified", reverse: bool = False,
                  limit: int | None = None) -> list[SessionRow]:
    if sort not in SORT_KEYS:
        raise UsageError(f"--sort {sort!r}: choose one of {', '.join(SORT_KEYS)}")
    rows = []
    for ref in iter_session_refs(ws):
        if channel is not None and (ref.channel or "") != channel:
            continue
        if user is not None and ref.user_id != user:
            continue
        if since is not None:
            try:
                if datetime.fromtimestamp(ref.path.stat().st_mtime, tz=timezone.utc) < since:
                    continue
            except OSError:
                pass
        rows.append(row_for(load_session(ref), counter))
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
    return rows[:limit] if limit else rows
