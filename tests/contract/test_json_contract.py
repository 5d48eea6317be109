"""The --json documents are a public contract: their keys and their status words are pinned here. Changing a key
needs a version bump; a status word, at least a CHANGELOG line."""

from dataclasses import fields

from helpers import invoke
from qwenmem.core.compaction.check import CompactReport
from qwenmem.core.compaction.gen1.check import CheckReport
from qwenmem.core.dream.changelog import Change
from qwenmem.core.dream.run import DreamResult
from qwenmem.core.dream.run import RestoreResult as DreamRestoreResult
from qwenmem.core.history.check import Finding as HistoryFinding
from qwenmem.core.history.check import HistoryCheck
from qwenmem.core.history.maintain import FtsRebuild, SalvageResult, SourceReport
from qwenmem.core.index.reindexing import ReindexResult
from qwenmem.core.listing import SessionRow
from qwenmem.core.repair.quarantine import RunInfo
from qwenmem.core.repair.restore import RestoredFile, RestoreResult
from qwenmem.core.repair.run import FileReport
from qwenmem.core.snapshot import CreateResult as SnapshotCreateResult
from qwenmem.core.snapshot import RestoreResult as SnapshotRestoreResult
from qwenmem.core.snapshot import SnapshotInfo
from qwenmem.core.upgrade.run import DialogReport as UpgradeDialog
from qwenmem.core.upgrade.run import SessionReport as UpgradeSession
from qwenmem.core.upgrade.run import UpgradeResult
from qwenmem.core.upgrade.undo import UndoResult as UpgradeUndo
from qwenmem.core.ops import (compact, compact_check, dream, dream_list_backups, history_salvage, info, reindex, search,
                              sessions_list, sessions_repair, sessions_restore, sessions_show, snapshot, snapshot_list)

NONE: frozenset[str] = frozenset()
#: document or nested row -> (the type its keys come from, fields of that type the document leaves out)
TYPES = {
    "sessions list": (sessions_list.SessionsListResult, NONE),
    "sessions list row": (SessionRow, NONE),
    "sessions show": (sessions_show.SessionsShowResult, NONE),
    "sessions show message": (sessions_show.ShownMessage, NONE),
    "info": (info.InfoResult, NONE),
    "sessions repair": (sessions_repair.RepairResult, NONE),
    "sessions repair file": (FileReport, NONE),
    "sessions restore runs": (sessions_restore.RestoreRunsResult, NONE),
    "sessions restore run": (RunInfo, NONE),
    "sessions restore": (RestoreResult, NONE),
    "sessions restore file": (RestoredFile, NONE),
    "compact check": (compact_check.CompactCheckResult, NONE),
    "compact check session": (CheckReport, NONE),
    "compact": (compact.CompactResult, compact.OMITTED_FIELDS),
    "compact session": (CompactReport, NONE),
    "reindex": (ReindexResult, reindex.OMITTED_FIELDS),
    "search": (search.SearchResult, search.OMITTED_FIELDS),
    "search hit": (search.SearchHit, NONE),
    "dream": (DreamResult, dream.OMITTED_FIELDS),
    "dream change": (Change, NONE),
    "dream restore": (DreamRestoreResult, NONE),
    "dream list-backups": (dream_list_backups.ListBackupsResult, NONE),
    "dream list-backups backup": (dream_list_backups.BackupRow, NONE),
    "history check": (HistoryCheck, NONE),
    "history check finding": (HistoryFinding, NONE),
    "history salvage": (SalvageResult, history_salvage.OMITTED_FIELDS),
    "history salvage source": (SourceReport, NONE),
    "history rebuild-fts": (FtsRebuild, NONE),
    "snapshot": (SnapshotCreateResult, snapshot.OMITTED_FIELDS),
    "snapshot info": (SnapshotInfo, NONE),
    "snapshot list": (snapshot_list.SnapshotListResult, NONE),
    "snapshot restore": (SnapshotRestoreResult, snapshot.OMITTED_FIELDS),
    "upgrade": (UpgradeResult, NONE),
    "upgrade session": (UpgradeSession, NONE),
    "upgrade dialog": (UpgradeDialog, NONE),
    "upgrade undo": (UpgradeUndo, NONE),
}

