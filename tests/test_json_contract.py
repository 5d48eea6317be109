"""The --json documents are a public contract: their keys are pinned here. Changing them needs a version bump."""

from conftest import invoke

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
               "qwenpaw2"}
QWENPAW2_INFO = {"strategy", "strategy_source", "scroll", "history_retention_days", "history", "reme_dirs", "provider",
                 "embedding_api_key"}


def test_sessions_list_contract(sample_ws):
    doc = invoke("-w", str(sample_ws), "sessions", "list", "--json").json()
    assert set(doc) == ENVELOPE
    assert doc["qwenmem_json"] == 1 and doc["command"] == "sessions list" and doc["status"] == "ok"
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
