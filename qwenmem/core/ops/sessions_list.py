"""`sessions list`: every session file with its health, tokens and history.db rows (read-only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.listing import SessionRow
    from qwenmem.core.settings.gen2 import ContextStrategy

SortKey = Literal["modified", "name", "size", "messages", "tokens", "health"]  # qwenmem.core.listing.SORT_KEYS
Tokenizer = Literal["estimate", "o200k", "cl100k"]  # qwenmem.core.tokens.TOKENIZERS


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem sessions list` but the output's (--json, --format), with the CLI's defaults."""

    channel: str | None = None
    user: str | None = None
    since: str | None = None  # 7d, 12h, 2026-05-01 or an ISO timestamp, read when the listing runs
    sort: SortKey = "modified"
    reverse: bool = False
    limit: int | None = None
    tokenizer: Tokenizer = "estimate"


@dataclass
class SessionsListResult:
    """`sessions list --json` result."""

    workspace: str
    tokenizer: str
    count: int
    sessions: list[Any]  # SessionRow
    generation: dict[str, Any]  # the workspace's QwenPaw generation (1.x / 2.x / mixed) with file counts
    strategy: ContextStrategy  # 2.x context strategy; "light" for a 1.x agent.json
    history: dict[str, Any]  # history.db state (core.history.HistoryState)
    history_only: list[dict[str, Any]]  # sessions that exist only in history.db: {session_id, rows}

    @property
    def empty(self) -> bool:
        """Nothing listed: the warnings then say which filter matched nothing, as plain notes."""
        return not self.sessions and not self.history_only


def run(ws: Workspace, options: Options) -> Outcome[SessionsListResult]:
    """Always ok: what a reader should act on (damaged files, ambiguous names) is in the warnings."""
    from qwenmem.core.listing import list_sessions_with_history, no_match_note, parse_since
    from qwenmem.core.settings import load_settings
    from qwenmem.core.tokens import get_counter

    with recording() as log:
        settings = load_settings(ws)
        counter = get_counter(options.tokenizer, settings.token_count_estimate_divisor)
        since = parse_since(options.since) if options.since else None
        rows, extras = list_sessions_with_history(ws, counter, options.channel, options.user, since, options.sort,
                                                  options.reverse, options.limit)
        notes = list_notes(rows) + extras.notes
        more = extras.to_json()
        data = SessionsListResult(str(ws.path), counter.name, len(rows), rows, more["generation"], more["strategy"],
                                  more["history"], more["history_only"])
        if data.empty:  # say which filter matched nothing
            notes.append(no_match_note(ws, options.channel, options.user, since))
    return Outcome("ok", data, tuple(notes), events=log.events)


def list_notes(rows: list[SessionRow]) -> list[str]:
    """What a reader of the listing should act on; the same sentences go to stderr and into the JSON `warnings`."""
    from qwenmem.core.sessions import BACKUP_RE

    notes = []
    ambiguous = sum(r.ambiguous for r in rows)
    if ambiguous:
        notes.append(f"{ambiguous} file name(s) split ambiguously at '_' into user and session (marked ?); "
                     "chats.json would settle it")
    # CoPaw's *.json.backup_* copies are listed, but `repair --check`/`--all` cover live sessions only
    bad_backups = [r.key for r in rows if r.health == "corrupt" and BACKUP_RE.search(r.path)]
    bad = sum(r.health == "corrupt" for r in rows) - len(bad_backups)
    bad_backups += [b["key"] for r in rows for b in r.backups if b["health"] == "corrupt"]
    if bad:
        notes.append(f"{bad} corrupt session file(s); run `qwenmem sessions repair --check` for details")
    if bad_backups:
        notes.append(f"{len(bad_backups)} damaged backup copy(ies), which `repair --all` leaves alone; name one to "
                     f"check it: `qwenmem sessions repair {bad_backups[0]} --check`")
    return notes