#: The public contract, written out: a change to a result type fails here until the pin (and qwenmem_json) moves.
PINS = {
    "sessions list": {
        "count", "generation", "history", "history_only", "sessions", "strategy", "tokenizer", "workspace"},
    "sessions list row": {
        "ambiguous", "at_risk", "backups", "channel", "first_timestamp", "generation", "has_summary", "health",
        "history_rows", "identity", "in_context", "key", "last_timestamp", "messages", "modified", "path", "problems",
        "session_id", "size", "stale_flat_copy", "summary_tokens", "tokens", "user_id"},
    "sessions show": {
        "channel", "generation", "health", "history", "key", "messages", "path", "problems", "salvaged", "scroll",
        "session_id", "summary", "total_messages", "user_id"},
    "sessions show message": {"index", "marks", "message", "normalized"},
    "info": {
        "agent", "derived", "embedding_kernel", "files", "found_by", "generation", "notes", "qwenpaw2", "root",
        "settings", "workspace"},
    "sessions repair": {"counts", "files", "mode", "quarantine", "run", "statuses", "workspace"},
    "sessions repair file": {
        "actions", "classes", "evidence", "generation", "key", "messages_added", "messages_found", "messages_intact",
        "messages_lost", "messages_removed", "notes", "original_sha256", "path", "pending", "quarantined",
        "replacements", "restored_from", "result_sha256", "status", "summary", "violations"},
    "sessions restore runs": {"runs", "workspace"},
    "sessions restore run": {"created", "files", "kind", "path", "run_id"},
    "sessions restore": {"backup_run", "files", "from_run"},
    "sessions restore file": {"kept_current", "path", "source", "status"},
    "compact check": {"config_layout", "sessions", "workspace"},
    "compact check session": {
        "aligned", "budget", "config_layout", "fallback", "generation", "health", "keep_tokens", "kept_ids", "key",
        "legacy_compressed", "message_count", "path", "problems", "prunable_outputs", "reason", "removed_ids", "room",
        "tokenizer", "tokens", "tokens_after_prune", "would_compact"},
    "compact": {"dry_run", "sessions", "workspace"},
    "compact session": {
        "backup", "check", "context_tokens_after", "context_tokens_before", "error", "error_kind", "kept_ids", "key",
        "path", "removed_ids", "status", "tier1", "tier2", "tier3", "warnings"},
    "reindex": {
        "chunks_new", "chunks_total", "chunks_without_vectors", "dry_run", "embed_seconds", "embedder",
        "embedding_error", "embedding_kernel", "files_added", "files_changed", "files_removed", "files_skipped", "files_total", "full",
        "generation", "pieces_embedded", "pieces_reused", "reason", "seconds", "sources", "up_to_date"},
    "search": {"count", "embedder", "fusion", "hits", "mode", "query"},
    "search hit": {
        "end_line", "highlights", "kind", "match_line", "match_score", "path", "score", "snippet", "start_line", "text",
        "text_score", "vector_score"},
    "dream": {
        "backup", "bytes_after", "bytes_before", "changelog", "changes", "daily_log", "date", "diff",
        "embedding_model", "flagged", "index_refreshed", "llm_model", "memory", "mode", "pruned", "sha256_after",
        "sha256_before", "skipped", "snapshot", "status"},
    "dream change": {"action", "line", "new", "old", "reason", "section", "similarity"},
    "dream restore": {
        "backup", "changelog", "diff", "memory", "pruned", "restored_from", "sha256_after", "sha256_before", "status"},
    "dream list-backups": {"backups", "recent"},
    "dream list-backups backup": {"name", "path", "size"},
    "history check": {"deep", "findings", "fts", "integrity", "path", "state"},
    "history check finding": {"code", "count", "examples", "message", "severity"},
    "history salvage": {
        "action", "already_present", "complete", "dry_run", "inserted", "kept_seq", "live", "quarantine", "renumbered",
        "sources"},
    "history salvage source": {
        "cut_seqs", "from_lost_and_found", "lost_pages", "method", "missing_seqs", "notices", "partial_rows", "path",
        "rows_from_wal", "rows_read", "scan_only"},
    "history rebuild-fts": {"documents_after", "documents_before", "dry_run", "live", "needed", "quarantine"},
    "snapshot": {"bytes_freed", "objects_removed", "pruned", "same_as", "snapshot", "status"},
    "snapshot info": {
        "added_bytes", "bytes", "created", "dirs", "files", "id", "manifest", "reason", "root", "skipped"},
    "snapshot list": {"count", "damaged", "directory", "snapshots"},
    "snapshot restore": {
        "created", "extra", "pruned", "removed", "replaced", "restored_from", "status", "unchanged", "undo_snapshot"},
    "upgrade": {
        "agent_id", "agent_json_keys_added", "created_history_db", "dialog", "history_db", "journal", "reme_leftovers",
        "retention_days", "rows_added", "sessions", "snapshot", "status", "strategy", "warnings", "workspace"},
    "upgrade session": {
        "compressed", "first_turn_compacts", "key", "messages", "problem", "qwenpaw_keeps", "registered", "rows_to_add",
        "session_id", "status", "summary_in", "tokens_after", "tokens_before", "trigger"},
    "upgrade dialog": {"file", "messages", "rows_to_add", "session_id", "unreadable_lines"},
    "upgrade undo": {
        "dialog_cut", "journal", "left_changed", "removed_history_db", "restored", "rows_removed", "status", "workspace"},
}


