"""Regressions found by adversarial QA of the merged commands (real files, real entry point, no mocks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import invoke
from repair_fixtures import TINY, make_workspace


def test_repair_never_reads_or_replaces_a_symlink_that_leaves_the_workspace(tmp_path):
    outside = tmp_path / "outside" / "s.json"
    outside.parent.mkdir()
    outside.write_bytes(b"\xef\xbb\xbf" + TINY.read_bytes())  # a BOM: repair would want to rewrite it
    root = make_workspace(tmp_path / "ws", {})
    (root / "sessions").mkdir(parents=True)
    link = root / "sessions" / "default_x.json"
    link.symlink_to(outside)
    for args in (("--check",), ("--all",), ("--all", "--dry-run")):
        run = invoke("-w", str(root), "sessions", "repair", *args, "--json")
        files = run.json()["result"]["files"]
        assert files[0]["status"] == "error" and "outside the workspace" in " ".join(files[0]["notes"])
        assert link.is_symlink() and outside.read_bytes().startswith(b"\xef\xbb\xbf")
    assert not (root / ".qwenmem" / "quarantine").exists() or not any((root / ".qwenmem" / "quarantine").rglob("*.json"))


DEEP = b'{"agent": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


def test_a_pathologically_nested_session_is_reported_corrupt_never_an_internal_error(tmp_path):
    root = make_workspace(tmp_path / "ws", {"default_deep.json": DEEP, "default_ok.json": TINY.read_bytes()})
    listing = invoke("-w", str(root), "sessions", "list", "--json")
    assert listing.code == 0, listing.stderr
    health = {s["key"]: s["health"] for s in listing.json()["result"]["sessions"]}
    assert health == {"default_deep": "corrupt", "default_ok": "ok"}
    show = invoke("-w", str(root), "sessions", "show", "default_deep")
    assert show.code == 1 and "internal error" not in show.stderr and "nothing can be salvaged" in show.stderr
    check = invoke("-w", str(root), "sessions", "repair", "--check", "--json")
    assert check.code == 1, check.stderr
    deep = [f for f in check.json()["result"]["files"] if f["key"] == "default_deep"][0]
    assert deep["status"] == "unrecoverable"
    before = (root / "sessions" / "default_deep.json").read_bytes()
    assert invoke("-w", str(root), "sessions", "repair", "--all").code == 1
    assert (root / "sessions" / "default_deep.json").read_bytes() == before
    compact = invoke("-w", str(root), "compact", "--check", "--all")
    assert compact.code in (0, 1) and "internal error" not in compact.stderr


def test_a_pathologically_nested_agent_json_is_a_config_error(tmp_path):
    root = make_workspace(tmp_path / "ws", {"default_ok.json": TINY.read_bytes()})
    (root / "agent.json").write_bytes(DEEP)
    run = invoke("-w", str(root), "info")
    assert run.code == 3 and "agent.json" in run.stderr and "internal error" not in run.stderr


def test_show_exits_the_same_with_and_without_json_when_nothing_can_be_salvaged(tmp_path):
    root = make_workspace(tmp_path / "ws", {"default_bin.json": b"\xff\xfe\x00garbage" * 50})
    plain = invoke("-w", str(root), "sessions", "show", "default_bin")
    as_json = invoke("-w", str(root), "sessions", "show", "default_bin", "--json")
    assert plain.code == 1
    assert as_json.code == plain.code and as_json.json()["status"] == "problems"


def test_an_agent_dir_given_directly_still_uses_its_qwenpaw_root_config(tmp_path):
    """`-w ~/.qwenpaw/workspaces/default` must read ~/.qwenpaw/config.json (user_timezone) like `-w ~/.qwenpaw`."""
    root = tmp_path / "qwenpaw"
    agent_dir = make_workspace(root / "workspaces" / "default", {"default_ok.json": TINY.read_bytes()})
    (root / "config.json").write_text(json.dumps({"user_timezone": "Pacific/Pago_Pago", "agents": {
        "active_agent": "default", "profiles": {"default": {"id": "default", "workspace_dir": str(agent_dir)}}}}))
    via_root = invoke("-w", str(root), "info", "--json").json()["result"]
    direct = invoke("-w", str(agent_dir), "info", "--json").json()["result"]
    assert direct["workspace"] == via_root["workspace"]
    assert direct["root"] == via_root["root"] == str(root.resolve())
    assert "Pacific/Pago_Pago" in json.dumps(direct["settings"])


def test_dream_warns_when_config_names_an_unknown_timezone(tmp_path):
    root = tmp_path / "qwenpaw"
    ws = root / "workspaces" / "default"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n## Facts\n- a\n")
    (root / "config.json").write_text(json.dumps({"user_timezone": "Asia/Shangai"}))
    run = invoke("-w", str(root), "dream", "--dry-run", "--json")
    assert run.code == 0
    assert any("Asia/Shangai" in w and "not a known timezone" in w for w in run.json()["warnings"])


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_demo_no_keep_removes_only_its_own_copy_never_the_into_directory(tmp_path):
    into = tmp_path / "my-notes"
    into.mkdir()
    (into / "precious.md").write_text("do not delete me")
    run = invoke("demo", "--into", str(into), "--no-keep")
    assert run.code == 0, run.stderr
    assert (into / "precious.md").read_text() == "do not delete me"
    assert not (into / "workspace").exists()


def test_a_fifo_named_like_a_session_or_memory_md_never_hangs_a_command(tmp_path):
    import os

    from helpers import run_cli

    root = make_workspace(tmp_path / "ws", {"default_ok.json": TINY.read_bytes()})
    os.mkfifo(root / "sessions" / "default_pipe.json")
    os.mkfifo(root / "MEMORY.md")
    check = run_cli("-w", str(root), "sessions", "repair", "--check", "--json", timeout=20)
    pipe = [f for f in check.json()["result"]["files"] if f["key"] == "default_pipe"][0]
    assert pipe["status"] == "error" and "not a regular file" in " ".join(pipe["notes"])
    dream = run_cli("-w", str(root), "dream", "--dry-run", timeout=20)
    assert dream.code == 3 and "not a regular file" in dream.stderr


def _immutable(path: Path) -> bool:
    """Make a directory or file immutable (root cannot write it either); False where chattr is unavailable."""
    import shutil
    import subprocess

    if not shutil.which("chattr"):
        return False
    return subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0


def _mutable(path: Path) -> None:
    import subprocess

    subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def test_unwritable_targets_give_one_line_errors_not_internal_errors(sample_ws):
    import pytest

    sessions = sample_ws / "sessions" / "console"
    memory_md = sample_ws / "MEMORY.md"
    if not _immutable(sessions):
        pytest.skip("chattr +i is not available here")
    try:
        before = {p.name: p.read_bytes() for p in sessions.iterdir()}
        compact = invoke("-w", str(sample_ws), "compact", "console/default_1764235442381", "--force",
                         "--summarizer", "extractive")
        assert compact.code == 3 and "internal error" not in compact.stderr and "cannot write" in compact.stderr
        assert {p.name: p.read_bytes() for p in sessions.iterdir()} == before
        several = invoke("-w", str(sample_ws), "compact", "--all", "--force", "--summarizer", "extractive", "--json")
        assert several.code == 1 and "internal error" not in several.stderr
        failed = [s for s in several.json()["result"]["sessions"] if s["status"] == "failed"]
        assert [s["key"] for s in failed] == ["console/default_1764235442381"]
    finally:
        _mutable(sessions)
    assert _immutable(memory_md)
    try:
        original = memory_md.read_bytes()
        dream = invoke("-w", str(sample_ws), "dream")
        assert dream.code == 3 and "internal error" not in dream.stderr and "cannot write" in dream.stderr
        assert memory_md.read_bytes() == original
    finally:
        _mutable(memory_md)


def test_repair_never_says_did_for_a_write_that_failed(sample_ws):
    import pytest

    telegram = sample_ws / "sessions" / "telegram"
    if not _immutable(telegram):
        pytest.skip("chattr +i is not available here")
    try:
        run = invoke("-w", str(sample_ws), "sessions", "repair", "--all")
    finally:
        _mutable(telegram)
    assert run.code == 1
    assert "did: rebuild" not in run.stdout and "not done: rebuild" in run.stdout and "could not write" in run.stdout


def test_list_since_an_absurdly_long_duration_lists_everything(sample_ws):
    run = invoke("-w", str(sample_ws), "sessions", "list", "--since", "99999999d", "--json")
    assert run.code == 0, run.stderr
    assert run.json()["result"]["count"] == invoke("-w", str(sample_ws), "sessions", "list", "--json").json()["result"]["count"]


def test_out_of_range_agent_json_values_fall_back_to_defaults_instead_of_crashing(sample_ws):
    (sample_ws / "agent.json").write_text(
        '{"running": {"light_context_config": {"token_count_estimate_divisor": 0,'
        ' "context_compact_config": {"compact_threshold_ratio": NaN, "reserve_threshold_ratio": -3}}}}')
    for args in (("info",), ("sessions", "list"), ("compact", "--check", "--all")):
        run = invoke("-w", str(sample_ws), *args)
        assert "internal error" not in run.stderr, (args, run.stderr)
        assert run.code in (0, 1)
    check = invoke("-w", str(sample_ws), "compact", "--check", "--all", "--json").json()["result"]["sessions"][0]
    assert check["budget"]["threshold"] == int(131072 * 0.8)


def test_a_provider_max_input_length_of_zero_is_ignored_like_qwenpaw_falls_back(tmp_path):
    ws = make_workspace(tmp_path / "ws", {"default_ok.json": TINY.read_bytes()})
    (ws / "agent.json").write_text('{"active_model": {"provider_id": "p", "model": "m"}}')
    providers = tmp_path / "ws.secret" / "providers" / "builtin"
    providers.mkdir(parents=True)
    (providers / "p.json").write_text('{"models": [{"id": "m", "max_input_length": 0}]}')
    run = invoke("-w", str(ws), "compact", "--check", "--all", "--json")
    assert run.code == 0, run.stderr
    assert run.json()["result"]["sessions"][0]["budget"]["max_input_length"] == 131072


def test_agent_ids_that_would_leave_the_workspaces_dir_are_refused(tmp_path):
    root = tmp_path / "qwenpaw"
    make_workspace(root / "workspaces" / "default", {"default_ok.json": TINY.read_bytes()})
    make_workspace(tmp_path / "elsewhere", {"default_ok.json": TINY.read_bytes()})
    for agent in ("../../elsewhere", str(tmp_path / "elsewhere"), ".."):
        run = invoke("-w", str(root), "--agent", agent, "sessions", "list")
        assert run.code == 2 and "plain name" in run.stderr, (agent, run.stderr)
    assert invoke("-w", str(root), "--agent", "default", "sessions", "list").code == 0


def test_dream_diff_of_a_file_without_final_newline_is_a_valid_patch(tmp_path):
    import shutil
    import subprocess

    import pytest

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    old = "# Memory\n\n## Facts\n- The sky is blue.\n- The sky is blue."
    (ws / "MEMORY.md").write_text(old)
    run = invoke("-w", str(ws), "dream", "--dry-run", "--date", "2026-11-30")
    assert run.code == 0
    assert "\\ No newline at end of file\n" in run.stdout
    assert "blue.dream" not in run.stdout and "blue.MEMORY" not in run.stdout
    if shutil.which("patch"):
        diff = run.stdout[:run.stdout.index("dream 2026-11-30")]
        copy = tmp_path / "MEMORY.md"
        copy.write_text(old)
        subprocess.run(["patch", "-s", str(copy)], input=diff, text=True, check=True)
        invoke("-w", str(ws), "dream", "--date", "2026-11-30")
        assert copy.read_text() == (ws / "MEMORY.md").read_text()
    else:  # pragma: no cover
        pytest.skip("patch is not installed")


def test_a_reader_that_goes_away_early_is_not_an_error(tmp_path):
    """`qwenmem sessions show BIG --full | head -1` must exit 0 (rich alone would exit 1), with nothing on stderr."""
    import os
    import subprocess
    import sys

    from helpers import REPO
    from repair_fixtures import WIKI

    ws = make_workspace(tmp_path / "ws", {WIKI.name: WIKI.read_bytes()})
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for args in (("sessions", "show", WIKI.stem, "--full"), ("sessions", "list")):
        proc = subprocess.Popen([sys.executable, "-m", "qwenmem", "-w", str(ws), *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)
        proc.stdout.read(10)
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 0, (args, err)
        assert b"Traceback" not in err and b"Exception ignored" not in err


def _dream_llm(ws: Path, server, *extra: str):
    return invoke("-w", str(ws), "dream", "--mode", "llm", "--llm-base-url", server.base_url, "--llm-model", "m",
                  "--llm-api-key", "k", "--log-file", str(ws / "dream.log"), *extra)


def test_dream_llm_reply_with_lone_surrogates_is_rejected_or_escaped_never_an_internal_error(tmp_path, llm_server):
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    old = "# Memory\n\n## Facts\n- The sky is blue.\n"
    (ws / "MEMORY.md").write_text(old)
    # 1. the rewrite itself holds a lone surrogate: rejected (exit 5), nothing written
    new = old + "- Emoji half \\ud83d here\n"
    bad_body = '{"memory_md": "' + new.replace("\n", "\\n") + '", "changes": [{"action": "added", "new": "- x", "reason": "r"}]}'
    llm_server.set_script([{"content": bad_body}])
    run = _dream_llm(ws, llm_server)
    assert run.code == 5 and "lone surrogate" in run.stderr, run.stderr
    assert (ws / "MEMORY.md").read_text() == old
    # 2. only a change reason holds one: MEMORY.md is written and the change log entry is still valid JSON
    good = old + "- Cats purr.\n"
    body = ('{"memory_md": "' + good.replace("\n", "\\n") + '", "changes": [{"action": "added", "new": "- Cats purr.",'
            ' "reason": "half an emoji \\ud83d"}]}')
    llm_server.set_script([{"content": body}])
    from helpers import run_cli

    run = run_cli("-w", str(ws), "dream", "--mode", "llm", "--llm-base-url", llm_server.base_url, "--llm-model", "m",
                  "--llm-api-key", "k", "--log-file", str(ws / "dream.log"))  # a real stdout: strict UTF-8
    assert run.code == 0, run.stderr
    assert "internal error" not in run.stderr
    assert (ws / "MEMORY.md").read_text() == good
    entries = [json.loads(line) for line in (ws / "backup" / "dream_changelog.jsonl").read_text().splitlines()]
    assert entries[-1]["changes"]


def test_show_a_session_with_lone_surrogates_prints_them_escaped_instead_of_crashing(tmp_path):
    from helpers import run_cli

    doc = json.loads(TINY.read_text())
    first = doc["agent"]["memory"]["content"][0][0]
    first["content"] = "half an emoji \ud83d"
    root = make_workspace(tmp_path / "ws", {"default_s.json": json.dumps(doc).encode()})  # ensure_ascii: \\ud83d
    text = run_cli("-w", str(root), "sessions", "show", "default_s")
    assert text.code == 0 and "internal error" not in text.stderr
    assert "half an emoji \\ud83d" in text.stdout
    as_json = run_cli("-w", str(root), "sessions", "show", "default_s", "--json")
    assert as_json.code == 0, as_json.stderr
    assert as_json.json()["result"]["messages"][0]["message"]["content"] == "half an emoji \ud83d"


def test_list_shows_modification_times_in_the_local_timezone(sample_ws):
    import os
    import time
    from datetime import datetime

    from helpers import run_cli

    target = sample_ws / "sessions" / "default_legacy_trip.json"
    stamp = datetime(2026, 11, 30, 3, 7).timestamp()  # whatever zone this runs in, shown back in TZ below
    os.utime(target, (stamp, stamp))
    env = {"TZ": "Asia/Shanghai"}
    run = run_cli("-w", str(sample_ws), "sessions", "list", env=env)
    os.environ["TZ"], old = "Asia/Shanghai", os.environ.get("TZ")
    time.tzset()
    try:
        expected = datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M")
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()
    row = [line for line in run.stdout.splitlines() if line.startswith("default_legacy_trip")][0]
    assert expected in row, (expected, row)


def test_an_unwritable_log_file_only_warns_after_a_successful_dream(sample_ws, tmp_path):
    run = invoke("-w", str(sample_ws), "dream", "-q", "--log-file", str(tmp_path))  # a directory
    assert run.code == 0 and "cannot write the log file" in run.stderr
    assert list((sample_ws / "backup").glob("memory_backup_*.md"))


def test_list_points_at_a_command_that_covers_a_damaged_backup_copy(tmp_path):
    from repair_fixtures import TRUNCATED_BACKUP as backup

    root = make_workspace(tmp_path / "ws", {backup.name: backup.read_bytes()})
    listing = invoke("-w", str(root), "sessions", "list")
    assert f"sessions repair {backup.name} --check" in listing.stderr
    hinted = invoke("-w", str(root), "sessions", "repair", backup.name, "--check", "--json")
    assert hinted.code == 1 and hinted.json()["result"]["files"][0]["classes"] == ["truncated"]


def test_odd_active_agent_values_in_config_json_never_crash_or_escape(tmp_path):
    root = tmp_path / "qwenpaw"
    make_workspace(root / "workspaces" / "default", {"default_ok.json": TINY.read_bytes()})
    for active in (["x"], {"a": 1}, "../../elsewhere", "gone"):
        (root / "config.json").write_text(json.dumps({"agents": {"active_agent": active}}))
        run = invoke("-w", str(root), "sessions", "list", "--json")
        assert run.code == 0, (active, run.stderr)
        assert run.json()["result"]["workspace"] == str((root / "workspaces" / "default").resolve()), active


def test_compact_never_writes_its_daily_note_through_a_memory_dir_that_leaves_the_workspace(sample_ws, tmp_path):
    import shutil

    outside = tmp_path / "notes"
    shutil.move(str(sample_ws / "memory"), outside)
    (sample_ws / "memory").symlink_to(outside)
    before = sorted(p.name for p in outside.iterdir())
    session = sample_ws / "sessions" / "console" / "default_1764235442381.json"
    original = session.read_bytes()
    args = ("-w", str(sample_ws), "compact", "console/default_1764235442381", "--force", "--reserve-ratio", "0.001",
            "--summarizer", "extractive")
    run = invoke(*args)
    assert run.code == 3 and "outside the workspace" in run.stderr and "--no-longterm" in run.stderr
    assert sorted(p.name for p in outside.iterdir()) == before and session.read_bytes() == original
    assert invoke(*args, "--no-longterm").code == 0
    assert sorted(p.name for p in outside.iterdir()) == before


def test_a_one_gigabyte_config_file_is_refused_without_reading_it(tmp_path):
    import resource

    root = make_workspace(tmp_path / "ws", {"default_ok.json": TINY.read_bytes()})
    with open(root / "chats.json", "wb") as fh:
        fh.truncate(1024 ** 3)  # sparse: costs no disk
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run = invoke("-w", str(root), "sessions", "list")
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert run.code == 3 and "chats.json" in run.stderr and "limit" in run.stderr
    assert grown_kb < 200 * 1024


def test_dream_llm_keeps_a_crlf_memory_md_crlf(tmp_path, llm_server):
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_bytes(b"---\r\nk: v\r\n---\r\n# Memory\r\n\r\n## Facts\r\n- The sky is blue.\r\n- Water is wet.\r\n")
    new = "# Memory\n\n## Facts\n- The sky is blue.\n- Water is wet.\n- Cats purr.\n"
    llm_server.set_script([{"content": json.dumps({"memory_md": new, "changes": [
        {"action": "added", "new": "- Cats purr.", "reason": "from the log"}]})}])
    dry = _dream_llm(ws, llm_server, "--dry-run")
    assert dry.code == 0, dry.stderr
    assert "-- The sky is blue." not in dry.stdout and "+- Cats purr." in dry.stdout  # only the real change
    run = _dream_llm(ws, llm_server)
    assert run.code == 0, run.stderr
    data = (ws / "MEMORY.md").read_bytes()
    assert data == b"---\r\nk: v\r\n---\r\n# Memory\r\n\r\n## Facts\r\n- The sky is blue.\r\n- Water is wet.\r\n- Cats purr.\r\n"


def test_channel_names_that_look_like_markup_are_shown_verbatim(tmp_path):
    root = make_workspace(tmp_path / "ws", {"we[b]chat/u_s.json": TINY.read_bytes()})
    listing = invoke("-w", str(root), "sessions", "list")
    assert listing.code == 0 and "we[b]chat  " in listing.stdout.splitlines()[1]
    show = invoke("-w", str(root), "sessions", "show", "we[b]chat/u_s")
    assert "channel we[b]chat," in show.stdout


def test_files_rewritten_by_root_keep_the_owner_qwenpaw_runs_as(sample_ws):
    import os

    import pytest

    if os.geteuid() != 0:
        pytest.skip("needs root (sudo qwenmem … on a user's workspace)")
    uid, gid = 4242, 4343
    for p in [sample_ws, *sample_ws.rglob("*")]:
        os.chown(p, uid, gid)
    session = sample_ws / "sessions" / "telegram" / "77_telegram--77.json"
    assert invoke("-w", str(sample_ws), "sessions", "repair", "--all").code == 0
    assert invoke("-w", str(sample_ws), "dream").code == 0
    assert invoke("-w", str(sample_ws), "compact", "console/default_1764235442381", "--force", "--reserve-ratio", "0.001",
                  "--summarizer", "extractive").code == 0
    for p in (session, sample_ws / "MEMORY.md", sample_ws / "sessions" / "console" / "default_1764235442381.json"):
        st = p.stat()
        assert (st.st_uid, st.st_gid) == (uid, gid), p
    assert (sample_ws / "dialog").stat().st_uid == uid
    for p in (sample_ws / "dialog").glob("*.jsonl"):  # new files QwenPaw appends to later
        assert p.stat().st_uid == uid, p


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_demo_stays_offline_even_when_an_llm_is_configured(tmp_path, llm_server):
    from helpers import run_cli

    env = {"QWENMEM_LLM_BASE_URL": llm_server.base_url, "QWENMEM_LLM_MODEL": "m", "QWENMEM_LLM_API_KEY": "k"}
    run = run_cli("demo", "--into", str(tmp_path / "d"), env=env)
    assert run.code == 0, run.stderr
    assert llm_server.chat_requests() == []


def test_a_malformed_llm_timeout_variable_is_a_usage_error(sample_ws):
    from helpers import run_cli

    for bad in ("abc", "-5", "nan"):
        env = {"QWENMEM_LLM_BASE_URL": "http://127.0.0.1:9/v1", "QWENMEM_LLM_MODEL": "m", "QWENMEM_LLM_TIMEOUT": bad}
        run = run_cli("-w", str(sample_ws), "dream", "--dry-run", env=env)
        assert run.code == 2 and "QWENMEM_LLM_TIMEOUT" in run.stderr and "internal error" not in run.stderr, run.stderr


def test_list_flags_a_toolkit_that_qwenpaw_cannot_load_like_repair_does(tmp_path):
    doc = json.loads(TINY.read_text())
    doc["agent"]["toolkit"] = {"active_groups": [], "extra": 1}
    root = make_workspace(tmp_path / "ws", {"default_tk.json": json.dumps(doc).encode()})
    row = invoke("-w", str(root), "sessions", "list", "--json").json()["result"]["sessions"][0]
    assert row["health"] == "warnings" and any("toolkit" in p for p in row["problems"])
    assert invoke("-w", str(root), "sessions", "repair", "--check").code == 1


def test_a_workspace_where_the_lock_cannot_be_created_gives_a_one_line_error(sample_ws):
    import pytest

    if not _immutable(sample_ws):
        pytest.skip("chattr +i is not available here")
    try:
        for args in (("sessions", "repair", "--all"), ("dream",), ("compact", "--all", "--summarizer", "extractive")):
            run = invoke("-w", str(sample_ws), *args)
            assert run.code == 3 and "cannot create the workspace lock" in run.stderr, (args, run.stderr)
    finally:
        _mutable(sample_ws)


def test_compact_never_glues_its_dialog_lines_onto_a_partial_last_line(sample_ws):
    dialog = sample_ws / "dialog"
    dialog.mkdir()
    partial = '{"id": "partial", "name": "u", "role": "user", "content": "cut of'
    (dialog / "2026-11-27.jsonl").write_text(partial)  # QwenPaw died mid-append
    run = invoke("-w", str(sample_ws), "compact", "console/default_1764235442381", "--force", "--reserve-ratio", "0.001",
                 "--summarizer", "extractive")
    assert run.code == 0 and "not found in dialog" not in run.stderr, run.stderr
    lines = (dialog / "2026-11-27.jsonl").read_text().splitlines()
    assert lines[0] == partial
    assert all(json.loads(line)["id"] for line in lines[1:]) and len(lines) > 1


def test_dream_changelog_append_starts_on_a_fresh_line_after_a_cut_one(sample_ws):
    backup = sample_ws / "backup"
    backup.mkdir()
    (backup / "dream_changelog.jsonl").write_text('{"version": 1, "kind": "dre')
    assert invoke("-w", str(sample_ws), "dream").code == 0
    lines = (backup / "dream_changelog.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["kind"] == "dream"
