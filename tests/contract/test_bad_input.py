"""Bad input gets one clear line and the right exit code, never a traceback; nothing is modified."""

import os

import pytest

from helpers import invoke, run_cli


def tree_state(root):
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() and not p.is_symlink() else None)
            for p in sorted(root.rglob("*"))}


def test_missing_workspace_exits_3_with_one_line(tmp_path):
    run = run_cli("-w", str(tmp_path / "nope"), "sessions", "list")
    assert run.code == 3
    assert run.stdout == ""
    assert [ln for ln in run.stderr.splitlines() if ln.strip()] == [
        f"error: workspace {tmp_path / 'nope'} does not exist (from --workspace)"]


def test_missing_workspace_json_envelope(tmp_path):
    run = run_cli("-w", str(tmp_path / "nope"), "sessions", "list", "--json")
    assert run.code == 3
    doc = run.json()
    assert doc["status"] == "error" and doc["errors"][0]["code"] == "workspace_unavailable"
    assert doc["command"] == "sessions list"


@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/passwd", "sessions/../../x.json", "../agent.json"])
def test_path_traversal_session_ids_are_refused(sample_ws, name):
    run = invoke("-w", str(sample_ws), "sessions", "show", name)
    assert run.code == 2
    assert "outside the workspace" in run.stderr or "may not leave the workspace" in run.stderr, run.stderr
    assert "root:" not in run.stdout


def test_symlink_leaving_workspace_is_listed_not_read(sample_ws, tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text('{"agent": {"memory": {"content": [], "_compressed_summary": "TOP SECRET"}}}')
    (sample_ws / "sessions" / "console" / "evil.json").symlink_to(secret)
    run = invoke("-w", str(sample_ws), "sessions", "list", "--json")
    row = next(r for r in run.json()["result"]["sessions"] if r["path"].endswith("evil.json"))
    assert row["health"] == "corrupt" and "outside the workspace" in row["problems"][0]
    shown = invoke("-w", str(sample_ws), "sessions", "show", "sessions/console/evil.json")
    assert shown.code == 2 and "TOP SECRET" not in shown.stdout


def test_directory_binary_empty_and_nul_files_are_reported(sample_ws):
    sessions = sample_ws / "sessions" / "console"
    (sessions / "adir.json").mkdir()
    (sessions / "binary.json").write_bytes(bytes(range(256)) * 40)
    (sessions / "empty.json").write_bytes(b"")
    (sessions / "nul.json").write_bytes(b"\x00" * 256)
    (sessions / "bom.json").write_bytes(b"\xef\xbb\xbf" + (sessions / "default_1764235442381.json").read_bytes())
    os.mkfifo(sessions / "fifo.json")
    before = tree_state(sample_ws)
    run = invoke("-w", str(sample_ws), "sessions", "list", "--json")
    assert run.code == 0 and "Traceback" not in run.stderr
    rows = {r["path"].rsplit("/", 1)[-1]: r for r in run.json()["result"]["sessions"]}
    for name in ("adir.json", "binary.json", "empty.json", "nul.json", "bom.json", "fifo.json"):
        assert rows[name]["health"] == "corrupt", name
        assert rows[name]["problems"], name
    assert rows["bom.json"]["messages"] == 8  # readable for us, but QwenPaw would load it as empty
    for name in ("adir.json", "binary.json", "empty.json"):
        run = invoke("-w", str(sample_ws), "sessions", "show", f"sessions/console/{name}")
        assert run.code == 1 and "Traceback" not in run.stderr, name
    assert tree_state(sample_ws) == before


def test_huge_file_is_not_loaded(sample_ws, monkeypatch):
    from qwenmem.core import sessions

    monkeypatch.setattr(sessions, "MAX_SESSION_BYTES", 1000)
    run = invoke("-w", str(sample_ws), "sessions", "list", "--json")
    rows = {r["path"]: r for r in run.json()["result"]["sessions"]}
    big = rows["sessions/console/default_1764235442381.json"]
    assert big["health"] == "corrupt" and "larger than" in big["problems"][0]


def test_sparse_1gb_file_listed_quickly(sample_ws):
    big = sample_ws / "sessions" / "console" / "huge.json"
    with open(big, "wb") as fh:
        fh.truncate(1024 ** 3)  # sparse: 1 GiB of NULs without using the disk
    run = run_cli("-w", str(sample_ws), "sessions", "list", "--json", timeout=30)
    row = next(r for r in run.json()["result"]["sessions"] if r["path"].endswith("huge.json"))
    assert row["health"] == "corrupt" and row["size"] == 1024 ** 3


def test_unknown_session_is_usage_error(sample_ws):
    run = invoke("-w", str(sample_ws), "sessions", "show", "no-such-session")
    assert run.code == 2 and "no session matches" in run.stderr


def test_usage_error_exit_2_without_traceback():
    run = run_cli("sessions", "list", "--sort")
    assert run.code == 2 and "Traceback" not in run.stderr


def test_bad_sort_and_since_are_usage_errors(sample_ws):
    assert invoke("-w", str(sample_ws), "sessions", "list", "--sort", "colour").code == 2
    assert invoke("-w", str(sample_ws), "sessions", "list", "--since", "yesterday-ish").code == 2


def test_debug_shows_traceback(tmp_path):
    run = run_cli("--debug", "-w", str(tmp_path / "nope"), "sessions", "list")
    assert run.code != 0 and "Traceback" in run.stderr