def keys(name: str) -> set[str]:
    cls, omitted = TYPES[name]
    return {f.name for f in fields(cls)} - omitted


def test_every_result_type_matches_its_pin():
    assert set(TYPES) == set(PINS)
    for name in TYPES:
        assert keys(name) == PINS[name], name

ENVELOPE = {"qwenmem_json", "command", "status", "result", "warnings", "errors"}
SESSION_ROW = {"key", "path", "channel", "user_id", "session_id", "identity", "ambiguous", "messages", "in_context",
               "tokens", "has_summary", "summary_tokens", "size", "modified", "first_timestamp", "last_timestamp",
               "health", "problems", "stale_flat_copy", "backups", "generation", "history_rows", "at_risk"}
HISTORY_STATE = {"path", "exists", "size", "wal_size", "rows", "sessions", "user_version", "status", "detail",
                 "quarantined"}
SHOW_RESULT = {"key", "path", "channel", "user_id", "session_id", "health", "salvaged", "problems", "summary",
               "total_messages", "messages", "generation", "scroll", "history"}
# the normalised message shape shared by 1.x and 2.x files and history.db rows (session_model.Message.to_json)
NORMALIZED_MESSAGE = {"index", "id", "role", "name", "created_at", "synthetic", "compressed", "seq", "seq_hi", "live",
                      "blocks"}
INFO_RESULT = {"workspace", "root", "agent", "found_by", "notes", "files", "settings", "derived", "generation",
               "qwenpaw2", "embedding_kernel"}
QWENPAW2_INFO = {"strategy", "strategy_source", "scroll", "history_retention_days", "history", "reme_dirs", "provider",
                 "embedding_api_key"}


def test_sessions_list_contract(sample_ws):
    doc = invoke("-w", str(sample_ws), "sessions", "list", "--json").json()
    assert set(doc) == ENVELOPE
    assert doc["qwenmem_json"] == 6 and doc["command"] == "sessions list" and doc["status"] == "ok"
    assert set(doc["result"]) == {"workspace", "tokenizer", "count", "sessions", "generation", "strategy", "history",
                                  "history_only"}
    assert set(doc["result"]["generation"]) == {"generation", "files_1x", "files_2x", "markers"}
    assert set(doc["result"]["history"]) == HISTORY_STATE
    assert doc["result"]["count"] == 4
    for row in doc["result"]["sessions"]:
        assert set(row) == SESSION_ROW
    healths = sorted(r["health"] for r in doc["result"]["sessions"])
    assert healths == ["corrupt", "ok", "ok", "ok"]


def test_sessions_show_contract(sample_ws):
    doc = invoke("-w", str(sample_ws), "sessions", "show", "console/default_1764235442381", "--json").json()
    assert set(doc) == ENVELOPE and doc["command"] == "sessions show"
    assert set(doc["result"]) == SHOW_RESULT
    first = doc["result"]["messages"][0]
    assert set(first) == {"index", "marks", "message", "normalized"}
    assert set(first["normalized"]) == NORMALIZED_MESSAGE
    assert set(first["message"]) == {"id", "name", "role", "content", "metadata", "timestamp"}


def test_info_contract(sample_ws):
    doc = invoke("-w", str(sample_ws), "info", "--json").json()
    assert set(doc) == ENVELOPE and doc["command"] == "info"
    assert set(doc["result"]) == INFO_RESULT
    assert {"name", "value", "source"} == set(doc["result"]["settings"][0])
    assert doc["result"]["derived"] == {"compact_threshold": 104857, "reserve_tokens": 13107}
    assert set(doc["result"]["qwenpaw2"]) == QWENPAW2_INFO
    assert set(doc["result"]["embedding_kernel"]) == {"kernel", "source", "cpu_flags"}
    assert doc["result"]["embedding_kernel"]["kernel"] in ("ort-int8", "ort-fp32", "bf16", "int8", "fp32")
    assert set(doc["result"]["qwenpaw2"]["history"]) == HISTORY_STATE
    assert doc["result"]["generation"]["generation"] == "1.x"


def test_error_envelope_contract(tmp_path):
    run = invoke("-w", str(tmp_path / "missing"), "info", "--json")
    doc = run.json()
    assert set(doc) == ENVELOPE and doc["status"] == "error" and doc["result"] is None
    assert set(doc["errors"][0]) == {"code", "message"}


def test_json_goes_to_stdout_and_diagnostics_to_stderr(sample_ws):
    run = invoke("-w", str(sample_ws), "sessions", "list", "--json")
    assert run.stdout.lstrip().startswith("{") and run.stdout.rstrip().endswith("}")
    human = invoke("-w", str(sample_ws), "sessions", "list")
    assert "corrupt session file" in human.stderr and "corrupt session file" not in human.stdout


