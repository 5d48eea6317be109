"""Session files: discovery, identity, parsing and faithful serialisation (spec qwenpaw-workspace.md §2).

Messages are kept as the raw dicts QwenPaw wrote (key order, unknown keys and unknown block types survive a
load/save round trip). The 1.x document and its message helpers live one layer down, in
session_model/gen1_doc.py; they are re-exported here because most callers reach them as `sessions.X`.
Damaged files are salvaged by recovery.py, which sits below this module and never imports it.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final, Iterable, Iterator, Literal

from qwenmem.core.errors import AmbiguousError, NotFoundError, UnsafePathError, WorkspaceError
from qwenmem.core.fsio import Snapshot, read_with_snapshot
from qwenmem.core.jsonsafe import SESSION_DECODER, loads_session
from qwenmem.core.session_names import candidates_text, loose_matches
from qwenmem.core.session_model import GEN1, GEN2, Session, classify_document, read_document
from qwenmem.core.session_model import gen2
from qwenmem.core.session_model.detect import sniff_generation
from qwenmem.core.session_model.model import Generation
from qwenmem.core.session_model.gen1_doc import ROLES as ROLES
from qwenmem.core.session_model.gen1_doc import Entry as Entry
from qwenmem.core.session_model.gen1_doc import NotASessionError, session_from_obj
from qwenmem.core.session_model.gen1_doc import SessionDoc as SessionDoc
from qwenmem.core.session_model.gen1_doc import blocks as blocks
from qwenmem.core.session_model.gen1_doc import message_problems as message_problems
from qwenmem.core.session_model.gen1_doc import message_text as message_text
from qwenmem.core.session_model.gen1_doc import tool_result_ids as tool_result_ids
from qwenmem.core.session_model.gen1_doc import tool_use_ids as tool_use_ids
from qwenmem.core.workspace import Workspace, read_json_file, resolve_inside

SANITIZE_RE = re.compile(r'[\\/:*?"<>|]')
MAX_SESSION_BYTES = 256 * 1024 * 1024  # larger files are reported, not loaded
LEGACY_WEIXIN_DIR = ".weixin-legacy"

Health = Literal["ok", "warnings", "corrupt"]  # how a session file reads: as it is, with problems, or salvaged/not
OK: Final = "ok"
WARNINGS: Final = "warnings"
CORRUPT: Final = "corrupt"


def sanitize_filename(name: str) -> str:
    """QwenPaw's rule: each of \\ / : * ? " < > | becomes '--'."""
    return SANITIZE_RE.sub("--", name)


# --------------------------------------------------------------------------------------------- identity


@dataclass(frozen=True)
class ChatSpec:
    session_id: str
    user_id: str
    channel: str
    name: str = ""
    chat_id: str = ""


IdentitySource = Literal["chats.json", "filename", "filename (ambiguous)"]  # where a session's owner was read


@dataclass
class SessionRef:
    """Who a session file belongs to. `ambiguous` is set when the name could split more than one way."""

    path: Path
    rel: str
    channel: str | None
    user_id: str | None
    session_id: str | None
    source: IdentitySource
    alternatives: list[tuple[str, str]] = field(default_factory=list)
    stale_flat_copy: bool = False
    outside_workspace: bool = False  # a symlink that leads out of the workspace: listed, never read

    @property
    def ambiguous(self) -> bool:
        return len(self.alternatives) > 1

    @property
    def is_backup(self) -> bool:
        return is_session_backup(self.path.name)

    @property
    def key(self) -> str:
        """A short id accepted by `sessions show`: the path relative to sessions/ without .json."""
        return self.rel.removeprefix("sessions/").removesuffix(".json")


def load_chats(ws: Workspace) -> list[ChatSpec]:
    path = ws.path / "chats.json"
    if not path.is_file():
        return []
    doc = read_json_file(path)
    chats = doc.get("chats") if isinstance(doc, dict) else None
    out = []
    for spec in chats if isinstance(chats, list) else []:
        if isinstance(spec, dict) and isinstance(spec.get("session_id"), str):
            out.append(ChatSpec(spec["session_id"], str(spec.get("user_id") or ""), str(spec.get("channel") or "console"),
                                str(spec.get("name") or ""), str(spec.get("id") or "")))
    return out


def chat_filename(user_id: str, session_id: str) -> str:
    safe_uid, safe_sid = sanitize_filename(user_id), sanitize_filename(session_id)
    return f"{safe_uid}_{safe_sid}.json" if safe_uid else f"{safe_sid}.json"


