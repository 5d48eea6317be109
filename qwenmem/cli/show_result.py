"""The `sessions show --json` result types, shared by cli/sessions.py (1.x files) and cli/show2.py (2.x files and
`--history`), which would otherwise import each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qwenmem.core.session_model.model import Generation
    from qwenmem.core.sessions import Health


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