def test_list_warnings_reach_json_too(sample_ws):
    doc = invoke("-w", str(sample_ws), "sessions", "list", "--json").json()
    assert any("1 corrupt session file" in w for w in doc["warnings"])
    assert any("ambiguously" in w for w in doc["warnings"])


def test_error_before_the_workspace_is_opened_names_its_command(tmp_path):
    # a usage error raised before any workspace lookup used to be reported as command "qwenmem"
    doc = invoke("-w", str(tmp_path / "missing"), "compact", "some/session", "--all", "--json").json()
    assert doc["command"] == "compact" and doc["status"] == "error" and doc["errors"][0]["code"] == "usage"
    doc = invoke("-w", str(tmp_path / "missing"), "sessions", "repair", "--check", "--dry-run", "--json").json()
    assert doc["command"] == "sessions repair"


def test_json_after_double_dash_is_a_search_query_not_the_flag(sample_ws):
    run = invoke("-w", str(sample_ws), "search", "--mode", "text", "--", "--json")
    # a query, not the flag: searched (nothing holds it: "no results", exit 1 like grep) and no JSON printed
    assert run.code == 1 and "no results for '--json'" in run.stderr and not run.stdout.lstrip().startswith("{")
    doc = invoke("-w", str(sample_ws), "search", "--mode", "text", "--json", "--", "--json").json()
    assert doc["result"]["query"] == "--json"


def _doc(ws, *args):
    run = invoke("-w", str(ws), *args, "--json")
    doc = run.json()
    assert set(doc) == ENVELOPE and doc["qwenmem_json"] == 6, (args, run.stderr)
    return doc


def test_every_document_has_the_keys_of_its_type(sample_ws):
    """Each --json document, run for real on the sample, against the keys its result type declares."""
    ws = sample_ws
    listing = _doc(ws, "sessions", "list")["result"]
    assert set(listing) == keys("sessions list") and set(listing["sessions"][0]) == keys("sessions list row")
    shown = _doc(ws, "sessions", "show", "console/default_1764235442381")["result"]
    assert set(shown) == keys("sessions show") and set(shown["messages"][0]) == keys("sessions show message")
    assert set(_doc(ws, "info")["result"]) == keys("info")
    check = _doc(ws, "compact", "--check", "--all")
    assert check["command"] == "compact check" and set(check["result"]) == keys("compact check")
    assert set(check["result"]["sessions"][0]) == keys("compact check session")
    dry = _doc(ws, "compact", "--all", "--dry-run", "--summarizer", "extractive")["result"]
    assert set(dry) == keys("compact") and set(dry["sessions"][0]) == keys("compact session")
    repaired = _doc(ws, "sessions", "repair", "--all")["result"]
    assert set(repaired) == keys("sessions repair") and set(repaired["files"][0]) == keys("sessions repair file")
    runs = _doc(ws, "sessions", "restore")
    assert runs["command"] == "sessions restore" and set(runs["result"]) == keys("sessions restore runs")
    assert set(runs["result"]["runs"][0]) == keys("sessions restore run")
    restored = _doc(ws, "sessions", "restore", runs["result"]["runs"][0]["run_id"], "--dry-run")["result"]
    assert set(restored) == keys("sessions restore") and set(restored["files"][0]) == keys("sessions restore file")
    indexed = _doc(ws, "reindex", "--embedder", "none")
    assert set(indexed["result"]) == keys("reindex") and "notices" not in indexed["result"]
    found = _doc(ws, "search", "database", "--mode", "text")["result"]
    assert set(found) == keys("search") and set(found["hits"][0]) == keys("search hit")
    dreamt = _doc(ws, "dream", "--mode", "deterministic", "--date", "2026-11-28")
    assert set(dreamt["result"]) == keys("dream") and "warnings" not in dreamt["result"]  # once, in the envelope
    assert set(dreamt["result"]["changes"][0]) == keys("dream change")
    backups = _doc(ws, "dream", "--list-backups")
    assert backups["command"] == "dream list-backups" and set(backups["result"]) == keys("dream list-backups")
    assert set(backups["result"]["backups"][0]) == keys("dream list-backups backup")
    rolled = _doc(ws, "dream", "--restore", "--dry-run")
    assert rolled["command"] == "dream restore" and set(rolled["result"]) == keys("dream restore")


DOCTOR_RESULT = {"root", "agents", "elapsed_ms", "needs_attention"}
DOCTOR_AGENT = {"agent", "workspace", "generation", "error", "sessions", "index", "dream", "storage", "schedule",
                "history", "temporaries", "findings", "needs_attention"}
DOCTOR_SESSIONS = {"total", "ok", "corrupt", "needs_flag", "unrecoverable", "warnings", "near_threshold",
                   "compact_threshold"}