def chat_filename_gen2(user_id: str, session_id: str) -> str:
    """QwenPaw 2.x session_filename (spec qwenpaw2-workspace.md §2.1): the user part is also dropped when it equals
    the sanitised session id."""
    safe_uid, safe_sid = sanitize_filename(user_id), sanitize_filename(session_id)
    return f"{safe_sid}.json" if not safe_uid or safe_uid == safe_sid else f"{safe_uid}_{safe_sid}.json"


def _split_candidates(stem: str) -> list[tuple[str, str]]:
    """Every (user, session) split of a file stem at an underscore."""
    return [(stem[:i], stem[i + 1:]) for i, ch in enumerate(stem) if ch == "_" and 0 < i < len(stem) - 1]


def identify(path: Path, ws: Workspace, chats_by_location: dict[tuple[str | None, str], ChatSpec]) -> SessionRef:
    ref = _identify(path, ws, chats_by_location)
    # Only links can lead out of a directory we are walking; resolving every path would cost a syscall per component.
    if os.path.islink(path) or os.path.islink(path.parent) or os.path.islink(ws.sessions_dir):
        try:
            resolve_inside(ws.path, path)
        except UnsafePathError:
            ref.outside_workspace = True
    return ref


def _identify(path: Path, ws: Workspace, chats_by_location: dict[tuple[str | None, str], ChatSpec]) -> SessionRef:
    rel = Path(os.path.relpath(Path(path).absolute(), ws.path)).as_posix()
    parent = path.parent
    channel = None if os.path.samefile(parent, ws.sessions_dir) else parent.name
    name = path.name
    chat = chats_by_location.get((channel, name)) or (chats_by_location.get((None, name)) if channel is None else None)
    if chat is None and channel is None:
        # a flat legacy file may be described by a chat that now lives in a channel directory
        matches = [c for (ch, fn), c in chats_by_location.items() if fn == name]
        chat = matches[0] if len(matches) == 1 else None
    stale = channel is None and any(os.path.exists(os.path.join(ws.sessions_dir, d, name)) for d in _channel_dirs(ws))
    if chat is not None:
        return SessionRef(path, rel, chat.channel if channel is None else channel, chat.user_id, chat.session_id,
                          "chats.json", stale_flat_copy=stale)
    stem = BACKUP_RE.sub("", name)
    stem = stem[:-5] if stem.endswith(".json") else stem
    splits = _split_candidates(stem)
    if not splits:
        return SessionRef(path, rel, channel if channel is not None else channel_from_session_id(stem), None, stem,
                          "filename", stale_flat_copy=stale)
    user, sid = splits[0]
    if channel is None:
        channel = next((c for _, s in splits if (c := channel_from_session_id(s))), None)
    return SessionRef(path, rel, channel, user, sid, "filename (ambiguous)" if len(splits) > 1 else "filename",
                      alternatives=splits, stale_flat_copy=stale)


_CHANNEL_PREFIX = re.compile(r"^([A-Za-z][A-Za-z0-9]*)--.")


def channel_from_session_id(sanitized_sid: str) -> str | None:
    """The channel a flat legacy file belongs to, when its name carries it: channels name their sessions
    `<channel>:<sender>` (spec §2.1), which the file name holds as `<channel>--<sender>`. Console sessions carry none."""
    m = _CHANNEL_PREFIX.match(sanitized_sid)
    return m.group(1) if m else None


def _channel_dirs(ws: Workspace) -> list[str]:
    try:
        return [e.name for e in os.scandir(ws.sessions_dir) if e.is_dir() and not e.name.startswith(".")]
    except OSError:
        return []


BACKUP_RE = re.compile(r"\.json\.(backup_[0-9_]+|bak)$")


def is_session_backup(name: str) -> bool:
    """A QwenPaw/CoPaw backup sibling of a session (`*.json.backup_YYYYMMDD_HHMMSS`, `*.json.bak`): evidence that
    `repair --from-backup` reads, never a live session of its own (not listed as one, never indexed)."""
    return bool(BACKUP_RE.search(name))


def backed_up_name(name: str) -> str:
    """The session file name a backup sibling is a copy of: `main_main.json.backup_20260316_203609` → `main_main.json`."""
    return BACKUP_RE.sub(".json", name)


def is_session_file_name(name: str, include_backups: bool = True) -> bool:
    """`*.json` sessions, plus CoPaw's `*.json.backup_YYYYMMDD_HHMMSS` copies (listed so damage there shows too)."""
    return name.endswith(".json") or (include_backups and is_session_backup(name))


