"""Trace a real qwenmem command with strace and check every publish against the protocol (issue 24, items 4-6).

The protocol, per name a command leaves inside the workspace:
- a file's bytes are fsynced after its last write (a rename or link source before the rename or link; every other
  file the command wrote before the command ends);
- a new name (rename, link, a file created in place, a mkdir) is followed by an fsync of the directory holding it;
- ordering: when a rename commits something (a session, a manifest, CURRENT), everything the command wrote before it
  that survives must already be durable: file bytes fsynced and the directory entries fsynced in their parents.

Only names that still exist when the command ends count (temporaries that were renamed or unlinked do not), and
only inside the traced workspace. SQLite's own files (history.db and its -wal/-shm/-journal) are left to SQLite,
which fsyncs them itself with pwrite/fdatasync, and the lock file is only a pid hint.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

STRACE = shutil.which("strace") or ("/usr/bin/strace" if os.path.exists("/usr/bin/strace") else None)
TRACED = ("openat,write,fsync,fdatasync,rename,renameat,renameat2,link,linkat,unlink,unlinkat,mkdir,mkdirat,"
          "sendfile,copy_file_range,ftruncate")
_LINE = re.compile(r"^(?:\[pid\s+(?P<pid>\d+)\]\s+|(?P<pid2>\d+)\s+)?(?P<call>\w+)\((?P<args>.*)\)\s+=\s+(?P<ret>.*)$")
_FD = re.compile(r"^(?:-?\d+|AT_FDCWD)<(?P<path>.*)>$")
_STR = re.compile(r'^"(?P<s>(?:[^"\\]|\\.)*)"')
_SQLITE = re.compile(r"(\.db|\.db-wal|\.db-shm|\.db-journal|\.sqlite\d?)$")


def _split_args(args: str) -> list[str]:
    """strace's argument list split at top-level commas (quotes, <>, [], {} nest)."""
    out, depth, cur, quote, esc = [], 0, [], False, False
    for ch in args:
        if quote:
            cur.append(ch)
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                quote = False
            continue
        if ch == '"':
            quote = True
        elif ch in "<[{(":
            depth += 1
        elif ch in ">]})":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if cur:
        out.append("".join(cur).strip())
    return out


def _fd_path(arg: str) -> str | None:
    m = _FD.match(arg)
    return m.group("path") if m else None


def _str_arg(arg: str) -> str | None:
    m = _STR.match(arg)
    if not m:
        return None
    return m.group("s").encode("latin-1", "backslashreplace").decode("unicode_escape", "replace")


def _at(dir_arg: str, name_arg: str) -> str | None:
    name = _str_arg(name_arg)
    if name is None:
        return None
    if name.startswith("/"):
        return os.path.normpath(name)
    base = _fd_path(dir_arg)
    return os.path.normpath(os.path.join(base, name)) if base else None


@dataclass
class Event:
    index: int
    call: str
    path: str  # the name made, written or synced
    source: str = ""  # rename/link source
    parent: str = ""


def parse(trace_text: str) -> list[Event]:
    """The successful calls of an `strace -f -y` log as events with absolute paths (unfinished calls joined)."""
    pending: dict[str, str] = {}
    events: list[Event] = []
    for raw in trace_text.splitlines():
        line = raw.strip()
        pid_m = re.match(r"^(?:\[pid\s+(\d+)\]\s+|(\d+)\s+)", line)
        pid = (pid_m.group(1) or pid_m.group(2)) if pid_m else "main"
        if line.endswith("<unfinished ...>"):
            pending[pid] = line[: -len("<unfinished ...>")]
            continue
        resumed = re.search(r"<\.\.\. \w+ resumed>\s?(.*)$", line)
        if resumed:
            line = pending.pop(pid, "") + resumed.group(1)
        m = _LINE.match(line)
        if not m or m.group("ret").startswith("-1") or m.group("ret").startswith("?"):
            continue
        ev = _event(len(events), m.group("call"), _split_args(m.group("args")), m.group("ret"))
        if ev is not None:
            events.append(ev)
    return events


def _open_event(index: int, a: list[str], ret: str) -> Event | None:
    if len(a) < 3:
        return None
    path = _fd_path(ret.split()[0]) or _at(a[0], a[1])
    if path is None or ("O_CREAT" not in a[2] and "O_TRUNC" not in a[2]):
        return None
    return Event(index, "create" if "O_CREAT" in a[2] else "truncate", path, parent=os.path.dirname(path))


def _fd_event(kind: str, position: int) -> Callable[[int, list[str], str], Event | None]:
    def make(index: int, a: list[str], ret: str) -> Event | None:
        path = _fd_path(a[position]) if len(a) > position else None
        return Event(index, kind, path) if path else None
    return make


