"""`qwenmem history check`: what is wrong with a QwenPaw 2.x history.db, read-only (spec §3, §8.6, §8.7, §8.9).

QwenPaw maintains the full-text table by hand (no triggers), purges by a string comparison of mixed timestamp
formats, and imports its own placeholders as history; each of those leaves traces this check finds:

* integrity: `PRAGMA integrity_check` of the base store;
* fts: documents of `conversation_history_fts` against the rows that should be indexed (every row but the recall
  tools' own); with `deep`, FTS5's own content check, run on a private copy because it is a write statement;
* bad_json: rows whose `tool_input`, `blocks` or `metadata` column does not parse;
* dangling: eviction-index blocks and persisted-message pointers of session files whose rows are gone (purge);
* placeholders: scroll `memory` placeholders imported as `context_msg` rows (keyword search hits them);
* size and retention: the store and its WAL, and the rows QwenPaw's next purge will delete.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal

from qwenmem.core.history.state import HistoryState, history_state
from qwenmem.core.history.store import SQLITE_ERRORS, TABLE, HistoryError, HistoryReader, confine_store, open_history

FTS = f"{TABLE}_fts"
RECALL_TOOLS = ("recall_history_python", "recall_history")  # stored, but kept out of FTS (spec §3.2)
JSON_COLUMNS = ("tool_input", "blocks", "metadata")
SIZE_WARNING = 1 << 30  # QwenPaw warns once history.db + -wal reach 1 GiB (spec §3.5)
EXAMPLES = 5
Severity = Literal["problem", "notice"]  # problem: QwenPaw loses or hides something; notice: nothing is wrong
PROBLEM: Final = "problem"
NOTICE: Final = "notice"
FindingCode = Literal["integrity", "fts_missing", "fts_stale", "fts_content", "fts_absent", "bad_json",
                      "dangling_eviction", "dangling_persisted", "placeholder_rows", "size", "retention",
                      "quarantined", "unreadable"]
FtsVerdict = Literal["ok", "absent", "disagrees", "not checked"]  # the full-text table against the rows


@dataclass
class Finding:
    code: FindingCode
    severity: Severity
    message: str
    count: int = 0
    examples: list[str] = field(default_factory=list)


@dataclass
class HistoryCheck:
    path: str
    state: HistoryState
    integrity: str = "not checked"  # "ok", or what integrity_check reported
    fts: FtsVerdict = "not checked"
    deep: bool = False
    findings: list[Finding] = field(default_factory=list)

    @property
    def needs_attention(self) -> bool:
        return any(f.severity == PROBLEM for f in self.findings)


# rel path of a session file under sessions/, its document -> its history.db session id, or None where only a guess
# could say (a dangling finding must not rest on a guess). Built above this layer (session_rows.rows_locator), since
# the rule needs the loader's chats.json index, which history reading never imports.
RowsLocator = Callable[[str, dict[str, Any]], "str | None"]


def check_history(path: Path, sessions_dir: Path | None = None, retention_days: int = 30, deep: bool = False,
                  now: datetime | None = None, locate: RowsLocator | None = None) -> HistoryCheck:
    """Check one history.db. Never raises for a bad database: an unreadable one is a finding; a history.db that is
    a link leaving the workspace is refused (UnsafeLinkError) before SQLite opens it. With `sessions_dir` and
    `locate`, the session files' scroll bookkeeping is checked against the rows too."""
    confine_store(path)
    state = history_state(path, check=False)
    result = HistoryCheck(str(path), state, deep=deep)
    for q in state.quarantined:
        result.findings.append(Finding("quarantined", PROBLEM, f"{Path(q).name}: a store QwenPaw set aside as "
                                       "corrupt; the turns only it holds are unreachable (`qwenmem history "
                                       "salvage` recovers them)", 1, [q]))
    if state.status == "missing":
        return result
    try:
        with open_history(path) as reader:
            _integrity(reader, result)
            _fts(reader, result)
            if deep and result.fts != "absent":
                _fts_content(path, result)
            _bad_json(reader, result)
            _placeholders(reader, result)
            _retention(reader, result, retention_days, now or datetime.now(UTC))
            if sessions_dir is not None and locate is not None:
                _dangling(reader, sessions_dir, result, locate)
    except HistoryError as exc:
        result.findings.append(Finding("unreadable", PROBLEM, f"{path}: {exc.kind}: {exc.detail}"))
    except SQLITE_ERRORS as exc:  # a damaged page met while reading rows (the header or schema read fine)
        result.findings.append(Finding("unreadable", PROBLEM, f"{path}: corrupt: {exc} (`qwenmem history salvage` "
                                       "reads every row still on its pages)"))
    size = state.size + (state.wal_size or 0)
    if size >= SIZE_WARNING:
        result.findings.append(Finding("size", NOTICE, f"{size / (1 << 30):.1f} GiB with its WAL: QwenPaw never "
                                       "vacuums it", size))
    return result