def iter_session_files(ws: Workspace, include_legacy_weixin: bool = False, include_backups: bool = False) -> Iterator[Path]:
    """Flat legacy files first, then each channel sub-directory, sorted for stable output.

    CoPaw's `*.json.backup_*` copies are evidence, not live sessions: only listings ask for them."""
    base = ws.sessions_dir
    if not base.is_dir():
        return
    entries = sorted(os.scandir(base), key=lambda e: e.name)
    for entry in entries:
        # dot-files are QwenPaw's own bookkeeping (2.x `.synced.json`, `.<name>.<hex>.tmp`), as its sync skips them
        if is_session_file_name(entry.name, include_backups) and not entry.name.startswith("."):
            yield Path(entry.path)  # a directory or device named *.json is reported too
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and not is_session_file_name(entry.name) and (
                not entry.name.startswith(".") or (
                include_legacy_weixin and entry.name == LEGACY_WEIXIN_DIR)):
            for sub in sorted(os.scandir(entry.path), key=lambda e: e.name):
                if is_session_file_name(sub.name, include_backups) and not sub.name.startswith("."):
                    yield Path(sub.path)


def chats_index(ws: Workspace) -> dict[tuple[str | None, str], ChatSpec]:
    index: dict[tuple[str | None, str], ChatSpec] = {}
    for chat in load_chats(ws):
        for fname in dict.fromkeys((chat_filename(chat.user_id, chat.session_id),
                                    chat_filename_gen2(chat.user_id, chat.session_id))):
            index.setdefault((sanitize_filename(chat.channel), fname), chat)
    return index


def iter_session_refs(ws: Workspace, include_backups: bool = False) -> Iterator[SessionRef]:
    index = chats_index(ws)
    for path in iter_session_files(ws, include_backups=include_backups):
        yield identify(path, ws, index)


def find_session(ws: Workspace, query: str) -> SessionRef:
    """Accept a path, a file name, `<channel>/<stem>`, a stem, a QwenPaw session id, or a user id (only when
    nothing else matches: a user with several sessions gets the ambiguity error that lists them); then, loosely,
    the shortened key a table shows, a unique prefix or a unique substring of a key."""
    if "\x00" in query or not query.strip():
        raise UnsafePathError(f"{query!r} is not a valid session name")
    if ".." in Path(query).parts:
        raise UnsafePathError(f"{query}: session names may not contain '..' (they may not leave the workspace)")
    looks_like_path = "/" in query or query.endswith(".json") or os.sep in query or query.startswith(".")
    if looks_like_path:
        candidates = [Path(query)] if Path(query).is_absolute() else [ws.path / query, ws.sessions_dir / query,
                                                                       ws.sessions_dir / f"{query}.json"]
        if not Path(query).is_absolute():
            candidates.append(Path.cwd() / query)
        for cand in candidates:
            if os.path.lexists(cand):
                try:
                    real = resolve_inside(ws.path, cand)
                except UnsafePathError:
                    raise UnsafePathError(f"{query}: refers to a file outside the workspace {ws.path}") from None
                return identify(real, ws, chats_index(ws))
        if ".." in Path(query).parts or Path(query).is_absolute():
            # refuse traversal even when the target does not exist, so probing reveals nothing
            raise UnsafePathError(f"{query}: session names may not leave the workspace {ws.path}")
    safe = sanitize_filename(query)

    def matching(refs: Iterable[SessionRef]) -> list[SessionRef]:
        return [r for r in refs if query in (r.key, r.path.name, r.path.stem) or r.session_id == query
                or r.path.stem == safe or r.path.stem.endswith("_" + safe)]

    # live sessions first; a CoPaw backup copy is found only when nothing live matches
    matches = matching(iter_session_refs(ws)) or matching(r for r in iter_session_refs(ws, include_backups=True)
                                                           if r.is_backup)
    if not matches:
        matches = [r for r in iter_session_refs(ws) if r.user_id == query and not r.ambiguous]
    # prefer the channel copy over a stale flat duplicate of the same name
    if len(matches) > 1:
        fresh = [m for m in matches if not m.stale_flat_copy]
        matches = fresh or matches
    if not matches:
        matches = _loosely(ws, query)
    if not matches:
        raise NotFoundError(f"no session matches {query!r} (try `qwenmem sessions list`)")
    if len(matches) > 1:
        raise AmbiguousError(candidates_text(query, [m.key for m in matches]))
    return matches[0]


