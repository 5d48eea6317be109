"""`sessions repair`: check, plan or carry out repairs over a set of session files, losing nothing."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Final, Literal

from qwenmem.core.confine import read_bytes
from qwenmem.core.errors import ChangedUnderneathError, UsageError, WorkspaceError
from qwenmem.core.fsio import Snapshot, atomic_write_bytes, exclusive_lock, read_with_snapshot
from qwenmem.core import busy
from qwenmem.core.repair.classes import EMPTY, NOT_A_SESSION
from qwenmem.core.repair.diagnose import Diagnosis, diagnose
from qwenmem.core.repair.evidence import Evidence, best_usable, find_evidence
from qwenmem.core.repair.quarantine import QuarantineRun, sha256
from qwenmem.core.repair.gen1.strict import strict_load_bytes_problems
from qwenmem.core.safety import replace_preserving
from qwenmem.core.salvage_documents import SummaryState
from qwenmem.core.session_model.model import Generation
from qwenmem.core.sessions import MAX_SESSION_BYTES, SessionDoc, SessionRef
from qwenmem.core.workspace import Workspace

RepairMode = Literal["check", "dry-run", "repair"]
CHECK: Final = "check"
DRY_RUN: Final = "dry-run"
REPAIR: Final = "repair"
BeforeWrite = Callable[[Path], None]
Checkpoint = Callable[[str], None]
# what `run_repair(checkpoint=...)` is called with, in order, for each file it writes ("locked" once per run):
# alternatives kept, original copied to the quarantine, new bytes in place, manifest entry written
STEPS = ("locked", "alternatives", "quarantined", "replaced", "recorded")
ATTENTION = ("needs_repair", "would_repair", "unrecoverable", "needs_flag", "changed", "busy", "error")


RepairFileStatus = Literal["ok", "warning", "needs_repair", "would_repair", "repaired", "unrecoverable", "needs_flag",
                           "changed", "busy", "error"]


@dataclass
class FileReport:
    path: str
    key: str
    classes: list[str]
    status: RepairFileStatus
    messages_found: int = 0
    messages_intact: int = 0
    messages_lost: int = 0
    messages_removed: int = 0
    messages_added: int = 0
    summary: SummaryState = "intact"
    replacements: dict[str, int] = field(default_factory=dict)
    actions: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    restored_from: str | None = None
    quarantined: str | None = None  # workspace-relative copy of the original bytes
    original_sha256: str = ""
    result_sha256: str | None = None
    generation: Generation | None = None  # None: not a session of either
    violations: list[str] = field(default_factory=list)  # 2.x: what QwenPaw's AgentState validation rejects


@dataclass
class RepairRun:
    workspace: str
    mode: RepairMode
    files: list[FileReport]
    run_id: str | None = None
    quarantine: str | None = None

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(c for f in self.files for c in f.classes))

    @property
    def statuses(self) -> dict[str, int]:
        return dict(Counter(f.status for f in self.files))

    @property
    def needs_attention(self) -> bool:
        """Something is (still) wrong: the exit status is 1."""
        return any(f.status in ATTENTION for f in self.files)

    @property
    def changed_underneath(self) -> bool:
        """A file changed, or was being written, while we worked: nothing was written to it (exit 4)."""
        return any(f.status in ("changed", "busy") for f in self.files)


def _report(ref: SessionRef, d: Diagnosis, sha: str) -> FileReport:
    return FileReport(ref.rel, ref.key, list(d.classes), "ok", d.messages_found, d.messages_intact, d.messages_lost,
                      d.messages_removed, d.messages_added, d.summary, dict(d.replacements), list(d.actions),
                      list(d.pending), list(d.notes), original_sha256=sha,
                      generation=d.generation if (d.session is not None or d.check_bytes) else None,
                      violations=list(d.violations))


def session_from_dialog(data: bytes) -> tuple[bytes, int]:
    """A session built from a dialog/YYYY-MM-DD.jsonl offload (one Msg per line, no marks). Returns (bytes, bad lines).

    The offload holds the messages QwenPaw compacted away, from every session of the agent that day; it is only used
    when the user names it with --from."""
    from qwenmem.core.repair.documents import assistant_name
    from qwenmem.core.repair.encoding import decode_counting
    from qwenmem.core.session_model import gen1, gen1_doc
    from qwenmem.core.sessions import message_problems

    messages, bad = [], 0
    for line in decode_counting(data).text.splitlines():
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if message_problems(msg):
            bad += 1
            continue
        messages.append(msg)
    doc = gen1_doc.new_document([[m, []] for m in messages], assistant_name(messages))
    return gen1.encode(doc), bad


def _plan_from_evidence(ws: Workspace, source: Path, fix_tool_pairs: bool) -> tuple[bytes, Diagnosis]:
    data, _ = read_with_snapshot(source, MAX_SESSION_BYTES)
    if source.suffix == ".jsonl":
        data, _bad = session_from_dialog(data)
    d = diagnose(data, fix_tool_pairs)
    if d.session is None or d.unrecoverable:
        raise UsageError(f"{ws.relative(source)}: holds no recoverable session ({'; '.join(d.notes) or d.classes})")
    return (d.new_bytes if d.new_bytes is not None else data), d


def run_repair(ws: Workspace, refs: list[SessionRef], mode: RepairMode = CHECK, fix_tool_pairs: bool = False,
               from_backup: bool = False, from_file: Path | None = None,
               before_write: BeforeWrite | None = None, checkpoint: Checkpoint | None = None,
               convert_gen1: bool = False) -> RepairRun:
    """Classify (check), plan (dry-run) or repair each file. Only `repair` writes, under the workspace lock.

    `checkpoint(step)` is called at each of STEPS as it is passed (crash-injection tests kill the process there).
    `convert_gen1`: a 1.x file in a 2.x workspace is converted to the 2.x shape as QwenPaw 2.x loads it (otherwise
    it is only reported)."""
    if from_file is not None and len(refs) != 1:
        raise UsageError("--from restores one session at a time; name exactly one session")
    gen2_ws = _is_gen2_workspace(ws)
    if mode != REPAIR:
        return RepairRun(str(ws.path), mode, [_one(ws, ref, mode, fix_tool_pairs, from_backup, from_file, None, None,
                                                   gen2_ws=gen2_ws, convert=convert_gen1) for ref in refs])
    run = QuarantineRun(ws, "repair")
    step = checkpoint or _no_checkpoint
    with exclusive_lock(ws.lock_path):
        step("locked")
        reports = [_one(ws, ref, mode, fix_tool_pairs, from_backup, from_file, run, before_write, gen2_ws=gen2_ws,
                        checkpoint=step, convert=convert_gen1) for ref in refs]
    wrote = bool(run.entries)
    return RepairRun(str(ws.path), mode, reports, run.run_id if wrote else None,
                     ws.relative(run.directory) if wrote else None)


def _no_checkpoint(step: str) -> None:
    return None


def _is_gen2_workspace(ws: Workspace) -> bool:
    from qwenmem.core.sessions import count_file_generations
    from qwenmem.core.settings.gen2 import workspace_generation

    return workspace_generation(ws, *count_file_generations(ws)).generation in ("2.x", "mixed")


def _link_history(ws: Workspace, ref: SessionRef, d: Diagnosis, data: bytes) -> None:
    """persisted_* of scroll only for messages whose history.db rows exist (spec §10)."""
    from qwenmem.core.repair.gen2.history_link import PERSISTED_WITHOUT_ROWS, check_bytes_against_history
    from qwenmem.core.settings.gen2 import load_gen2_settings

    try:
        db = load_gen2_settings(ws).history_db_file()
    except (OSError, ValueError, WorkspaceError):
        return
    new, actions = check_bytes_against_history(d.new_bytes if d.new_bytes is not None else data, db, ref)
    d.notes.extend(a[len("note: "):] for a in actions if a.startswith("note:"))
    if new is None:
        return
    if d.classes == ["ok"]:
        d.classes.clear()
    d.add(PERSISTED_WITHOUT_ROWS)
    d.actions.extend(a for a in actions if not a.startswith("note:"))
    d.new_bytes = new


def _explain_conversion(d: Diagnosis, session: SessionDoc) -> None:
    """A 1.x file in a 2.x workspace: say what QwenPaw 2.x will do with it (spec qwenpaw2-workspace.md §2.6, §8.5).
    The file itself is left to the 1.x rules: it is not converted here."""
    from qwenmem.core.repair.gen2.diagnose import GEN1_IN_GEN2

    items = session.content
    compressed = sum(1 for i in items if isinstance(i, list) and len(i) == 2 and isinstance(i[1], list)
                     and "compressed" in i[1])
    if d.classes == ["ok"]:
        d.classes.clear()
    d.add(GEN1_IN_GEN2)
    d.notes.append("1.x file in a 2.x workspace: QwenPaw 2.x converts it when the session is next opened and its "
                   "first save rewrites it in the 2.x shape" + (
                       f"; {compressed} message(s) marked compressed come back into the live context next to the "
                       "old summary" if compressed else "") + " (left as it is)")


def _strict_document(data: bytes) -> dict[str, Any] | None:
    """The document as QwenPaw's strict read gives it (lone surrogates replaced), or None when it does not parse."""
    from qwenmem.core.repair.encoding import replace_surrogates

    try:
        doc = json.loads(data.decode("utf-8", "surrogatepass"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    fixed: dict[str, Any] = replace_surrogates(doc).value
    return fixed


def _convert(d: Diagnosis, data: bytes) -> bool:
    """Plan the conversion of a 1.x file in a 2.x workspace (spec qwenpaw2-workspace.md §2.6, §8.5). False when
    QwenPaw 2.x's own load of it would fail: it is then only reported."""
    from qwenmem.core.repair.gen2.from_gen1 import NotConvertible, convert_gen1
    from qwenmem.core.repair.gen2.diagnose import GEN1_IN_GEN2, validation_problems
    from qwenmem.core.session_model import gen2

    if d.unrecoverable or d.session is None or d.session.layout != "agent":
        return False
    whole = _strict_document(data)
    try:
        conv = convert_gen1(whole if whole is not None else d.session.doc)
    except NotConvertible as exc:
        d.notes.append(f"not converted: {exc}")
        return False
    if whole is not None:  # QwenPaw 2.x loads the file itself: the 1.x loader's message rules do not apply
        d.classes, d.actions, d.pending, d.removed = [], [], [], []
        d.messages_removed = d.messages_added = 0
        if d.replacements.get("lone_surrogates"):
            d.actions.append(f"replace {d.replacements['lone_surrogates']} lone surrogate(s) with U+FFFD (QwenPaw "
                             "2.x cannot save them)")
    elif d.classes == ["ok"]:
        d.classes.clear()
    d.add(GEN1_IN_GEN2)
    d.actions.extend(conv.actions)
    d.new_bytes = gen2.encode(conv.doc)
    d.check_bytes = validation_problems
    d.write_mode = 0o600  # sessions hold conversations and file contents: private, as QwenPaw writes new ones
    d.messages_intact = conv.messages
    return True


def _one(ws: Workspace, ref: SessionRef, mode: RepairMode, fix_tool_pairs: bool, from_backup: bool, from_file: Path | None,
         run: QuarantineRun | None, before_write: BeforeWrite | None, read: tuple[bytes, Snapshot] | None = None,
         settled: bool = False, gen2_ws: bool = False, checkpoint: Checkpoint = _no_checkpoint,
         convert: bool = False) -> FileReport:
    if ref.outside_workspace:  # never read, quarantine or replace a link that leads out of the workspace
        return FileReport(ref.rel, ref.key, [], "error",
                          notes=["symlink leads outside the workspace; not read and left as it is"])
    try:
        data, snap = read or read_with_snapshot(ref.path, MAX_SESSION_BYTES)
    except WorkspaceError as exc:
        return FileReport(ref.rel, ref.key, [], "error", notes=[str(exc)])
    d = diagnose(data, fix_tool_pairs)
    if gen2_ws and d.generation == "1.x" and d.session is not None and not (convert and _convert(d, data)):
        _explain_conversion(d, d.session)
    if d.generation == "2.x" and d.check_bytes is not None and not d.unrecoverable:
        _link_history(ws, ref, d, data)
    rep = _report(ref, d, snap.sha256)
    new_bytes = d.new_bytes
    if d.unrecoverable or d.messages_lost or EMPTY in d.classes or NOT_A_SESSION in d.classes or from_file:
        rep.evidence = find_evidence(ws, ref.path)
    source = from_file
    if source is None and from_backup and d.unrecoverable:
        best = best_usable(rep.evidence)
        source = ws.path / best.path if best else None
    if source is not None:
        new_bytes, sd = _plan_from_evidence(ws, source, fix_tool_pairs)
        rep.restored_from = ws.relative(source)
        rep.messages_intact, rep.messages_added = sd.messages_intact, sd.messages_added
        rep.actions.append(f"replace with the session rebuilt from {rep.restored_from} ({sd.messages_intact} messages)")
    elif d.unrecoverable:
        usable = [e for e in rep.evidence if e.usable]
        rep.actions.append("leave the file untouched: nothing in it can be recovered")
        if usable:
            rep.pending.append(f"evidence to restore from: {usable[0].path} ({usable[0].messages} messages); "
                               "run with --from-backup (or --from FILE)")
        else:
            rep.notes.append("no backup, copy or earlier quarantine of this file was found")
    if new_bytes is None:
        # "warning": reported (e.g. ids reused with different content) but there is nothing safe to change
        rep.status = ("unrecoverable" if d.unrecoverable else "needs_flag" if d.pending
                      else "warning" if d.needs_repair else "ok")
        return rep
    rep.result_sha256 = sha256(new_bytes)
    if mode != REPAIR:
        rep.status = "needs_repair" if mode == CHECK else "would_repair"
        return rep
    if not settled:  # a damaged file may be a save in progress: make sure nobody is writing it, then judge it again
        now = busy.settle(ref.path, data, snap, MAX_SESSION_BYTES)
        if now.busy:
            rep.status = "busy"
            rep.notes.append(now.busy + "; nothing written (run the repair again when it is idle)")
            return rep
        return _one(ws, ref, mode, fix_tool_pairs, from_backup, from_file, run, before_write,
                    (now.data, now.snapshot), settled=True, gen2_ws=gen2_ws, checkpoint=checkpoint, convert=convert)
    assert run is not None  # only a repair writes, and it always has its quarantine run
    try:
        return _write(ws, ref, data, snap, new_bytes, d, rep, run, before_write, checkpoint)
    except (OSError, WorkspaceError) as exc:  # disk full, read-only directory...: this file stays as it was
        rep.status = "error"
        rep.notes.append(f"could not write: {getattr(exc, 'strerror', None) or exc}; the file was left as it was")
        return rep


def _load_problems(d: Diagnosis, data: bytes) -> list[str]:
    """Why QwenPaw would not load these bytes: AgentState validation for 2.x, the 1.x loader's rules otherwise."""
    return d.check_bytes(data) if d.check_bytes else strict_load_bytes_problems(data)


def _write(ws: Workspace, ref: SessionRef, data: bytes, snap: Snapshot, new_bytes: bytes, d: Diagnosis, rep: FileReport, run: QuarantineRun,
           before_write: BeforeWrite | None, checkpoint: Checkpoint = _no_checkpoint) -> FileReport:
    problems = _load_problems(d, new_bytes) if rep.restored_from or d.check_bytes or (d.session and d.session.layout == "agent") else []
    if problems:
        rep.status = "error"
        rep.notes.append("the repaired session would not load; nothing written: " + "; ".join(problems[:3]))
        return rep
    entry: dict[str, Any] = {"path": ref.rel, "original": None, "original_sha256": snap.sha256, "original_size": len(data),
             "classes": rep.classes, "actions": rep.actions, "notes": rep.notes, "replacements": rep.replacements,
             "messages": {"found": rep.messages_found, "kept": rep.messages_intact, "lost": rep.messages_lost,
                          "removed": rep.messages_removed, "added": rep.messages_added},
             "removed": [{"index": r.index, "reason": r.reason, "item": r.item} for r in d.removed],
             "alternatives": [], "restored_from": rep.restored_from, "result_sha256": rep.result_sha256}
    for i, alt in enumerate(d.alternatives, 1):
        where = run.save_extra(ref.rel, f"{i}.{alt.kind}.txt", alt.text)
        entry["alternatives"].append({"kind": alt.kind, "start": alt.start, "end": alt.end,
                                      "messages": alt.messages, "file": where})
    if d.alternatives:
        checkpoint("alternatives")
    if before_write is not None:
        before_write(ref.path)
    writers = busy.writers_of(ref.path)  # the last look, just before the rename
    if writers:
        rep.status = "busy"
        rep.notes.append(f"{ref.path.name} is being written ({', '.join(map(str, writers[:3]))} has it open for "
                         "writing); nothing written")
        return rep
    watch = busy.SaveWatch(ref.path, snap)
    try:
        kept = replace_preserving(ws, ref.path, new_bytes, snap, area="quarantine", stamp=run.run_id,
                                  kept_hook=lambda: checkpoint("quarantined"), mode=d.write_mode)
    except ChangedUnderneathError as exc:
        watch.close()
        rep.status = "changed"
        rep.notes.append(str(exc))
        entry["status"] = "changed underneath: nothing written"
        run.record(entry)
        return rep
    checkpoint("replaced")
    try:
        late = watch.late_save()
    finally:
        watch.close()
    if late is not None and sha256(read_bytes(ref.path)) == rep.result_sha256:
        # a process opened the file just before the rename and saved into the old one: its save wins
        atomic_write_bytes(ref.path, late)
        rep.status = "busy"
        rep.notes.append(f"{ref.path.name} was saved by another process while the repair was written; that save "
                         "was put back and the repair not done (run it again when the file is idle)")
        entry["status"] = "a concurrent save went into the replaced file; it was put back"
        entry["original"] = kept.relative_to(run.directory).as_posix() if kept else None
        run.record(entry)
        return rep
    entry["original"] = kept.relative_to(run.directory).as_posix() if kept else None
    rep.quarantined = ws.relative(kept) if kept else None
    if kept is None or sha256(read_bytes(kept)) != snap.sha256:
        rep.notes.append("warning: the quarantined copy does not match the bytes that were read")
    written = read_bytes(ref.path)  # the one regular-file reader: never blocks on a FIFO swapped in
    if sha256(written) != rep.result_sha256 or ((d.check_bytes or (d.session and d.session.layout == "agent"))
                                                and _load_problems(d, written)):
        atomic_write_bytes(ref.path, data)  # never leave a bad result behind: put the original back
        rep.status = "error"
        rep.notes.append("re-reading the written file failed validation; the original was put back")
        entry["status"] = "validation failed after write; original put back"
    else:
        rep.status = "repaired"
        entry["status"] = "repaired"
    run.record(entry)
    checkpoint("recorded")
    return rep