DOCTOR_INDEX = {"state", "generation", "built_at", "embedder", "chunks", "files", "stale_files", "vectors_missing"}
DOCTOR_DREAM = {"runs", "last_time", "last_kind", "last_mode", "last_changes", "last_backup"}
DOCTOR_STORAGE = {"name", "files", "bytes", "oldest", "newest"}
DOCTOR_SCHEDULE = {"dream_cron", "source", "qwenpaw_dreams"}
DOCTOR_HISTORY = {"status", "path", "size", "rows", "sessions", "detail", "integrity", "fts", "findings"}
DOCTOR_TEMPORARIES = {"status", "stale", "bytes"}
DOCTOR_FINDING = {"level", "area", "message"}


def test_doctor_contract(sample_ws):
    assert invoke("-w", str(sample_ws), "sessions", "repair", "--all").code in (0, 1)  # quarantine something
    doc = invoke("-w", str(sample_ws), "doctor", "--json").json()
    assert set(doc) == ENVELOPE and doc["command"] == "doctor" and doc["status"] in ("ok", "problems")
    assert set(doc["result"]) == DOCTOR_RESULT
    agent = doc["result"]["agents"][0]
    assert set(agent) == DOCTOR_AGENT
    assert set(agent["sessions"]) == DOCTOR_SESSIONS and set(agent["index"]) == DOCTOR_INDEX
    assert set(agent["dream"]) == DOCTOR_DREAM and set(agent["schedule"]) == DOCTOR_SCHEDULE
    assert set(agent["history"]) == DOCTOR_HISTORY and set(agent["temporaries"]) == DOCTOR_TEMPORARIES
    assert agent["storage"] and all(set(a) == DOCTOR_STORAGE for a in agent["storage"])
    assert agent["findings"] and all(set(f) == DOCTOR_FINDING for f in agent["findings"])


def _history_ws(tmp_path):
    """A 2.x workspace whose history.db QwenPaw set aside as corrupt (renamed, an empty store started: spec §3.6)."""
    import os

    from qwenpaw2_support import builder

    ws = tmp_path / "ws2"
    (ws / "sessions").mkdir(parents=True)
    builder.agent_json(ws, "scroll", retention=30)
    conn = builder.create_history_db(ws / "history.db")
    builder.scroll_session(ws, conn, "console:u", "u", "console", 6, keep_last=3, clock=builder.Clock())
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    os.replace(ws / "history.db", ws / "history.db.corrupt-20261130T101500")
    for side in ("-wal", "-shm"):
        (ws / f"history.db{side}").unlink(missing_ok=True)
    builder.create_history_db(ws / "history.db").close()
    return ws


def test_history_and_snapshot_documents_have_the_keys_of_their_types(tmp_path):
    """The documents added after the first pins, run for real: history check/salvage/rebuild-fts on a 2.x store
    with a set-aside copy, snapshot create/list/restore; no result repeats the envelope's warnings."""
    ws = _history_ws(tmp_path)
    checked = _doc(ws, "history", "check", "--deep")
    assert checked["command"] == "history check" and set(checked["result"]) == keys("history check")
    assert checked["result"]["findings"] and all(set(f) == keys("history check finding")
                                                 for f in checked["result"]["findings"])
    salvaged = _doc(ws, "history", "salvage", "--dry-run")
    assert salvaged["command"] == "history salvage" and set(salvaged["result"]) == keys("history salvage")
    assert salvaged["result"]["sources"] and all(set(s) == keys("history salvage source")
                                                 for s in salvaged["result"]["sources"])
    rebuilt = _doc(ws, "history", "rebuild-fts", "--dry-run")
    assert rebuilt["command"] == "history rebuild-fts" and set(rebuilt["result"]) == keys("history rebuild-fts")
    (ws / "MEMORY.md").write_text("# Memory\n\n- The user prefers tea\n")
    made = _doc(ws, "snapshot", "-m", "contract")
    assert made["command"] == "snapshot" and set(made["result"]) == keys("snapshot")
    assert set(made["result"]["snapshot"]) == keys("snapshot info")
    listed = _doc(ws, "snapshot", "list")
    assert listed["command"] == "snapshot list" and set(listed["result"]) == keys("snapshot list")
    assert all(set(s) == keys("snapshot info") for s in listed["result"]["snapshots"])
    restored = _doc(ws, "snapshot", "restore", "--dry-run")
    assert restored["command"] == "snapshot restore" and set(restored["result"]) == keys("snapshot restore")


# --- the values: each status word a document can hold, written out -------------------------------------------------
# A word added, dropped or misspelt in the code fails `test_every_vocabulary_matches_its_pin` until the pin (and,
# for a word a reader may already match on, the CHANGELOG) says so; the documents run for real below may only hold
# pinned words. The words are written here, not derived from the code.

