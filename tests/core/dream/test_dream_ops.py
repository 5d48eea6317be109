"""Operations around a dream: restore, pruning, the lock, cron output, time zones, and refusing unsafe input."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from zoneinfo import ZoneInfo

from helpers import invoke, run_cli
from dream_fixtures import tree
from qwenmem.core.dream import backups
from qwenmem.core.fsio import exclusive_lock
from qwenmem.core.workspace import discover_workspace


def _dream(ws, *args):
    return invoke("dream", "-w", str(ws), "--mode", "deterministic", *args)


def test_restore_brings_back_the_newest_backup_and_backs_up_first(sample_ws):
    original = (sample_ws / "MEMORY.md").read_bytes()
    assert _dream(sample_ws, "--date", "2026-11-26").code == 0
    dreamt = (sample_ws / "MEMORY.md").read_bytes()
    assert dreamt != original
    run = invoke("dream", "-w", str(sample_ws), "--restore", "--json")
    assert run.code == 0, run.stderr
    result = run.json()["result"]
    assert (sample_ws / "MEMORY.md").read_bytes() == original
    assert (sample_ws / result["backup"]).read_bytes() == dreamt, "the restore backed up what it replaced"
    entries = [json.loads(x) for x in (sample_ws / "backup" / "dream_changelog.jsonl").read_text().splitlines()]
    assert [e["kind"] for e in entries] == ["dream", "restore"]
    assert entries[1]["sha256_after"] == entries[0]["sha256_before"]


def test_restore_a_named_backup_and_refuse_paths_outside_backup(sample_ws, tmp_path):
    assert _dream(sample_ws, "--date", "2026-11-26").code == 0
    name = backups.list_backups(discover_workspace(sample_ws))[0].name
    (sample_ws / "MEMORY.md").write_text("# scratch\n", encoding="utf-8")
    assert invoke("dream", "-w", str(sample_ws), "--restore", name).code == 0
    assert "Staging Postgres" in (sample_ws / "MEMORY.md").read_text(encoding="utf-8")
    outside = tmp_path / "evil.md"
    outside.write_text("# evil\n", encoding="utf-8")
    for bad in (str(outside), "../agent.json", "../../evil.md"):
        run = invoke("dream", "-w", str(sample_ws), "--restore", bad)
        assert run.code == 2, bad
    assert "evil" not in (sample_ws / "MEMORY.md").read_text(encoding="utf-8")
    missing = invoke("dream", "-w", str(sample_ws), "--restore", "memory_backup_19990101_000000.md")
    assert missing.code == 2 and "not found" in missing.stderr


def test_restore_with_no_backups_is_a_clear_error(sample_ws):
    run = invoke("dream", "-w", str(sample_ws), "--restore")
    assert run.code == 2 and "no MEMORY.md backups" in run.stderr


def test_backup_names_never_collide(sample_ws):
    ws = discover_workspace(sample_ws)
    stamp = datetime(2026, 11, 30, 23, 0, 0)
    first = backups.create_backup(ws, b"one", stamp)
    second = backups.create_backup(ws, b"two", stamp)
    assert first.name == "memory_backup_20261130_230000.md" and second.name == "memory_backup_20261130_230000_1.md"
    assert first.read_bytes() == b"one" and second.read_bytes() == b"two"


def _old_backup(ws, when: datetime, data: bytes) -> str:
    path = backups.create_backup(ws, data, when)
    os.utime(path, (when.timestamp(), when.timestamp()))
    return path.name


def test_keep_prunes_only_the_oldest_memory_backups(sample_ws):
    ws = discover_workspace(sample_ws)
    _old_backup(ws, datetime(2020, 1, 1), b"oldest")
    _old_backup(ws, datetime(2021, 1, 1), b"older")
    kept = _old_backup(ws, datetime(2021, 1, 1), b"old")
    (ws.backup_dir / "notes.txt").write_text("user's own file", encoding="utf-8")
    run = _dream(sample_ws, "--date", "2026-11-26", "--keep", "2", "--json")
    assert run.code == 0
    newest = run.json()["result"]["backup"].split("/")[-1]
    assert sorted(p.name for p in ws.backup_dir.iterdir()) == sorted(["dream_changelog.jsonl", "notes.txt", newest, kept])
    assert len(run.json()["result"]["pruned"]) == 2


def test_a_backup_named_in_the_future_never_gets_the_new_backup_pruned(sample_ws):
    ws = discover_workspace(sample_ws)
    future = backups.create_backup(ws, b"named after a zone change", datetime(2099, 1, 1))
    run = _dream(sample_ws, "--date", "2026-11-26", "--keep", "1", "--json")
    newest = run.json()["result"]["backup"].split("/")[-1]
    assert [b.name for b in backups.list_backups(ws)] == [newest]
    assert not future.exists()


def test_keep_one_never_prunes_the_newest(sample_ws):
    ws = discover_workspace(sample_ws)
    backups.create_backup(ws, b"old", datetime(2020, 1, 1))
    assert backups.prune_backups(ws, 0) == []  # 0 is treated as 1
    assert [b.name for b in backups.list_backups(ws)] == ["memory_backup_20200101_000000.md"]


def test_overlapping_run_exits_4_with_one_line_and_writes_nothing(sample_ws):
    before = tree(sample_ws)
    ws = discover_workspace(sample_ws)
    with exclusive_lock(ws.lock_path):
        run = run_cli("dream", "-w", str(sample_ws), "--mode", "deterministic", "--date", "2026-11-26")
    assert run.code == 4
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and "lock" in run.stderr
    assert tree(sample_ws) == before


def test_memory_changed_while_the_llm_thinks_is_refused(sample_ws, llm_server):
    memory = sample_ws / "MEMORY.md"

    def qwenpaw_writes_meanwhile(request):
        memory.write_text(memory.read_text(encoding="utf-8") + "- written by QwenPaw\n", encoding="utf-8")
        return json.dumps({"memory_md": "# Long-Term Memory\n", "changes": []})

    llm_server.set_script([{"content": qwenpaw_writes_meanwhile}])
    run = invoke("dream", "-w", str(sample_ws), "--llm-base-url", llm_server.base_url, "--llm-model", "m",
                 "--allow-shrink", "--max-shrink", "1")
    assert run.code in (4, 5), run.stderr
    assert memory.read_text(encoding="utf-8").endswith("- written by QwenPaw\n")


def test_concurrent_change_after_planning_exits_4(sample_ws, llm_server):
    memory = sample_ws / "MEMORY.md"
    body = memory.read_text(encoding="utf-8").split("---\n", 2)[2]
    good = body.replace("- Staging Postgres runs on 10.0.3.7:5432 behind pgbouncer.\n", "", 1)

    def qwenpaw_writes_meanwhile(request):
        memory.write_text(memory.read_text(encoding="utf-8") + "- written by QwenPaw\n", encoding="utf-8")
        return json.dumps({"memory_md": good, "changes": []})

    llm_server.set_script([{"content": qwenpaw_writes_meanwhile}])
    run = invoke("dream", "-w", str(sample_ws), "--llm-base-url", llm_server.base_url, "--llm-model", "m")
    assert run.code == 4 and "changed on disk" in run.stderr
    assert memory.read_text(encoding="utf-8").endswith("- written by QwenPaw\n")


def test_quiet_prints_nothing_and_log_file_gets_the_summary(sample_ws, tmp_path):
    log = tmp_path / "logs" / "dream.log"
    run = _dream(sample_ws, "--date", "2026-11-26", "--quiet", "--log-file", str(log))
    assert run.code == 0 and run.stdout == "" and run.stderr == ""
    text = log.read_text(encoding="utf-8")
    assert "dream 2026-11-26 (deterministic): MEMORY.md updated" in text and "backup: backup/memory_backup_" in text
    held = discover_workspace(sample_ws)
    with exclusive_lock(held.lock_path):
        busy = run_cli("dream", "-w", str(sample_ws), "--quiet", "--log-file", str(log))
    assert busy.code == 4
    assert "error: another qwenmem process holds" in log.read_text(encoding="utf-8").splitlines()[-1]


def test_default_date_and_backup_stamp_follow_tz(sample_ws):
    for zone in ("Pacific/Kiritimati", "Etc/GMT+12"):
        run = run_cli("dream", "-w", str(sample_ws), "--mode", "deterministic", "--dry-run", "--json",
                      env={"TZ": zone})
        assert run.code == 0, run.stderr
        assert run.json()["result"]["date"] == datetime.now(ZoneInfo(zone)).date().isoformat()
    run = run_cli("dream", "-w", str(sample_ws), "--mode", "deterministic", "--dry-run", "--json", "--date",
                  "yesterday", env={"TZ": "Etc/GMT+12"})
    yesterday = datetime.now(ZoneInfo("Etc/GMT+12")).date().toordinal() - 1
    assert run.json()["result"]["date"] == datetime.fromordinal(yesterday).date().isoformat()
    run = run_cli("dream", "-w", str(sample_ws), "--mode", "deterministic", "--json", "--date", "2026-11-26",
                  env={"TZ": "Pacific/Kiritimati"})
    stamp = re.search(r"memory_backup_(\d{8}_\d{6})", run.json()["result"]["backup"]).group(1)
    taken = datetime.strptime(stamp, "%Y%m%d_%H%M%S").replace(tzinfo=ZoneInfo("Pacific/Kiritimati"))
    assert abs((datetime.now(ZoneInfo("UTC")) - taken).total_seconds()) < 120


def test_config_json_user_timezone_beats_tz(tmp_path, sample_ws):
    root = tmp_path / "root"
    (root / "workspaces").mkdir(parents=True)
    sample_ws.rename(root / "workspaces" / "default")
    (root / "config.json").write_text(json.dumps({"user_timezone": "Pacific/Kiritimati"}), encoding="utf-8")
    run = run_cli("dream", "-w", str(root), "--mode", "deterministic", "--dry-run", "--json", env={"TZ": "Etc/GMT+12"})
    assert run.code == 0, run.stderr
    assert run.json()["result"]["date"] == datetime.now(ZoneInfo("Pacific/Kiritimati")).date().isoformat()


def test_bad_input_gets_one_line_errors(sample_ws):
    for args, code, text in ((("--date", "2026-13-45"), 2, "not a real calendar date"),
                             (("--date", "last-week"), 2, "expected YYYY-MM-DD"),
                             (("--promote", "everything"), 2, "--promote"),
                             (("stray-arg",), 2, "only taken with --restore")):
        run = _dream(sample_ws, *args)
        assert run.code == code and text in run.stderr, (args, run.stderr)
    (sample_ws / "MEMORY.md").write_bytes(b"# M\n- caf\xe9\n")
    run = _dream(sample_ws)
    assert run.code == 3 and "not valid UTF-8" in run.stderr
    assert (sample_ws / "MEMORY.md").read_bytes() == b"# M\n- caf\xe9\n"


def test_nothing_to_do_exits_0_without_backup(tmp_path):
    ws = tmp_path / "empty"
    (ws / "memory").mkdir(parents=True)
    run = invoke("dream", "-w", str(ws), "--mode", "deterministic")
    assert run.code == 0
    assert not (ws / "MEMORY.md").exists() and not (ws / "backup").exists()


def test_list_backups_shows_backups_and_recent_dreams(sample_ws):
    assert _dream(sample_ws, "--date", "2026-11-26").code == 0
    run = invoke("dream", "-w", str(sample_ws), "--list-backups", "--json")
    result = run.json()["result"]
    assert len(result["backups"]) == 1 and result["recent"][0]["kind"] == "dream"


def test_a_changelog_line_that_is_not_an_object_is_skipped_not_a_traceback(sample_ws):
    assert _dream(sample_ws, "--date", "2026-11-26").code == 0
    log = sample_ws / "backup" / "dream_changelog.jsonl"
    log.write_text(log.read_text() + '3\n["a list"]\n"text"\nnull\n')  # valid JSON, but no entry
    run = invoke("dream", "-w", str(sample_ws), "--list-backups", "--json")
    assert run.code == 0, run.stderr
    assert [e["kind"] for e in run.json()["result"]["recent"]] == ["dream"]
    doctor = invoke("-w", str(sample_ws), "doctor", "--json")
    assert "Traceback" not in doctor.stderr
    dream_health = doctor.json()["result"]["agents"][0]["dream"]
    assert dream_health["runs"] == 1 and dream_health["last_kind"] == "dream"


def test_bom_is_kept(sample_ws):
    memory = sample_ws / "MEMORY.md"
    memory.write_bytes(b"\xef\xbb\xbf# M\n\n## A\n- same line here\n- same line here\n")
    assert _dream(sample_ws).code == 0
    assert memory.read_bytes() == b"\xef\xbb\xbf# M\n\n## A\n- same line here\n"


def test_symlinked_memory_md_stays_a_symlink(sample_ws, tmp_path):
    notes = sample_ws / "notes"  # inside the workspace: a link leading out is refused (tests/contract/test_security_links.py)
    notes.mkdir()
    target = notes / "MEMORY.md"
    target.write_text("# M\n\n## A\n- same line here\n- same line here\n", encoding="utf-8")
    (sample_ws / "MEMORY.md").unlink()
    (sample_ws / "MEMORY.md").symlink_to(target)
    assert _dream(sample_ws).code == 0
    assert (sample_ws / "MEMORY.md").is_symlink()
    assert target.read_text(encoding="utf-8") == "# M\n\n## A\n- same line here\n"


def test_secret_looking_log_entries_are_never_promoted(sample_ws):
    (sample_ws / "memory" / "2026-11-29.md").write_text(
        "# 2026-11-29\n\n## Facts\n- The OpenAI key is sk-proj-AbCdEfGhIjKlMnOpQrStUv12\n"
        "- The nightly report goes to the ops channel.\n", encoding="utf-8")
    run = _dream(sample_ws, "--date", "2026-11-29", "--json")
    text = (sample_ws / "MEMORY.md").read_text(encoding="utf-8")
    assert "sk-proj" not in text and "- The nightly report goes to the ops channel." in text
    assert any("secret-looking" in s for s in run.json()["result"]["skipped"])