def _integrity(reader: HistoryReader, result: HistoryCheck) -> None:
    lines = [str(r[0]) for r in reader._query("PRAGMA integrity_check(20)")]
    result.integrity = "ok" if lines == ["ok"] else "; ".join(lines)
    if lines == ["ok"]:
        return
    if reader.quick_check() == "ok":  # QwenPaw runs only quick_check at start: it misses index/row disagreement
        consequence = ("QwenPaw's quick_check at start passes, so it keeps using the store, but lookups through the "
                       "damaged indexes can miss rows (`qwenmem history salvage --from` a copy reads every row)")
    else:
        consequence = ("QwenPaw will rename the store aside and start an empty one at its next start (`qwenmem "
                       "history salvage` reads every row still on its pages)")
    result.findings.append(Finding("integrity", PROBLEM, f"{result.path}: integrity_check failed: {consequence}",
                                   len(lines), lines[:EXAMPLES]))


def _ids(reader: HistoryReader, sql: str, args: tuple[Any, ...] = ()) -> Iterator[int]:
    for (value,) in reader._query(sql, args):
        yield int(value)


def _fts(reader: HistoryReader, result: HistoryCheck) -> None:
    if not reader._query("SELECT 1 FROM sqlite_master WHERE name = ?", (f"{FTS}_docsize",)):
        result.fts = "absent"
        result.findings.append(Finding("fts_absent", NOTICE, "no full-text table: QwenPaw's recall falls back to "
                                       "LIKE (SQLite without FTS5)"))
        return
    marks = ", ".join("?" for _ in RECALL_TOOLS)
    expected = set(_ids(reader, f"SELECT seq FROM {TABLE} WHERE name IS NULL OR name NOT IN ({marks})",
                        RECALL_TOOLS))
    indexed = set(_ids(reader, f"SELECT id FROM {FTS}_docsize"))
    missing, stale = sorted(expected - indexed), sorted(indexed - expected)
    result.fts = "disagrees" if missing or stale else "ok"
    if missing:
        result.findings.append(Finding("fts_missing", PROBLEM, f"{len(missing)} row(s) missing from the full-text "
                                       "table: QwenPaw's recall_history search cannot find them (`qwenmem history "
                                       "rebuild-fts`)", len(missing), [f"seq {s}" for s in missing[:EXAMPLES]]))
    if stale:
        result.findings.append(Finding("fts_stale", PROBLEM, f"{len(stale)} full-text document(s) for rows that no "
                                       "longer exist, or that should not be indexed (`qwenmem history rebuild-fts`)",
                                       len(stale), [f"seq {s}" for s in stale[:EXAMPLES]]))