def _vocabularies() -> dict[str, tuple[object, set[str]]]:
    from qwenmem.cli.result import Status as EnvelopeStatus
    from qwenmem.core.compaction.check import CompactStatus
    from qwenmem.core.compaction.gen1.prune import PruneKind
    from qwenmem.core.repair.quarantine import QuarantineKind
    from qwenmem.core.compaction.gen2.check import FileStrategy
    from qwenmem.core.doctor import AgentHistoryStatus, Area, IndexState, Level, TemporariesStatus
    from qwenmem.core.dream.changelog import ChangeAction, ChangelogKind, ChangelogMode, DreamMode
    from qwenmem.core.dream.run import DreamRestoreStatus, DreamStatus
    from qwenmem.core.history.check import FindingCode, FtsVerdict, Severity
    from qwenmem.core.history.keys import RowsKeySource
    from qwenmem.core.history.maintain import SalvageAction
    from qwenmem.core.history.state import HistoryStatus
    from qwenmem.core.index.vocabulary import Fusion, SearchMode
    from qwenmem.core.repair.evidence import EvidenceKind
    from qwenmem.core.repair.restore import RestoredStatus
    from qwenmem.core.repair.run import RepairFileStatus, RepairMode
    from qwenmem.core.session_model.model import Generation
    from qwenmem.core.salvage_documents import SummaryState
    from qwenmem.core.sessions import Health, IdentitySource
    from qwenmem.core.settings.gen1 import ConfigLayout
    from qwenmem.core.settings.gen2 import ContextStrategy, WorkspaceGeneration
    from qwenmem.core.snapshot import SnapshotCreateStatus, SnapshotRestoreStatus
    from qwenmem.core.upgrade.run import SessionStatus as UpgradeSessionStatus
    from qwenmem.core.upgrade.run import UpgradeStatus
    from qwenmem.core.upgrade.shape import Strategy as UpgradeStrategy
    from qwenmem.core.upgrade.shape import SummaryPlace
    from qwenmem.core.upgrade.undo import UndoStatus

    return {
        "envelope status": (EnvelopeStatus, {"ok", "problems", "error"}),
        "session generation": (Generation, {"1.x", "2.x"}),
        "session health": (Health, {"ok", "warnings", "corrupt"}),
        "session identity (1.x file)": (IdentitySource, {"chats.json", "filename", "filename (ambiguous)"}),
        "session identity (2.x rows key)": (RowsKeySource, {
            "chats.json", "scroll.index.session_id", "filename", "unknown"}),
        "config layout": (ConfigLayout, {"current", "legacy"}),
        "workspace generation": (WorkspaceGeneration, {"1.x", "2.x", "mixed", "unknown"}),
        "context strategy": (ContextStrategy, {"scroll", "native", "light"}),
        "compact 2.x file strategy": (FileStrategy, {"scroll", "native"}),
        "sessions repair mode": (RepairMode, {"check", "dry-run", "repair"}),
        "sessions repair file status": (RepairFileStatus, {
            "ok", "warning", "needs_repair", "would_repair", "repaired", "unrecoverable", "needs_flag", "changed",
            "busy", "error"}),
        "sessions repair summary": (SummaryState, {"intact", "absent", "cut", "resynced", "lost"}),
        "sessions repair evidence kind": (EvidenceKind, {"backup", "copy", "quarantine", "dialog"}),
        "sessions restore file status": (RestoredStatus, {"restored", "would_restore", "unchanged", "changed"}),
        "compact session status": (CompactStatus, {"compacted", "pruned", "unchanged", "dry-run", "skipped", "failed"}),
        "compact prune kind": (PruneKind, {"truncated", "re-truncated"}),
        "sessions restore run kind": (QuarantineKind, {"repair", "restore"}),
        "search mode": (SearchMode, {"hybrid", "text", "vector"}),
        "search fusion": (Fusion, {"weighted", "rrf", "reme"}),
        "dream status": (DreamStatus, {"changed", "unchanged", "dry-run"}),
        "dream mode": (DreamMode, {"deterministic", "llm"}),
        "dream change action": (ChangeAction, {
            "removed", "merged", "replaced", "added", "flagged", "restored", "changed"}),
        "dream changelog kind": (ChangelogKind, {"dream", "restore"}),
        "dream changelog mode": (ChangelogMode, {"deterministic", "llm", "restore"}),
        "dream restore status": (DreamRestoreStatus, {"restored", "unchanged", "dry-run"}),
        "history state status": (HistoryStatus, {"ok", "missing", "corrupt", "locked", "unreadable", "not_history"}),
        "history check fts": (FtsVerdict, {"ok", "absent", "disagrees", "not checked"}),
        "history check finding code": (FindingCode, {
            "integrity", "fts_missing", "fts_stale", "fts_content", "fts_absent", "bad_json", "dangling_eviction",
            "dangling_persisted", "placeholder_rows", "size", "retention", "quarantined", "unreadable"}),
        "history check finding severity": (Severity, {"problem", "notice"}),
        "history salvage action": (SalvageAction, {"merged", "rebuilt", "created", "nothing to salvage"}),
        "snapshot status": (SnapshotCreateStatus, {"created", "dry-run"}),
        "snapshot restore status": (SnapshotRestoreStatus, {"restored", "unchanged", "dry-run"}),
        "doctor finding level": (Level, {"attention", "note"}),
        "doctor finding area": (Area, {
            "sessions", "index", "dream", "storage", "schedule", "history", "temporaries", "workspace"}),
        "doctor index state": (IndexState, {"missing", "ok", "stale", "damaged"}),
        "doctor history status": (AgentHistoryStatus, {
            "not_applicable", "ok", "missing", "corrupt", "locked", "unreadable", "not_history"}),
        "doctor temporaries status": (TemporariesStatus, {"not_checked", "ok", "found"}),
        "upgrade status": (UpgradeStatus, {"upgraded", "dry-run", "unchanged"}),
        "upgrade strategy": (UpgradeStrategy, {"scroll", "native"}),
        "upgrade session status": (UpgradeSessionStatus, {"upgraded", "would upgrade", "already 2.x", "damaged"}),
        "upgrade summary place": (SummaryPlace, {"continuation_summary", "state.summary", ""}),
        "upgrade undo status": (UndoStatus, {"undone", "dry-run"}),
    }


