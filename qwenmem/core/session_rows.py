"""Which history.db rows a session file's bookkeeping points at, by `history.keys`' rule, for `history check`.

It sits at the loading layer (it needs the loader's chats.json index and file identities), so history reading can
take the rule as a function without importing loading."""

from __future__ import annotations

from typing import Any

from qwenmem.core.errors import WorkspaceError
from qwenmem.core.history.check import RowsLocator
from qwenmem.core.history.keys import rows_key
from qwenmem.core.sessions import chats_index, identify
from qwenmem.core.workspace import Workspace


def rows_locator(ws: Workspace) -> RowsLocator:
    """rel path under sessions/, doc -> the file's history.db session id (chats.json, else the scroll index); None
    where only a file-name guess could say. A damaged chats.json leaves the scroll index alone."""
    try:
        index = chats_index(ws)
    except (OSError, ValueError, WorkspaceError):
        index = {}

    def locate(rel: str, doc: dict[str, Any]) -> str | None:
        key = rows_key(identify(ws.sessions_dir / rel, ws, index), doc)
        return key.session_id if key.certain else None
    return locate