def _two_names(kind: str, at: bool) -> Callable[[int, list[str], str], Event | None]:
    def make(index: int, a: list[str], ret: str) -> Event | None:
        if at:
            src, dst = (_at(a[0], a[1]), _at(a[2], a[3])) if len(a) >= 4 else (None, None)
        else:
            src, dst = (_str_arg(a[0]), _str_arg(a[1])) if len(a) >= 2 else (None, None)
        if not src or not dst:
            return None
        src, dst = os.path.abspath(src), os.path.abspath(dst)
        return Event(index, kind, dst, src, os.path.dirname(dst))
    return make


def _one_name(kind: str, at: bool) -> Callable[[int, list[str], str], Event | None]:
    def make(index: int, a: list[str], ret: str) -> Event | None:
        path = (_at(a[0], a[1]) if len(a) >= 2 else None) if at else (_str_arg(a[0]) if a else None)
        if not path:
            return None
        path = os.path.abspath(path)
        return Event(index, kind, path, parent=os.path.dirname(path))
    return make


_MAKERS: dict[str, Callable[[int, list[str], str], Event | None]] = {
    "openat": _open_event,
    "write": _fd_event("write", 0), "ftruncate": _fd_event("write", 0), "sendfile": _fd_event("write", 0),
    "copy_file_range": _fd_event("write", 2),
    "fsync": _fd_event("fsync", 0), "fdatasync": _fd_event("fsync", 0),
    "rename": _two_names("rename", False), "renameat": _two_names("rename", True),
    "renameat2": _two_names("rename", True), "link": _two_names("link", False),
    "linkat": _two_names("link", True),
    "mkdir": _one_name("mkdir", False), "mkdirat": _one_name("mkdir", True),
    "unlink": _one_name("unlink", False), "unlinkat": _one_name("unlink", True),
}


def _event(index: int, call: str, a: list[str], ret: str) -> Event | None:
    make = _MAKERS.get(call)
    return make(index, a, ret) if make else None


@dataclass
class _File:
    dirty_since: int | None = None  # index of the first write since the last fsync


@dataclass
class _Entry:
    kind: str  # mkdir, rename, link, create
    path: str
    parent: str
    index: int
    synced_at: int | None = None
    alive: bool = True


@dataclass
class Report:
    counts: Counter = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)

    def kinds(self) -> Counter:
        return Counter(v.split(":", 1)[0] for v in self.violations)

    def summary(self) -> str:
        c = self.counts
        k = self.kinds()
        return (f"{c['rename']} renames, {c['link']} links, {c['mkdir']} mkdirs, {c['fsync_file']} file fsyncs, "
                f"{c['fsync_dir']} dir fsyncs; gaps: {k['unsynced-source']} unsynced rename/link sources, "
                f"{k['unsynced-file']} written files never fsynced, {k['entry-not-synced']} names never fsynced "
                f"in their directory (of them mkdirs: {k['mkdir-not-synced']}), {k['order']} published before "
                f"what they depend on was durable")


def _ignored(path: str, root: str) -> bool:
    if not (path == root or path.startswith(root + os.sep)):
        return True
    name = os.path.basename(path)
    return bool(_SQLITE.search(name)) or name == "lock" or name.endswith(".lock")