def words(name: str) -> set[str]:
    return _vocabularies()[name][1]


def test_every_vocabulary_matches_its_pin():
    import enum
    from typing import get_args

    for name, (vocabulary, pinned) in _vocabularies().items():
        declared = ({m.value for m in vocabulary} if isinstance(vocabulary, type) and issubclass(vocabulary, enum.Enum)
                    else set(get_args(vocabulary)))
        assert declared == pinned, name


def _within(name: str, seen: object) -> None:
    values = {seen} if isinstance(seen, str) or seen is None else set(seen)
    assert values - {None} <= words(name), (name, values)


def test_every_status_word_seen_on_the_sample_is_pinned(sample_ws):
    """The 1.x sample, command by command: each vocabulary field of each document holds one of its pinned words."""
    ws = sample_ws
    listing = _doc(ws, "sessions", "list")
    _within("envelope status", listing["status"])
    _within("session health", [r["health"] for r in listing["result"]["sessions"]])
    _within("session generation", [r["generation"] for r in listing["result"]["sessions"]])
    assert {r["health"] for r in listing["result"]["sessions"]} == {"ok", "corrupt"}
    _within("workspace generation", listing["result"]["generation"]["generation"])
    _within("session identity (1.x file)", [r["identity"] for r in listing["result"]["sessions"]])
    _within("context strategy", listing["result"]["strategy"])
    _within("history state status", listing["result"]["history"]["status"])
    info = _doc(ws, "info")["result"]
    _within("workspace generation", info["generation"]["generation"])
    _within("context strategy", info["qwenpaw2"]["strategy"])
    shown = _doc(ws, "sessions", "show", "console/default_1764235442381")["result"]
    _within("session health", shown["health"])
    _within("session generation", shown["generation"])
    check = _doc(ws, "compact", "--check", "--all")["result"]
    _within("config layout", check["config_layout"])
    _within("config layout", [s["config_layout"] for s in check["sessions"]])
    _within("session health", [s["health"] for s in check["sessions"]])
    dry = _doc(ws, "compact", "--all", "--dry-run", "--summarizer", "extractive")["result"]
    _within("compact session status", [s["status"] for s in dry["sessions"]])
    checked = _doc(ws, "sessions", "repair", "--check")
    _within("envelope status", checked["status"])
    assert checked["result"]["mode"] == "check"
    _within("sessions repair file status", [f["status"] for f in checked["result"]["files"]])
    repaired = _doc(ws, "sessions", "repair", "--all")["result"]
    _within("sessions repair mode", repaired["mode"])
    _within("sessions repair file status", [f["status"] for f in repaired["files"]])
    _within("sessions repair file status", repaired["statuses"])
    _within("session generation", [f["generation"] for f in repaired["files"]])
    _within("sessions repair summary", [f["summary"] for f in repaired["files"]])
    _within("sessions repair evidence kind", [e["kind"] for f in repaired["files"] for e in f["evidence"]])
    assert "repaired" in {f["status"] for f in repaired["files"]}
    runs = _doc(ws, "sessions", "restore")["result"]["runs"]
    _within("sessions restore run kind", [r["kind"] for r in runs])  # read back from each run's manifest
    run_id = runs[0]["run_id"]
    restored = _doc(ws, "sessions", "restore", run_id, "--dry-run")["result"]
    _within("sessions restore file status", [f["status"] for f in restored["files"]])
    for mode in ("text", "hybrid"):
        found = _doc(ws, "search", "database", "--mode", mode)["result"]
        _within("search mode", found["mode"])
        _within("search fusion", found["fusion"])
    dreamt = _doc(ws, "dream", "--mode", "deterministic", "--date", "2026-11-28")["result"]
    _within("dream status", dreamt["status"])
    _within("dream mode", dreamt["mode"])
    _within("dream change action", [c["action"] for c in dreamt["changes"] + dreamt["flagged"]])
    rolled = _doc(ws, "dream", "--restore", "--dry-run")["result"]
    _within("dream restore status", rolled["status"])
    doctor = _doc(ws, "doctor")
    for agent in doctor["result"]["agents"]:
        _within("doctor finding level", [f["level"] for f in agent["findings"]])
        _within("doctor finding area", [f["area"] for f in agent["findings"]])
        _within("doctor index state", agent["index"]["state"])
        _within("workspace generation", agent["generation"])
        _within("doctor history status", agent["history"]["status"])
        _within("history check fts", agent["history"]["fts"])
        _within("doctor temporaries status", agent["temporaries"]["status"])
        _within("dream changelog kind", agent["dream"]["last_kind"])  # read back from the change log
        _within("dream changelog mode", agent["dream"]["last_mode"])
        assert agent["dream"]["last_kind"] == "dream"


