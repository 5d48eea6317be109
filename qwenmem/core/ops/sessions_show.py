"""`sessions show`: one conversation of either generation, or its full record from history.db (`--history`),
as the generation-neutral messages of qwenmem.core.session_model. Read-only."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import CodedError, Outcome
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.history.record import HistoryRecord
    from qwenmem.core.session_model.model import Generation, Message, Session
    from qwenmem.core.sessions import Health, LoadedSession, SessionRef


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem sessions show` but --json, with the CLI's defaults."""

    session: str  # key, file name, path or QwenPaw session id (with --history: also a session only in history.db)
    tail: int | None = None  # only the last N messages
    role: str | None = None  # only messages with this role
    full: bool = False  # people's view: tool results not shortened
    thinking: bool = False  # people's view: thinking blocks in full
    compressed: bool = True  # include messages marked compressed
    history: bool = False  # the full record from history.db
    # each shown message's JSON shape (`--json`); a 2.x view without it renders a 20,000-row record faster
    normalized: bool = True


@dataclass
class ShownMessage:
    index: int
    marks: list[Any]
    message: Any
    normalized: dict[str, Any] | None  # session_model.Message.to_json(): the shape history.db rows also take


@dataclass
class SessionsShowResult:
    """`sessions show --json` result."""

    key: str | None  # None (like path, channel, user_id) for a session only in history.db (`--history`)
    path: str | None
    channel: str | None
    user_id: str | None
    session_id: str | None
    health: Health
    salvaged: bool
    problems: list[str]
    summary: str | None
    total_messages: int
    messages: list[Any]  # ShownMessage for 1.x files; normalised messages for 2.x (session_model.Message.to_json)
    generation: Generation | None = None
    scroll: dict[str, Any] | None = None  # 2.x scroll state: continuation summary, eviction index
    history: dict[str, Any] | None = None  # --history: the full record (core.history.record.HistoryRecord)


@dataclass
class ShownSession:
    """The JSON result and the neutral messages people's view renders."""

    result: SessionsShowResult
    ref: SessionRef | None  # None: a session only in history.db
    model: Session | None
    record: HistoryRecord | None  # --history
    shown: list[Message]  # after --role, --tail and --no-compressed
    total: int
    # a 1.x file without --history: its JSON keeps each message as written beside the normalised one, and its
    # messages are shown as written (marks and blocks), as they always were
    as_written: bool


def run(ws: Workspace, options: Options) -> Outcome[ShownSession]:
    """Problems (exit 0) for a damaged file shown from what can be read; problems (exit 1, error `unrecoverable`)
    for a 1.x file of which nothing can be salvaged."""
    from qwenmem.core.errors import NotFoundError
    from qwenmem.core.sessions import find_session, load_session

    with recording() as log:
        ref: SessionRef | None
        try:
            ref = find_session(ws, options.session)
        except NotFoundError:
            if not options.history:
                raise
            ref = None  # a session that exists only in history.db
        loaded = load_session(ref) if ref is not None else None
        if options.history or (loaded is not None and loaded.generation == "2.x"):
            outcome = _neutral(ws, ref, loaded, options)
        else:
            assert ref is not None and loaded is not None  # without --history a missing session raised above
            outcome = _as_written(ref, loaded, options)
    return dataclasses.replace(outcome, events=log.events)


def _as_written(ref: SessionRef, loaded: LoadedSession, options: Options) -> Outcome[ShownSession]:
    doc = loaded.session
    entries = doc.entries() if doc else []
    indexed = [(i, e) for i, e in enumerate(entries) if options.compressed or not e.compressed]
    if options.role:
        indexed = [(i, e) for i, e in indexed if isinstance(e.msg, dict) and e.msg.get("role") == options.role]
    if options.tail:
        indexed = indexed[-options.tail:]
    model = loaded.as_model()  # once, not once per shown message
    data = SessionsShowResult(
        ref.key, ref.rel, ref.channel, ref.user_id, ref.session_id, loaded.health, loaded.salvaged, loaded.problems,
        doc.summary if doc else None, len(entries),
        [ShownMessage(i, e.marks, e.msg, model.messages[i].to_json() if model else None)
         for i, e in indexed], loaded.generation)
    shown = [model.messages[i] for i, _ in indexed] if model else []
    view = ShownSession(data, ref, model, None, shown, len(entries), as_written=True)
    if doc is None:  # nothing salvaged: exit 1, with or without --json
        return Outcome("problems", view, errors=(CodedError(
            "unrecoverable", f"{ref.rel}: nothing can be salvaged ({'; '.join(loaded.problems)})"),))
    warnings = []
    if loaded.health == "corrupt":
        warnings.append(f"{ref.rel} is damaged; showing the {len(entries)} message(s) that can be salvaged "
                        f"({'; '.join(loaded.problems)})")
    elif loaded.problems:
        warnings.append(_some(loaded.problems))
    # a damaged file that could be salvaged is shown, and is no failure: exit 0, status problems
    return Outcome("problems" if loaded.health == "corrupt" else "ok", view, tuple(warnings), exit_as="ok")