def _loosely(ws: Workspace, query: str) -> list[SessionRef]:
    """What a table showed or a person typed: the shortened key (`ou_9756…df9_6fb98df9`), a unique prefix or a
    unique substring of a key (core/session_names.py); live sessions first, then CoPaw backup copies."""
    for refs in (list(iter_session_refs(ws)),
                 [r for r in iter_session_refs(ws, include_backups=True) if r.is_backup]):
        names = loose_matches([r.key for r in refs], query)
        if names:
            by_key = {r.key: r for r in refs}
            found = [by_key[n] for n in names]
            return [m for m in found if not m.stale_flat_copy] or found
    return []


# --------------------------------------------------------------------------------------------- loading


@dataclass
class LoadedSession:
    """The result of reading one session file, whatever its state. Never raises for bad content."""

    ref: SessionRef
    snapshot: Snapshot | None
    size: int
    mtime: datetime | None
    session: SessionDoc | None
    health: Health
    problems: list[str]
    salvaged: bool = False  # `session` was rebuilt from a damaged file, not parsed as-is
    lost_hint: str = ""
    raw: bytes | None = None
    gen2_doc: dict[str, Any] | None = None  # a 2.x document (its `session` is None: repair/compaction read 1.x only)
    model: Session | None = None  # the generation-neutral view, built by as_model()

    @property
    def generation(self) -> Generation | None:
        return GEN2 if self.gen2_doc is not None else (GEN1 if self.session is not None else None)

    def as_model(self) -> Session | None:
        """The generation-neutral view of either generation (built on first use: listing does not need it)."""
        if self.model is None:
            doc = self.gen2_doc if self.gen2_doc is not None else (self.session.doc if self.session else None)
            self.model = read_document(doc) if doc is not None else None
        return self.model

    @property
    def message_count(self) -> int:
        if self.gen2_doc is not None:
            return gen2.quick_stats(self.gen2_doc)["messages"]
        return len(self.session.content) if self.session else 0


def decode_text(data: bytes) -> tuple[str, list[str]]:
    """Decode like QwenPaw (utf-8, surrogatepass) but never fail: bad bytes become U+FFFD, and we say so."""
    problems = []
    if data.startswith(b"\xef\xbb\xbf"):
        problems.append("UTF-8 BOM (QwenPaw loads this as an empty session)")
        data = data[3:]
    try:
        return data.decode("utf-8", "surrogatepass"), problems
    except UnicodeDecodeError as exc:
        problems.append(f"invalid UTF-8 at byte {exc.start} (QwenPaw cannot load this file)")
        return data.decode("utf-8", "replace"), problems


TOO_DEEP = "JSON nested too deeply to parse (QwenPaw cannot load this file either)"


def parse_session_bytes(data: bytes) -> tuple[SessionDoc | None, list[str], bool]:
    """(session, problems, corrupt) of a 1.x file. A 2.x file gives (None, [why], True) here: callers that read
    both generations use parse_any_session (its `model`)."""
    parsed = parse_any_session(data)
    if parsed.gen2_doc is not None:
        return None, parsed.problems + ["a QwenPaw 2.x session (agent.state), not agent.memory"], True
    return parsed.session, parsed.problems, parsed.corrupt


@dataclass
class ParsedSession:
    session: SessionDoc | None  # 1.x documents (what repair and compaction work on)
    model: Session | None  # generation-neutral view (built on demand: LoadedSession.as_model)
    problems: list[str]
    corrupt: bool
    gen2_doc: dict[str, Any] | None = None  # a 2.x document (agent.state)


def _parse_gen2(text: str, problems: list[str]) -> ParsedSession | None:
    """A 2.x document, read like QwenPaw's safe_json_loads (strict, else the first JSON value after leading
    whitespace, spec §2.6). None when the text is not a 2.x session."""
    from qwenmem.core import recovery

    try:
        obj, strict = loads_session(text), True
    except (json.JSONDecodeError, RecursionError):
        try:
            obj, end = SESSION_DECODER.raw_decode(text, len(text) - len(text.lstrip(" \t\r\n")))
        except (json.JSONDecodeError, RecursionError):
            return None
        strict = False
    if classify_document(obj) != GEN2:
        return None
    notes = list(problems) + gen2.quick_problems(obj)
    if not strict:
        notes.append(f"extra data after the JSON document at character {end} (QwenPaw loads the document before it; "
                     "its history import marks the file errored and never imports it)")
    if recovery.has_lone_surrogates(text):
        notes.append("lone surrogate characters (QwenPaw 2.x cannot save this session)")
    return ParsedSession(None, None, notes, not strict, gen2_doc=obj)