class _Checker:
    """One pass over the events; the verdicts wait for the end, when it is known which names survived."""

    def __init__(self, root: str, before: set[str]):
        self.root, self.before = root, before
        self.rep = Report()
        self.files: dict[str, _File] = {}
        self.entries: dict[str, _Entry] = {}  # the current entry of each name made during the run
        self.history: list[_Entry] = []
        self.dirs_made: set[str] = set()
        self.link_run: set[str] = set()  # links with no fsync between them: one batch, synced together after
        self.at_commit: list[tuple[str, str, str]] = []  # (file|entry, path not yet durable, the path published)

    def is_dir(self, p: str) -> bool:
        return p in self.dirs_made or os.path.isdir(p)

    def feed(self, ev: Event) -> None:
        if _ignored(ev.path, self.root) and ev.call != "fsync":
            return
        getattr(self, f"on_{ev.call}")(ev)

    def _new_entry(self, kind: str, ev: Event) -> None:
        old = self.entries.get(ev.path)
        if old is not None:
            old.alive = False
        e = _Entry(kind, ev.path, ev.parent, ev.index)
        self.entries[ev.path] = e
        self.history.append(e)

    def _drop(self, path: str) -> _File | None:
        old = self.entries.pop(path, None)
        if old is not None:
            old.alive = False
        return self.files.pop(path, None)

    def on_create(self, ev: Event) -> None:
        self.files.setdefault(ev.path, _File())
        if ev.path not in self.before and ev.path not in self.entries:
            self._new_entry("create", ev)

    def on_write(self, ev: Event) -> None:
        f = self.files.setdefault(ev.path, _File())
        if f.dirty_since is None:
            f.dirty_since = ev.index

    on_truncate = on_write

    def on_fsync(self, ev: Event) -> None:
        self.link_run.clear()
        if not self.is_dir(ev.path):
            self.rep.counts["fsync_file"] += 1
            if ev.path in self.files:
                self.files[ev.path].dirty_since = None
            return
        self.rep.counts["fsync_dir"] += 1
        for e in self.history:
            if e.parent == ev.path and e.synced_at is None and e.index < ev.index:
                e.synced_at = ev.index

    def on_rename(self, ev: Event) -> None:
        self._publish(ev)
        self.link_run.clear()
        moved = self.files.pop(ev.source, None) or _File()
        self._drop(ev.source)
        self._drop(ev.path)
        self.files[ev.path] = moved
        self._new_entry("rename", ev)

    def on_link(self, ev: Event) -> None:
        self._publish(ev)
        self.link_run.add(ev.path)
        src = self.files.get(ev.source)
        self._drop(ev.path)
        self.files[ev.path] = _File(src.dirty_since if src else None)
        self._new_entry("link", ev)

    def _publish(self, ev: Event) -> None:
        """A rename or link commits something: its source and everything surviving before it must be durable."""
        self.rep.counts[ev.call] += 1
        src = self.files.get(ev.source)
        if src is not None and src.dirty_since is not None:
            self.rep.violations.append(f"unsynced-source: {ev.call} {self.rel(ev.source)} -> {self.rel(ev.path)} "
                                       "without an fsync after its last write")
        for p, f in self.files.items():
            if f.dirty_since is not None and p != ev.source:
                self.at_commit.append(("file", p, ev.path))
        for e in self.history:
            if e.alive and e.synced_at is None and e.path != ev.source and e.path not in self.link_run:
                self.at_commit.append(("entry", e.path, ev.path))

    def on_mkdir(self, ev: Event) -> None:
        self.rep.counts["mkdir"] += 1
        self.dirs_made.add(ev.path)
        self._new_entry("mkdir", ev)

    def on_unlink(self, ev: Event) -> None:
        self._drop(ev.path)

    def rel(self, p: str) -> str:
        return _rel(p, self.root) or "."

    def finish(self) -> Report:
        v = self.rep.violations
        for p, f in self.files.items():
            if f.dirty_since is not None and os.path.lexists(p) and not self.is_dir(p):
                v.append(f"unsynced-file: {self.rel(p)} written and never fsynced")
        for e in self.history:
            if e.alive and os.path.lexists(e.path) and e.synced_at is None:
                if e.kind == "mkdir":
                    v.append(f"mkdir-not-synced: {self.rel(e.path)} made; its parent never fsynced")
                v.append(f"entry-not-synced: {e.kind} {self.rel(e.path)}; {self.rel(e.parent)} never fsynced "
                         "after it")
        reported: set[tuple[str, str]] = set()
        for what, p, committed in self.at_commit:
            alive = what == "file" or any(e.path == p and e.alive for e in self.history)
            if not os.path.lexists(p) or not alive or (what, p) in reported:
                continue
            reported.add((what, p))
            gap = "its bytes were not fsynced" if what == "file" else "its directory entry was not fsynced"
            v.append(f"order: {self.rel(committed)} published while {self.rel(p)} was not durable ({gap})")
        return self.rep


def check(events: list[Event], root: Path, before: set[str]) -> Report:
    """Apply the protocol to the events of one traced command on the workspace `root` (its names before: `before`)."""
    checker = _Checker(os.path.realpath(root), before)
    for ev in events:
        checker.feed(ev)
    return checker.finish()


def _rel(p: str, root: str) -> str:
    return os.path.relpath(p, root) if p.startswith(root) else p


def names_under(root: Path) -> set[str]:
    real = os.path.realpath(root)
    out = {real}
    for base, dirs, files in os.walk(real):
        out.update(os.path.join(base, n) for n in dirs + files)
    return out


@dataclass
class Traced:
    code: int
    stdout: str
    stderr: str
    report: Report
    events: list[Event]


def trace_cli(workspace: Path, *args: str, env: dict | None = None, timeout: float = 600,
              repo: Path | None = None) -> Traced:
    """Run `qwenmem -w WORKSPACE ARGS` under strace and check its publishes."""
    if STRACE is None:
        raise RuntimeError("strace is not installed")
    repo = repo or Path(__file__).resolve().parents[1]
    log = Path(workspace).parent / f".strace-{os.getpid()}.log"
    before = names_under(workspace)
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(repo) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    cmd = [STRACE, "-f", "-qq", "-y", "-s", "0", "-o", str(log), "-e", f"trace={TRACED}",
           sys.executable, "-m", "qwenmem", "-w", str(workspace), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout,
                          stdin=subprocess.DEVNULL, cwd=str(Path(workspace).parent))
    text = log.read_text(errors="replace")
    log.unlink()
    events = parse(text)
    return Traced(proc.returncode, proc.stdout, proc.stderr, check(events, Path(workspace), before), events)