def _some(problems: list[str]) -> str:
    return "; ".join(problems[:5]) + (" …" if len(problems) > 5 else "")


def _neutral(ws: Workspace, ref: SessionRef | None, loaded: LoadedSession | None,
             options: Options) -> Outcome[ShownSession]:
    """A 2.x file, or any session's --history (`ref` and `loaded` None: a session only in history.db)."""
    model = loaded.as_model() if loaded is not None else None
    record = _record(ws, ref, loaded, options.session) if options.history else None
    messages = record.messages if record else (model.messages if model else [])
    shown = [m for m in messages if (options.compressed or not m.compressed)
             and (options.role is None or m.role == options.role)]
    shown = shown[-options.tail:] if options.tail else shown
    health = loaded.health if loaded is not None else "ok"
    normalised = [m.to_json() for m in shown] if options.normalized else []
    history_json = record.to_json(messages=False) if record else None
    if history_json is not None:  # the record's messages, filtered like the file's, in the same shape
        history_json["messages"] = normalised
    data = SessionsShowResult(
        ref.key if ref else None, ref.rel if ref else None, ref.channel if ref else None,
        ref.user_id if ref else None, record.session_id if record else (ref.session_id if ref else None),
        health, loaded.salvaged if loaded else False, loaded.problems if loaded else [],
        model.summary if model else None, len(messages), [] if record else normalised,
        model.generation if model else None, _scroll_json(model), history_json)
    warnings = []
    if ref is not None and loaded is not None and health == "corrupt":  # `loaded` is read from `ref`
        warnings.append(f"{ref.rel} is damaged; showing what can be read ({'; '.join(loaded.problems)})")
    elif loaded is not None and loaded.problems:
        warnings.append(_some(loaded.problems))
    view = ShownSession(data, ref, model, record, shown, len(messages), as_written=False)
    return Outcome("problems" if health == "corrupt" else "ok", view, tuple(warnings), exit_as="ok")


def _scroll_json(model: Session | None) -> dict[str, Any] | None:
    if model is None or model.scroll is None:
        return None
    return {"continuation_summary": model.scroll.continuation_summary, "index": model.scroll.index,
            "summary_update_failed": model.scroll.summary_update_failed,
            "synthetic_ids": model.scroll.synthetic_ids}


def _record(ws: Workspace, ref: SessionRef | None, loaded: LoadedSession | None, query: str) -> HistoryRecord:
    from qwenmem.core.errors import WorkspaceError
    from qwenmem.core.history import HistoryError
    from qwenmem.core.history.keys import rows_key_in
    from qwenmem.core.history.record import full_record
    from qwenmem.core.settings.gen2 import load_gen2_settings

    model = loaded.as_model() if loaded is not None else None
    # the store's path, which load_gen2_settings always sets (history_db_file raises TypeError, not a user error,
    # should it ever not); a store that is not there is HistoryError `missing` below, like any unreadable one
    db_path = load_gen2_settings(ws).history_db_file()
    if ref is None:
        session_id = query
    else:  # the rows rule of list, repair and compact (never agent.state.session_id)
        doc = loaded.gen2_doc if loaded is not None else None
        key = rows_key_in(ref, doc, db_path if db_path.is_file() else None).session_id or ref.session_id
        if key is None:  # not met: a file's ref always has a session id (its name's, at least)
            raise WorkspaceError(f"{ref.rel}: no session id to look its rows up by in history.db")
        session_id = key
    try:
        return full_record(db_path, session_id, model)
    except HistoryError as exc:
        raise WorkspaceError(f"history.db: {exc.detail} ({exc.path})") from None