def parse_any_session(data: bytes) -> ParsedSession:
    """Either generation. Strict parse first; the recovery module salvages what it can of a 1.x file otherwise."""
    text, problems = decode_text(data)
    if data[:1] == b"{" and sniff_generation(data[:256]) == GEN2:
        parsed = _parse_gen2(text, problems)
        if parsed is not None:
            return parsed
    session, problems1, corrupt = _parse_gen1(text, data, list(problems))
    if session is None and corrupt:
        parsed = _parse_gen2(text, problems)
        if parsed is not None:
            return parsed
    return ParsedSession(session, None, problems1, corrupt)


def _parse_gen1(text: str, data: bytes, problems: list[str]) -> tuple[SessionDoc | None, list[str], bool]:
    from qwenmem.core import recovery

    if b"\x00" in data[:8192] and not text.strip("\x00 \t\r\n"):
        return None, problems + ["empty or NUL-filled file"], True
    if not text.strip():
        return None, problems + ["empty file"], True
    try:
        obj = loads_session(text)
    except RecursionError:
        return None, problems + [TOO_DEEP], True
    except json.JSONDecodeError as exc:
        try:
            salvage = recovery.salvage_text(text)
        except RecursionError:
            return None, problems + [TOO_DEEP], True
        problems.append(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
        problems.extend(salvage.notes)
        return salvage.session, problems, True
    try:
        session = session_from_obj(obj)
    except NotASessionError as exc:
        # QwenPaw loads any such value as an empty session and saves that over it: find the messages it holds
        salvage = recovery.salvage_text(text)
        if salvage.session is None:
            return None, problems + [str(exc)] + salvage.notes, True
        return salvage.session, problems + [
            f"{exc}; QwenPaw loads it as an empty session (`qwenmem sessions repair` rebuilds one around its "
            f"{len(salvage.session.content)} message(s))"], True
    problems.extend(recovery.content_warnings(session, text))
    return session, problems, bool(problems and any("cannot load" in p or "empty session" in p for p in problems))


def load_session(ref: SessionRef, keep_raw: bool = False) -> LoadedSession:
    path = ref.path
    if ref.outside_workspace:
        return LoadedSession(ref, None, 0, None, None, CORRUPT, ["symlink leads outside the workspace; not read"])
    try:
        st = path.stat()
    except OSError as exc:
        return LoadedSession(ref, None, 0, None, None, CORRUPT, [f"cannot stat: {exc.strerror or exc}"])
    mtime = datetime.fromtimestamp(st.st_mtime, tz=timezone.utc)
    if stat.S_ISDIR(st.st_mode):
        return LoadedSession(ref, None, 0, mtime, None, CORRUPT, ["is a directory, not a file"])
    if not stat.S_ISREG(st.st_mode):
        return LoadedSession(ref, None, 0, mtime, None, CORRUPT, ["not a regular file (device, FIFO or socket); not read"])
    if st.st_size > MAX_SESSION_BYTES:
        return LoadedSession(ref, None, st.st_size, mtime, None, CORRUPT,
                             [f"{st.st_size} bytes is larger than the {MAX_SESSION_BYTES}-byte limit; not loaded"])
    try:
        data, snap = read_with_snapshot(path)
    except WorkspaceError as exc:
        return LoadedSession(ref, None, st.st_size, mtime, None, CORRUPT, [str(exc).split(": ", 1)[-1]])
    parsed = parse_any_session(data)
    session, problems, corrupt = parsed.session, parsed.problems, parsed.corrupt
    health: Health = CORRUPT if corrupt else (WARNINGS if problems else OK)
    salvaged = corrupt and (session is not None or parsed.gen2_doc is not None)
    return LoadedSession(ref, snap, len(data), mtime, session, health, problems, salvaged=salvaged,
                         raw=data if keep_raw else None, gen2_doc=parsed.gen2_doc)


def count_file_generations(ws: Workspace) -> tuple[int, int]:
    """(1.x files, 2.x files) under sessions/, each from its first bytes (a full parse only when they are unusual).
    Dot-files and CoPaw backups are not sessions; neither is anything detect.generation_of_file cannot tell safely
    (a FIFO named like a session must not hang this, a link leaving the workspace, a file too large to sniff)."""
    from qwenmem.core.session_model.detect import generation_of_file

    n1 = n2 = 0
    for path in iter_session_files(ws):
        kind = generation_of_file(path)
        n1 += kind == GEN1
        n2 += kind == GEN2
    return n1, n2