def test_every_status_word_seen_on_a_2x_store_is_pinned(tmp_path):
    """history check / salvage and snapshot create / restore on a 2.x workspace with a set-aside store."""
    ws = _history_ws(tmp_path)
    checked = _doc(ws, "history", "check", "--deep")["result"]
    _within("history state status", checked["state"]["status"])
    _within("history check fts", checked["fts"])
    _within("history check finding code", [f["code"] for f in checked["findings"]])
    _within("history check finding severity", [f["severity"] for f in checked["findings"]])
    assert "quarantined" in {f["code"] for f in checked["findings"]}
    salvaged = _doc(ws, "history", "salvage", "--dry-run")["result"]
    _within("history salvage action", salvaged["action"])
    listing = _doc(ws, "sessions", "list")["result"]
    _within("history state status", listing["history"]["status"])
    _within("session generation", [r["generation"] for r in listing["sessions"]])
    assert {r["generation"] for r in listing["sessions"]} == {"2.x"}
    _within("workspace generation", listing["generation"]["generation"])
    _within("context strategy", listing["strategy"])
    assert listing["strategy"] == "scroll"
    _within("session identity (2.x rows key)", [r["identity"] for r in listing["sessions"]])
    check = _doc(ws, "compact", "--check", "--all")["result"]
    _within("session generation", [s["generation"] for s in check["sessions"]])
    _within("compact 2.x file strategy", [s["strategy"] for s in check["sessions"]])
    assert check["sessions"]
    (ws / "MEMORY.md").write_text("# Memory\n\n- The user prefers tea\n")
    made = _doc(ws, "snapshot", "-m", "contract", "--dry-run")["result"]
    _within("snapshot status", made["status"])
    made = _doc(ws, "snapshot", "-m", "contract")["result"]
    _within("snapshot status", made["status"])
    restored = _doc(ws, "snapshot", "restore", "--dry-run")["result"]
    _within("snapshot restore status", restored["status"])
    repaired = _doc(ws, "sessions", "repair", "--check")["result"]
    _within("sessions repair file status", [f["status"] for f in repaired["files"]])
    _within("session generation", [f["generation"] for f in repaired["files"]])


def test_upgrade_documents_hold_their_keys_and_pinned_words(sample_ws):
    """The 1.x sample upgraded for real: dry run, upgrade, rerun (nothing left to do), undo."""
    ws = sample_ws
    for args, status in ((("upgrade", "--dry-run"), "dry-run"), (("upgrade",), "upgraded"), (("upgrade",), "unchanged")):
        doc = _doc(ws, *args)
        result = doc["result"]
        assert set(result) == keys("upgrade") and result["status"] == status, args
        _within("upgrade status", result["status"])
        _within("upgrade strategy", result["strategy"])
        assert result["sessions"], args
        for row in result["sessions"]:
            assert set(row) == keys("upgrade session")
            _within("upgrade session status", row["status"])
            _within("upgrade summary place", row["summary_in"])
        assert all(set(d) == keys("upgrade dialog") for d in result["dialog"])
    undone = _doc(ws, "upgrade", "--undo")["result"]
    assert set(undone) == keys("upgrade undo")
    _within("upgrade undo status", undone["status"])