def _fts_content(path: Path, result: HistoryCheck) -> None:
    """FTS5's 'integrity-check' with rank 1 compares the index with the content table; it is an INSERT, so it runs
    on a private copy taken with the online backup API (consistent while QwenPaw writes)."""
    tmp = tempfile.mkdtemp(prefix="qwenmem-history-check-")
    try:
        copy = Path(tmp) / "history.db"
        src = open_history(path)  # the read-only opening that leaves no file beside history.db
        dst = sqlite3.connect(str(copy))
        try:
            src.conn.backup(dst)
            src.ensure_unchanged()
            dst.execute(f"INSERT INTO {FTS}({FTS}, rank) VALUES('integrity-check', 1)")
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            if result.fts == "ok":
                result.fts = "disagrees"
            result.findings.append(Finding("fts_content", PROBLEM, f"the full-text index does not match the rows' "
                                           f"content ({exc}); `qwenmem history rebuild-fts` rebuilds it"))
        finally:
            src.close()
            dst.close()
    except (sqlite3.Error, UnicodeDecodeError, HistoryError) as exc:
        result.findings.append(Finding("unreadable", PROBLEM, f"cannot copy the store for the deep check: {exc}"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _bad_json(reader: HistoryReader, result: HistoryCheck) -> None:
    bad: list[str] = []
    count = 0
    cols = ", ".join(JSON_COLUMNS)
    for seq, *values in reader.conn.execute(f"SELECT seq, {cols} FROM {TABLE}"):
        for name, value in zip(JSON_COLUMNS, values):
            if isinstance(value, str) and value and not _parses(value):
                count += 1
                if len(bad) < EXAMPLES:
                    bad.append(f"seq {seq} {name}")
    reader.ensure_unchanged()  # a scan of an immutable opening is only an answer if the file held still
    if count:
        result.findings.append(Finding("bad_json", PROBLEM, f"{count} JSON column value(s) do not parse: QwenPaw "
                                       "shows those rows without their blocks or metadata", count, bad))


def _parses(value: str) -> bool:
    if value[:1] not in "[{\"" and not value[:1].isdigit() and value not in ("true", "false", "null"):
        return True  # a plain string the writer passed through unchanged (spec §3.2)
    try:
        json.loads(value)
    except (ValueError, RecursionError):
        return False
    return True


def _placeholders(reader: HistoryReader, result: HistoryCheck) -> None:
    seqs = list(_ids(reader, f"SELECT seq FROM {TABLE} WHERE kind = 'context_msg' AND metadata LIKE "
                             "'%\"qwenpaw_tag\": \"scroll_memory\"%' ORDER BY seq"))
    if seqs:
        result.findings.append(Finding("placeholder_rows", NOTICE, f"{len(seqs)} scroll placeholder(s) imported as "
                                       "history rows (QwenPaw's import does not skip them): recall "
                                       "searches hit the eviction summary as if it were a turn", len(seqs),
                                       [f"seq {s}" for s in seqs[:EXAMPLES]]))


def retention_cutoff(now: datetime, days: int) -> str:
    """QwenPaw's cutoff string: aware UTC ISO with +00:00, compared as a string (spec §3.5)."""
    return (now.astimezone(UTC) - timedelta(days=days)).isoformat()


def _retention(reader: HistoryReader, result: HistoryCheck, days: int, now: datetime) -> None:
    if days <= 0:
        return
    cutoff = retention_cutoff(now, days)
    (n,) = reader._query(f"SELECT count(*) FROM {TABLE} WHERE created_at IS NOT NULL AND created_at < ?",
                         (cutoff,))[0]
    if n:
        result.findings.append(Finding("retention", NOTICE, f"{n} row(s) are older than history_retention_days="
                                       f"{days}: QwenPaw deletes them at its next agent close, from every session "
                                       "(`qwenmem snapshot`-style backups do not cover history.db; copy it first)",
                                       int(n)))


def _session_docs(sessions_dir: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    from qwenmem.core.confine import read_bytes
    from qwenmem.core.errors import UnsafeLinkError
    from qwenmem.core.session_model.codec import loads_document

    if not sessions_dir.is_dir():
        return
    for p in sorted(sessions_dir.rglob("*.json")):
        rel = p.relative_to(sessions_dir)
        if any(part.startswith(".") for part in rel.parts) or p.is_symlink() or not p.is_file():
            continue  # QwenPaw's import skips dot-paths too (spec §3.7); links are never followed
        try:
            doc = loads_document(read_bytes(p))
        except UnsafeLinkError:
            continue  # named once by the confinement layer; never read
        except (OSError, ValueError, RecursionError):
            continue  # a damaged file is `sessions repair`'s business
        if isinstance(doc, dict):
            yield rel.as_posix(), doc


SQLITE_INT = (-(1 << 63), (1 << 63) - 1)  # a seq outside it cannot be a row: SQLite integers are 64-bit


def _present(reader: HistoryReader, sid: str, lo: Any, hi: Any) -> bool:
    """Whether the session has a row with seq in [lo, hi]; a bound that is not a 64-bit integer has none."""
    if not all(type(v) is int and SQLITE_INT[0] <= v <= SQLITE_INT[1] for v in (lo, hi)):
        return False
    (n,) = reader._query(f"SELECT count(*) FROM {TABLE} WHERE session_id = ? AND seq BETWEEN ? AND ?",
                         (sid, lo, hi))[0]
    return bool(n)


def _dangling(reader: HistoryReader, sessions_dir: Path, result: HistoryCheck, locate: RowsLocator) -> None:
    from qwenmem.core.session_model.detect import read_document

    evicted: list[str] = []
    persisted: list[str] = []
    n_evicted = n_persisted = 0
    for rel, doc in _session_docs(sessions_dir):
        session = read_document(doc)
        if session is None or session.scroll is None:
            continue
        sid = locate(rel, doc)
        if not sid:
            continue
        for lo, hi in session.scroll.eviction_spans():
            if not _present(reader, sid, lo, hi):
                n_evicted += 1
                if len(evicted) < EXAMPLES:
                    evicted.append(f"{rel}: seq {lo}-{hi}")
        for msg_id, span in session.scroll.seq_by_id.items():
            if not (isinstance(span, list) and len(span) == 2 and all(type(v) is int for v in span)):
                continue
            if not _present(reader, sid, span[0], span[1]):
                n_persisted += 1
                if len(persisted) < EXAMPLES:
                    persisted.append(f"{rel}: message {msg_id} seq {span[0]}-{span[1]}")
    if n_evicted:
        result.findings.append(Finding("dangling_eviction", PROBLEM, f"{n_evicted} eviction-index block(s) point at "
                                       "rows that no longer exist (purged or lost with a quarantined store): those "
                                       "turns survive only as their headlines", n_evicted, evicted))
    if n_persisted:
        result.findings.append(Finding("dangling_persisted", PROBLEM, f"{n_persisted} live message(s) are marked "
                                       "persisted but their rows are gone: QwenPaw will evict them without a copy "
                                       "in history", n_persisted, persisted))
