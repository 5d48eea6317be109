"""Snapshots of long-term memory (memory/, digest/, MEMORY.md) before anything rewrites it.

QwenPaw 2.x (ReMe 0.4) rewrites memory/ and digest/ in place with no backup (qwenpaw2-workspace.md §8.13). A
snapshot is a Merkle tree in a content-addressed store (qwenmem/core/objectstore.py), as in git: every file and
every directory listing is an object named by its hash, and a snapshot is one small manifest naming the root
listing. A second snapshot of an unchanged tree therefore writes only its manifest; one changed note adds the note,
its directory's listing and its parents'.

Layout: <workspace>/.qwenmem/snapshots/{objects/…, <ID>.json}. IDs are UTC timestamps (sortable, unique).
Restore first snapshots the current state, so it can itself be undone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

from qwenmem.core import confine
from qwenmem.core.errors import ChangedUnderneathError, NotFoundError, UsageError, WorkspaceError
from qwenmem.core.fsio import (Snapshot, atomic_write_bytes, ensure_unchanged, exclusive_lock, fsync_dir,
                               make_dirs, write_new_bytes)
from qwenmem.core.objectstore import CHUNK, Batch, ObjectStore
from qwenmem.core.workspace import Workspace

FORMAT = 1
# What a snapshot covers, at the top of the workspace. memory.md is the lower-case name 1.x also reads.
SCOPE = ("MEMORY.md", "memory.md", "memory", "digest")
ID_RE = re.compile(r"^\d{8}T\d{12}Z$")
READ_ATTEMPTS = 3


@dataclass(frozen=True)
class Entry:
    """One file of a snapshot (or of the live tree)."""

    rel: str
    sha256: str
    size: int
    mode: int
    mtime_ns: int


class ListingEntry(TypedDict):
    """One name in a stored directory listing (a file's size and mtime_ns are absent for a directory)."""

    name: str
    type: Literal["dir", "file"]
    sha256: str  # the file's content, or the directory's own listing
    mode: int
    size: NotRequired[int]
    mtime_ns: NotRequired[int]


@dataclass
class SnapshotInfo:
    id: str
    created: str
    reason: str
    root: str
    files: int
    dirs: int
    bytes: int
    added_bytes: int
    manifest: str
    skipped: list[str] = field(default_factory=list)


SnapshotCreateStatus = Literal["created", "dry-run"]
SnapshotRestoreStatus = Literal["restored", "unchanged", "dry-run"]


@dataclass
class CreateResult:
    status: SnapshotCreateStatus
    snapshot: SnapshotInfo
    same_as: str | None  # the newest earlier snapshot with the identical tree, if any
    pruned: list[str] = field(default_factory=list)
    objects_removed: int = 0
    bytes_freed: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass
class RestoreResult:
    status: SnapshotRestoreStatus
    restored_from: str
    undo_snapshot: str | None  # restore this to undo
    created: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # only with exact=True
    extra: list[str] = field(default_factory=list)  # present now, not in the snapshot, left in place
    unchanged: int = 0
    pruned: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def snapshots_dir(ws: Workspace) -> Path:
    return ws.data_dir / "snapshots"


def _store(ws: Workspace) -> ObjectStore:
    return ObjectStore(snapshots_dir(ws) / "objects")


def _listing_bytes(entries: list[ListingEntry]) -> bytes:
    """A directory listing as stored: canonical JSON, zlib-compressed (a year of day folders is ~700 entries, and
    each snapshot after a change stores that listing again). ensure_ascii: a file name that is not UTF-8
    (surrogate-escaped by os) survives as a \\udcXX escape."""
    text = json.dumps({"entries": entries}, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return zlib.compress(text.encode("ascii"), 9)


def _read_listing(store: ObjectStore, digest: str, verified: bool = True) -> list[ListingEntry]:
    """A stored listing; one that is not of this shape raises KeyError or TypeError where it is read."""
    raw = store.read_verified(digest) if verified else store.path_of(digest).read_bytes()
    entries: list[ListingEntry] = json.loads(zlib.decompress(raw))["entries"]
    return entries


# --- walking the live tree -------------------------------------------------------------------------------------


def _link_notice(path: Path, rel: str) -> str:
    """A link is never followed into a snapshot; one leading out of the workspace is named as `dream` names it (and
    recorded: the run ends with exit UNSAFE_LINK)."""
    from qwenmem.core.confine import check
    from qwenmem.core.errors import UnsafeLinkError

    try:
        check(path)
    except UnsafeLinkError as exc:
        return f"{rel}: not backed up ({exc})"
    return f"{rel}: symlink; not backed up"


class _Walk:
    """Hash (and, unless dry, store) every regular file in scope; build the directory listings bottom-up."""

    def __init__(self, ws: Workspace, store: ObjectStore, sink: Batch | None = None):
        """With a sink, files and listings are stored; without, only hashed (dry run)."""
        self.ws, self.store, self.sink = ws, store, sink
        self.files: dict[str, Entry] = {}
        self.dirs: set[str] = set()
        self.skipped: list[str] = []
        self.added = 0
        self.pending_trees: dict[str, bytes] = {}

    def run(self) -> str:
        names: list[str] = []
        with contextlib.suppress(OSError):
            names = sorted(e.name for e in os.scandir(self.ws.path) if e.name in SCOPE)
        return self._tree(self.ws.path, "", names)

    def _tree(self, directory: Path, prefix: str, names: list[str]) -> str:
        entries: list[ListingEntry] = []
        for name in names:
            path = directory / name
            rel = prefix + name
            try:
                st = path.lstat()
            except OSError as exc:
                self.skipped.append(f"{rel}: cannot be read ({exc.strerror or exc})")
                continue
            if stat.S_ISDIR(st.st_mode):
                try:
                    children = sorted(os.listdir(path))
                except OSError as exc:
                    self.skipped.append(f"{rel}/: cannot be listed ({exc.strerror or exc})")
                    continue
                self.dirs.add(rel)
                digest = self._tree(path, rel + "/", children)
                entries.append({"name": name, "type": "dir", "sha256": digest, "mode": st.st_mode & 0o7777})
            elif stat.S_ISREG(st.st_mode):
                entry = self._file(path, rel)
                if entry is not None:
                    self.files[rel] = entry
                    entries.append({"name": name, "type": "file", "sha256": entry.sha256, "size": entry.size,
                                    "mode": entry.mode, "mtime_ns": entry.mtime_ns})
            elif stat.S_ISLNK(st.st_mode):
                self.skipped.append(_link_notice(path, rel))
            else:
                self.skipped.append(f"{rel}: not a regular file; not backed up")
        data = _listing_bytes(entries)
        digest = hashlib.sha256(data).hexdigest()
        if self.sink is None:  # dry
            self.added += 0 if self.store.has(digest) else len(data)
        else:
            self.added += self.sink.put_bytes(data)[1]
        return digest

    def _file(self, path: Path, rel: str) -> Entry | None:
        for _ in range(READ_ATTEMPTS):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
            except OSError as exc:
                self.skipped.append(f"{rel}: cannot be read ({exc.strerror or exc}); not backed up")
                return None
            with open(fd, "rb") as fh:
                before = os.fstat(fh.fileno())
                if not stat.S_ISREG(before.st_mode):
                    self.skipped.append(f"{rel}: not a regular file; not backed up")
                    return None
                h = hashlib.sha256()
                while block := fh.read(CHUNK):
                    h.update(block)
                digest, size = h.hexdigest(), fh.tell()
                if self.sink is None:  # dry
                    self.added += 0 if self.store.has(digest) else size
                elif not self.sink.has(digest):
                    fh.seek(0)
                    copied, size, added = self.sink.put_file(fh)
                    self.added += added
                    if copied != digest:  # rewritten between our two reads: take it again
                        continue
                after = os.fstat(fh.fileno())
            if (before.st_size, before.st_mtime_ns) == (after.st_size, after.st_mtime_ns) == (size, after.st_mtime_ns):
                return Entry(rel, digest, size, before.st_mode & 0o7777, before.st_mtime_ns)
        self.skipped.append(f"{rel}: kept changing while it was read (is QwenPaw writing it?); not backed up")
        return None


# --- manifests --------------------------------------------------------------------------------------------------


def _info(doc: dict[str, Any], path: Path) -> SnapshotInfo:  # a manifest's JSON object
    return SnapshotInfo(doc["id"], doc["created"], doc.get("reason", ""), doc["root"], int(doc["files"]),
                        int(doc["dirs"]), int(doc["bytes"]), int(doc.get("added_bytes", 0)), str(path),
                        list(doc.get("skipped") or []))


def list_snapshots(ws: Workspace) -> tuple[list[SnapshotInfo], list[str]]:
    """(snapshots oldest first, damaged manifests as 'name: why')."""
    found: list[SnapshotInfo] = []
    damaged: list[str] = []
    directory = snapshots_dir(ws)
    if not directory.is_dir():
        return found, damaged
    for p in sorted(directory.glob("*.json")):
        if not ID_RE.match(p.stem):
            continue
        try:
            doc = json.loads(confine.read_bytes(p))
            if doc.get("qwenmem_snapshot") != FORMAT or doc.get("id") != p.stem:
                raise ValueError("not a qwenmem snapshot manifest of this version")
            found.append(_info(doc, p))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            damaged.append(f"{p.name}: {exc}")
    found.sort(key=lambda s: s.id)
    return found, damaged


def resolve_snapshot(ws: Workspace, ident: str | None) -> SnapshotInfo:
    """An exact ID, a unique prefix of one, or latest/None for the newest."""
    found, _ = list_snapshots(ws)
    if not found:
        raise NotFoundError(f"no snapshots in {snapshots_dir(ws)} (take one with `qwenmem snapshot`)")
    if ident in (None, "", "latest", "newest"):
        return found[-1]
    matches = [s for s in found if s.id == ident] or [s for s in found if s.id.startswith(ident)]
    if not matches:
        raise NotFoundError(f"no snapshot {ident!r}; `qwenmem snapshot list` shows them")
    if len(matches) > 1:
        from qwenmem.core.errors import AmbiguousError

        raise AmbiguousError(f"{ident!r} matches {len(matches)} snapshots: {', '.join(s.id for s in matches[:5])}")
    return matches[0]


def flatten(ws: Workspace, root: str) -> tuple[dict[str, Entry], set[str]]:
    """Every file and directory a snapshot holds, by workspace-relative path."""
    store = _store(ws)
    files: dict[str, Entry] = {}
    dirs: set[str] = set()

    def walk(digest: str, prefix: str) -> None:
        try:
            listing = _read_listing(store, digest)
        except (ValueError, KeyError, TypeError, zlib.error) as exc:
            raise WorkspaceError(f"snapshot listing {store.path_of(digest)} is damaged ({exc}); nothing was restored") from None
        for e in listing:
            rel = prefix + e["name"]
            if e["name"] in ("", ".", "..") or "/" in e["name"]:
                raise WorkspaceError(f"snapshot listing {store.path_of(digest)} names {e['name']!r}; not restored")
            if e["type"] == "dir":
                dirs.add(rel)
                walk(e["sha256"], rel + "/")
            else:
                files[rel] = Entry(rel, e["sha256"], int(e["size"]), int(e["mode"]), int(e["mtime_ns"]))

    walk(root, "")
    return files, dirs


# --- create / prune ---------------------------------------------------------------------------------------------


def _new_id(now: datetime) -> str:
    utc = now.astimezone(timezone.utc)
    return utc.strftime("%Y%m%dT%H%M%S") + f"{utc.microsecond:06d}Z"


def create(ws: Workspace, reason: str = "manual", dry_run: bool = False, keep: int | None = None,
           now: datetime | None = None) -> CreateResult:
    """Snapshot memory/, digest/ and MEMORY.md (taking the workspace lock unless dry_run)."""
    if keep is not None and keep < 1:
        raise UsageError("--keep must be at least 1")
    if dry_run:
        return create_locked(ws, reason, True, keep, now)
    with exclusive_lock(ws.lock_path):
        return create_locked(ws, reason, False, keep, now)


def create_locked(ws: Workspace, reason: str = "manual", dry_run: bool = False, keep: int | None = None,
                  now: datetime | None = None) -> CreateResult:
    """create() for a caller that already holds the workspace lock (qwenmem's dream, restore)."""
    now = now or datetime.now(timezone.utc)
    store = _store(ws)
    earlier, _ = list_snapshots(ws)
    with contextlib.ExitStack() as stack:  # every object is durable before the manifest that names it is written
        walk = _Walk(ws, store, None if dry_run else stack.enter_context(store.batch()))
        root = walk.run()
    ident = _new_id(now)
    while any(s.id == ident for s in earlier):  # two snapshots in one microsecond
        now = now.replace(microsecond=(now.microsecond + 1) % 1_000_000)
        ident = _new_id(now)
    doc = {"qwenmem_snapshot": FORMAT, "id": ident, "created": now.astimezone().isoformat(timespec="seconds"),
           "reason": reason, "root": root, "files": len(walk.files), "dirs": len(walk.dirs),
           "bytes": sum(e.size for e in walk.files.values()), "added_bytes": walk.added, "skipped": walk.skipped,
           "scope": list(SCOPE)}
    manifest = snapshots_dir(ws) / f"{ident}.json"
    if not dry_run:
        try:
            manifest = write_new_bytes(json.dumps(doc, indent=1, ensure_ascii=True).encode("ascii") + b"\n",
                                       [manifest])
        except OSError as exc:
            raise WorkspaceError(f"cannot write the snapshot manifest {manifest} ({exc.strerror or exc})") from None
    same = next((s.id for s in reversed(earlier) if s.root == root), None)
    result = CreateResult("dry-run" if dry_run else "created", _info(doc, manifest), same,
                          warnings=[f"{s}" for s in walk.skipped])
    if keep:
        result.pruned, result.objects_removed, result.bytes_freed, notes = prune(ws, keep, dry_run, pending=dry_run)
        result.warnings.extend(notes)
    return result


def prune(ws: Workspace, keep: int, dry_run: bool = False, protect: tuple[str, ...] = (),
          pending: bool = False) -> tuple[list[str], int, int, list[str]]:
    """Delete all but the newest `keep` snapshots, then the objects no remaining snapshot uses (caller holds the
    lock). With `pending`, one not-yet-written snapshot counts among the newest. Returns (pruned ids, objects
    removed, bytes freed, notes). Objects are only collected when every manifest could be read: an unreadable one
    might still need them."""
    found, damaged = list_snapshots(ws)
    room = keep - (1 if pending else 0)
    keepers = {s.id for s in found[-room:]} if room > 0 else set()
    keepers |= set(protect)
    doomed = [s for s in found if s.id not in keepers]
    if dry_run:
        return [s.id for s in doomed], 0, 0, []
    for s in doomed:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(s.manifest)
    if doomed:
        fsync_dir(snapshots_dir(ws))
    if damaged:
        return [s.id for s in doomed], 0, 0, [f"unreadable snapshot manifest(s) ({'; '.join(damaged)}): "
                                              "no stored object was deleted"]
    store = _store(ws)
    live: set[str] = set()
    for s in found:
        if s.id in keepers:
            live |= _reachable(store, s.root)
    removed = freed = 0
    for digest, size in store.all_digests().items():
        if digest not in live:
            store.delete(digest)
            removed, freed = removed + 1, freed + size
    store.remove_temp_files()
    return [s.id for s in doomed], removed, freed, []


def _reachable(store: ObjectStore, root: str) -> set[str]:
    seen = {root}
    stack = [root]
    while stack:
        digest = stack.pop()
        try:
            listing = _read_listing(store, digest, verified=False)
        except (OSError, ValueError, KeyError, TypeError, zlib.error):
            continue
        for e in listing:
            seen.add(e["sha256"])
            if e.get("type") == "dir":
                stack.append(e["sha256"])
    return seen


# --- restore ----------------------------------------------------------------------------------------------------


def _matches(rel: str, paths: list[str]) -> bool:
    return not paths or any(rel == p or rel.startswith(p + "/") for p in paths)


def _normalise_paths(paths: list[str] | None) -> list[str]:
    out = []
    for raw in paths or []:
        p = raw.replace("\\", "/").strip("/")
        while p.startswith("./"):
            p = p[2:]
        parts = p.split("/")
        if not p or ".." in parts or parts[0] not in SCOPE:
            raise UsageError(f"--path {raw!r}: name something inside {', '.join(SCOPE)} (workspace-relative)")
        out.append(p)
    return out


def restore(ws: Workspace, ident: str | None, dry_run: bool = False, exact: bool = False,
            paths: list[str] | None = None, keep: int | None = None, now: datetime | None = None) -> RestoreResult:
    """Make memory/, digest/ and MEMORY.md what snapshot `ident` holds (or the parts under `paths`).

    The current state is snapshotted first (the undo point). Files that are not in the snapshot are left in
    place and listed, unless `exact`, which removes them (they are in the undo snapshot)."""
    paths = _normalise_paths(paths)
    if dry_run:
        return _restore_locked(ws, ident, True, exact, paths, keep, now)
    with exclusive_lock(ws.lock_path):
        return _restore_locked(ws, ident, False, exact, paths, keep, now)


def _restore_locked(ws: Workspace, ident: str | None, dry_run: bool, exact: bool, paths: list[str],
                    keep: int | None, now: datetime | None) -> RestoreResult:
    source = resolve_snapshot(ws, ident)
    wanted_files, wanted_dirs = flatten(ws, source.root)
    result = RestoreResult("unchanged", source.id, None)
    walk = _Walk(ws, _store(ws))
    walk.run()
    result.warnings.extend(walk.skipped)
    plan = _plan(wanted_files, walk.files, walk.dirs, paths, exact, result)
    missing_dirs = sorted(d for d in wanted_dirs if _matches(d, paths) and not (ws.path / d).is_dir())
    if not plan and not missing_dirs:
        return result
    if dry_run:
        result.status = "dry-run"
        return result
    _verify_objects(ws, [w for _, w, _ in plan if w is not None])
    undo = create_locked(ws, reason=f"before restore of {source.id}", now=now)
    result.undo_snapshot = undo.snapshot.id
    current, _ = flatten(ws, undo.snapshot.root)  # what the undo point holds is what we may overwrite
    store = _store(ws)
    try:
        for d in missing_dirs:
            make_dirs(ws.path / d)  # each one fsynced in its parent before the files restored into it
        for rel, want, _ in plan:
            expected = _expected(ws, rel, current.get(rel))
            target = ws.path / rel
            if want is None:
                ensure_unchanged(expected)
                os.unlink(target)
                fsync_dir(target.parent)
                continue
            atomic_write_bytes(target, store.read_verified(want.sha256), expected, mode=want.mode & 0o777)
            with contextlib.suppress(OSError):
                os.utime(target, ns=(want.mtime_ns, want.mtime_ns))
        if exact:
            _remove_empty_dirs(ws, walk.dirs - wanted_dirs, paths, result)
    except ChangedUnderneathError as exc:
        raise ChangedUnderneathError(f"{exc}; the restore stopped part-way: undo it with "
                                     f"`qwenmem snapshot restore {undo.snapshot.id}`") from None
    result.status = "restored"
    if keep:
        result.pruned = prune(ws, keep, protect=(undo.snapshot.id, source.id))[0]
    return result


def _plan(wanted: dict[str, Entry], current: dict[str, Entry], current_dirs: set[str], paths: list[str], exact: bool,
          result: RestoreResult) -> list[tuple[str, Entry | None, Entry | None]]:
    plan: list[tuple[str, Entry | None, Entry | None]] = []
    for rel, want in sorted(wanted.items()):
        if not _matches(rel, paths):
            continue
        have = current.get(rel)
        if rel in current_dirs:
            raise WorkspaceError(f"cannot restore {rel}: a directory of that name is in the way; nothing was written")
        if have is not None and have.sha256 == want.sha256:
            result.unchanged += 1
            continue
        (result.replaced if have is not None else result.created).append(rel)
        plan.append((rel, want, have))
    for rel in sorted(set(current) - set(wanted)):
        if not _matches(rel, paths):
            continue
        if exact:
            result.removed.append(rel)
            plan.append((rel, None, current[rel]))
        else:
            result.extra.append(rel)
    # a file of the snapshot whose parent directory is a file now cannot be written either
    for rel, to_write, _ in plan:
        parent = Path(rel).parent
        while to_write is not None and parent.as_posix() != ".":
            if parent.as_posix() in current:
                raise WorkspaceError(f"cannot restore {rel}: {parent.as_posix()} is a file now; nothing was written")
            parent = parent.parent
    return plan


def _expected(ws: Workspace, rel: str, entry: Entry | None) -> Snapshot:
    """What the undo snapshot saw at `rel`: the file may be replaced only while it still is that (or absent)."""
    if entry is None:
        return Snapshot(ws.path / rel, False, 0, 0, "")
    return Snapshot(ws.path / rel, True, entry.size, entry.mtime_ns, entry.sha256)


def _verify_objects(ws: Workspace, wanted: list[Entry]) -> None:
    store = _store(ws)
    for e in wanted:
        path = store.path_of(e.sha256)
        h = hashlib.sha256()
        try:
            with open(path, "rb") as fh:
                while block := fh.read(CHUNK):
                    h.update(block)
        except OSError as exc:
            raise WorkspaceError(f"snapshot object {path} for {e.rel} is missing or unreadable "
                                 f"({exc.strerror or exc}); nothing was restored") from None
        if h.hexdigest() != e.sha256:
            raise WorkspaceError(f"snapshot object {path} for {e.rel} is damaged; nothing was restored")


def _remove_empty_dirs(ws: Workspace, extra_dirs: set[str], paths: list[str], result: RestoreResult) -> None:
    for rel in sorted(extra_dirs, key=lambda d: -d.count("/")):
        if _matches(rel, paths):
            with contextlib.suppress(OSError):  # not empty (a file appeared, or one we could not read): keep it
                os.rmdir(ws.path / rel)
                result.removed.append(rel + "/")
