"""`qwenmem snapshot`, `snapshot list`, `snapshot restore` through the real entry point: JSON keys, exit codes."""

from __future__ import annotations

from helpers import invoke, run_cli
from snapshot_fixtures import build_memory_tree, picture

from qwenmem.core.fsio import exclusive_lock

ENVELOPE = {"qwenmem_json", "command", "status", "result", "warnings", "errors"}
SNAPSHOT_INFO = {"id", "created", "reason", "root", "files", "dirs", "bytes", "added_bytes", "manifest", "skipped"}
# qwenmem_json 3: the warnings are in the envelope only
CREATE_RESULT = {"status", "snapshot", "same_as", "pruned", "objects_removed", "bytes_freed"}
RESTORE_RESULT = {"status", "restored_from", "undo_snapshot", "created", "replaced", "removed", "extra", "unchanged",
                  "pruned"}


def test_snapshot_list_restore_json_contract(tmp_path):
    ws = tmp_path / "ws"
    build_memory_tree(ws, 10)
    doc = invoke("-w", str(ws), "snapshot", "--json", "-m", "before dream").json()
    assert set(doc) == ENVELOPE and doc["command"] == "snapshot" and doc["status"] == "ok"
    assert set(doc["result"]) == CREATE_RESULT and set(doc["result"]["snapshot"]) == SNAPSHOT_INFO
    first = doc["result"]["snapshot"]["id"]
    listed = invoke("-w", str(ws), "snapshot", "list", "--json").json()
    assert listed["command"] == "snapshot list"
    assert set(listed["result"]) == {"directory", "count", "snapshots", "damaged"}
    assert [s["id"] for s in listed["result"]["snapshots"]] == [first]
    assert listed["result"]["snapshots"][0]["reason"] == "before dream"
    original = picture(ws)
    (ws / "MEMORY.md").write_text("oops\n")
    doc = invoke("-w", str(ws), "snapshot", "restore", first[:12], "--json").json()
    assert doc["command"] == "snapshot restore" and set(doc["result"]) == RESTORE_RESULT
    assert doc["result"]["status"] == "restored" and doc["result"]["replaced"] == ["MEMORY.md"]
    assert picture(ws) == original
    again = invoke("-w", str(ws), "snapshot", "restore", "--json").json()  # the newest is the undo point
    assert again["result"]["restored_from"] == doc["result"]["undo_snapshot"]
    assert (ws / "MEMORY.md").read_text() == "oops\n"


def test_human_output_dry_run_and_quiet(tmp_path):
    ws = tmp_path / "ws"
    build_memory_tree(ws, 5)
    run = invoke("-w", str(ws), "snapshot", "--dry-run")
    assert run.code == 0 and run.stdout.startswith("would take snapshot ") and not (ws / ".qwenmem").exists()
    assert invoke("-w", str(ws), "snapshot", "--quiet").stdout == ""
    run = invoke("-w", str(ws), "snapshot")
    assert "same content as snapshot" in run.stdout
    listing = invoke("-w", str(ws), "snapshot", "list")
    assert listing.code == 0 and len(listing.stdout.strip().splitlines()) == 3  # header + 2
    (ws / "digest" / "personal" / "tea.md").write_text("")
    run = invoke("-w", str(ws), "snapshot", "restore", "--dry-run")
    assert "would restore" in run.stdout and "digest/personal/tea.md" in run.stdout
    assert (ws / "digest" / "personal" / "tea.md").read_text() == ""


def test_exit_codes_unknown_busy_and_bad_path(tmp_path):
    ws = tmp_path / "ws"
    build_memory_tree(ws, 3)
    run = invoke("-w", str(ws), "snapshot", "restore")
    assert run.code == 2 and "no snapshots" in run.stderr and "Traceback" not in run.stderr
    invoke("-w", str(ws), "snapshot")
    run = invoke("-w", str(ws), "snapshot", "restore", "19990101")
    assert run.code == 2 and "no snapshot '19990101'" in run.stderr
    run = invoke("-w", str(ws), "snapshot", "restore", "--path", "../x")
    assert run.code == 2
    with exclusive_lock(ws / ".qwenmem" / "lock"):
        run = invoke("-w", str(ws), "snapshot", "--json")
    assert run.code == 4 and run.json()["errors"][0]["code"] == "busy"


def test_cron_line_in_the_readme_runs(tmp_path):
    """The README's cron line, as a real subprocess, on a QwenPaw root (config.json + workspaces/default)."""
    from helpers import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    line = next(ln for ln in readme.splitlines() if "qwenmem -w $HOME/.qwenpaw snapshot" in ln)
    assert line.split()[5].startswith("$HOME/"), "the cron line names qwenmem by its absolute path"
    args = line.split("bin/qwenmem", 1)[1].split()
    root = tmp_path / "home" / ".qwenpaw"
    build_memory_tree(root / "workspaces" / "default", 4)
    (root / "config.json").write_text("{}")
    argv = [a.replace("$HOME", str(tmp_path / "home")) for a in args]
    run = run_cli(*argv)
    assert run.code == 0 and run.stdout == "", run.stderr
    assert list((root / "workspaces" / "default" / ".qwenmem" / "snapshots").glob("*.json"))
