"""Which history.db rows belong to a 2.x session file: one rule, shared by `sessions list`, `sessions repair`,
`compact` and `history`/`sessions show --history` (spec qwenpaw2-workspace.md §3.1, §3.7).

QwenPaw keys rows by the chat's session id: the request's `ctx.session_id`, handed to `build_scroll_components`
and the scroll manager (`runtime/builder.py L1090-1110 @2.2.2.post1`). It never sets `agent.state.session_id`, which
keeps AgentScope's default `uuid4().hex` (`agentscope/state/_state.py L212 @as2.0.10`): in a new session, and in
every 1.x file QwenPaw migrates, that field is random and names no rows. So, in QwenPaw's order:

1. the chat that chats.json registers for the file (its `session_id` is canonical for the import, `sync.py L24`);
2. the scroll eviction index's `session_id`, which the scroll manager stamps with the same request id
   (`EvictionIndex(session_id=…)`, `manager.py L148`);
3. otherwise (an unregistered file, which QwenPaw's import leaves alone) the request ids the file name can come
   from (`session_filename` inverted: `--` is what `:` and the other unsafe characters became), the first one that
   has rows. Such a key is a guess: it may be reported, never acted on.

`aliases` are the ids QwenPaw's import moves onto the canonical one (`history.py L967-1072`): the embedded
`state.session_id` (2.0.0 keyed imports by it) and `sync:<file stem>` (2.0.x). Rows under them are this file's
rows too, until QwenPaw moves them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from qwenmem.core.session_model import gen2

RowsKeySource = Literal["chats.json", "scroll.index.session_id", "filename", "unknown"]  # where the key was read
CHATS_JSON: Final = "chats.json"
SCROLL_INDEX: Final = "scroll.index.session_id"
FILENAME: Final = "filename"
SYNC_PREFIX = "sync:"


@dataclass(frozen=True)
class RowsKey:
    session_id: str | None  # the history.db session_id of the file's rows; None when nothing names it
    source: RowsKeySource
    certain: bool  # chats.json or the scroll index: QwenPaw's own key. A file-name guess is never acted on.
    aliases: tuple[str, ...] = ()

    @property
    def all_ids(self) -> tuple[str, ...]:
        return ((self.session_id,) if self.session_id else ()) + self.aliases


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def index_session_id(doc: Any) -> str | None:
    scroll = gen2.scroll_of(doc)
    index = scroll.get("index") if isinstance(scroll, dict) else None
    return _str(index.get("session_id")) if isinstance(index, dict) else None


def embedded_session_id(doc: Any) -> str | None:
    state = gen2.state_of(doc)
    return _str(state.get("session_id")) if isinstance(state, dict) else None


def filename_candidates(stem: str, splits: list[tuple[str, str]]) -> list[str]:
    """Request ids whose `session_filename` gives this stem (`{uid}_{sid}` or `{sid}`), most likely first: the
    channel form `<channel>:<sender>` (`--` back to `:`) before the literal text."""
    out: list[str] = []
    for sanitized in [sid for _, sid in splits] + [stem]:
        for cand in (sanitized.replace("--", ":"), sanitized):
            if cand and cand not in out:
                out.append(cand)
    return out


def ref_candidates(ref: Any) -> list[str]:
    """`filename_candidates` of a `sessions.SessionRef`."""
    name = ref.path.name
    stem = name[:-5] if name.endswith(".json") else name
    splits = list(ref.alternatives) or ([(ref.user_id or "", ref.session_id)] if ref.session_id else [])
    return filename_candidates(stem, splits)


def rows_key(ref: Any, doc: Any, store_ids: Collection[str] | None = None) -> RowsKey:
    """The rule above for one file. `ref`: its `sessions.SessionRef`; `doc`: the parsed 2.x document (or None);
    `store_ids`: the session ids history.db holds (None when unknown: a file-name guess then stays unresolved)."""
    name = ref.path.name
    stem = name[:-5] if name.endswith(".json") else name
    embedded, indexed = embedded_session_id(doc), index_session_id(doc)
    source: RowsKeySource
    if ref.source == CHATS_JSON and ref.session_id:
        primary, source = ref.session_id, CHATS_JSON
    elif indexed:
        primary, source = indexed, SCROLL_INDEX
    else:
        found = [c for c in ref_candidates(ref) if store_ids is not None and c in store_ids]
        primary, source = (found[0], FILENAME) if found else (None, "unknown")
    aliases = tuple(dict.fromkeys(a for a in (indexed, embedded, SYNC_PREFIX + stem) if a and a != primary))
    return RowsKey(primary, source, source in (CHATS_JSON, SCROLL_INDEX), aliases)


def rows_key_in(ref: Any, doc: Any, db: Path | None) -> RowsKey:
    """`rows_key`, reading history.db's session ids only when QwenPaw's own key is not in the file."""
    key = rows_key(ref, doc)
    if key.certain or db is None:
        return key
    from qwenmem.core.history.store import HistoryError, open_history

    try:
        with open_history(db) as reader:
            return rows_key(ref, doc, set(reader.counts_by_session()))
    except HistoryError:
        return key
