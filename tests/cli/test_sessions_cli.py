"""`sessions list` filters and sorting, `sessions show` rendering options, `demo`, and the read-only promise."""

import os
import time

from helpers import SAMPLE, invoke, run_cli


def keys(run):
    return [r["key"] for r in run.json()["result"]["sessions"]]


def test_list_filters_and_sorting(sample_ws):
    w = str(sample_ws)
    assert keys(invoke("-w", w, "sessions", "list", "--channel", "discord", "--json")) == ["discord/4821_discord--dm--4821"]
    assert keys(invoke("-w", w, "sessions", "list", "--user", "77", "--json")) == ["telegram/77_telegram--77"]
    by_name = keys(invoke("-w", w, "sessions", "list", "--sort", "name", "--json"))
    assert by_name == sorted(by_name)
    by_msgs = invoke("-w", w, "sessions", "list", "--sort", "messages", "--json").json()["result"]["sessions"]
    assert [r["messages"] for r in by_msgs] == sorted((r["messages"] for r in by_msgs), reverse=True)
    assert len(keys(invoke("-w", w, "sessions", "list", "--limit", "2", "--json"))) == 2


def test_since_filters_by_modification_time(sample_ws):
    old = time.time() - 30 * 86400
    for p in (sample_ws / "sessions").rglob("*.json"):
        os.utime(p, (old, old))
    fresh = sample_ws / "sessions" / "console" / "default_1764235442381.json"
    os.utime(fresh, None)
    assert keys(invoke("-w", str(sample_ws), "sessions", "list", "--since", "7d", "--json")) == [
        "console/default_1764235442381"]


def test_list_tokens_with_real_tokenizers(sample_ws):
    est = invoke("-w", str(sample_ws), "sessions", "list", "--sort", "name", "--json").json()["result"]
    o200 = invoke("-w", str(sample_ws), "sessions", "list", "--sort", "name", "--tokenizer", "o200k", "--json").json()["result"]
    assert est["tokenizer"].startswith("estimate") and o200["tokenizer"] == "o200k"
    assert [r["key"] for r in est["sessions"]] == [r["key"] for r in o200["sessions"]]
    assert any(a["tokens"] != b["tokens"] for a, b in zip(est["sessions"], o200["sessions"]))


def test_show_options(sample_ws):
    w = str(sample_ws)
    plain = invoke("-w", w, "sessions", "show", "console/default_1764235442381")
    assert "execute_shell_command" in plain.stdout and "tail -n 50 deploy.log" in plain.stdout
    assert "more characters; --full shows all" in plain.stdout  # long tool result shortened
    assert "I should look at the deploy log first." not in plain.stdout  # thinking collapsed
    full = invoke("-w", w, "sessions", "show", "console/default_1764235442381", "--full", "--thinking")
    assert "(attempt 59)" in full.stdout and "I should look at the deploy log first." in full.stdout
    tail = invoke("-w", w, "sessions", "show", "console/default_1764235442381", "--tail", "1", "--json").json()["result"]
    assert [m["index"] for m in tail["messages"]] == [7]
    users = invoke("-w", w, "sessions", "show", "discord:dm:4821", "--role", "user", "--json").json()["result"]
    assert {m["message"]["role"] for m in users["messages"]} == {"user"} and len(users["messages"]) == 2


def test_show_summary_and_compressed_marks(sample_ws):
    run = invoke("-w", str(sample_ws), "sessions", "show", "default_legacy_trip")
    assert "compressed summary" in run.stdout and "Berlin trip" in run.stdout
    assert "[compressed]" in run.stdout
    hidden = invoke("-w", str(sample_ws), "sessions", "show", "default_legacy_trip", "--no-compressed", "--json")
    assert [m["index"] for m in hidden.json()["result"]["messages"]] == [2]


def test_list_and_show_never_modify_anything(sample_ws):
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in sample_ws.rglob("*") if p.is_file()}
    invoke("-w", str(sample_ws), "sessions", "list")
    invoke("-w", str(sample_ws), "sessions", "show", "telegram/77_telegram--77")
    invoke("-w", str(sample_ws), "info")
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in sample_ws.rglob("*") if p.is_file()}
    assert before == after and not (sample_ws / ".qwenmem").exists()


def test_console_entry_point_and_version():
    run = run_cli("--version")
    assert run.code == 0 and run.stdout.startswith("qwenmem ")


def test_every_command_has_help_with_examples():
    import typer.main

    from qwenmem.cli.app import app

    root = typer.main.get_command(app)
    for name, cmd in root.commands.items():
        subs = getattr(cmd, "commands", None)
        for leaf in (subs.values() if subs else [cmd]):
            assert leaf.help and "Examples" in leaf.help, f"{name} {leaf.name} has no examples in its help"


def test_demo_runs_offline_on_a_copy(tmp_path):
    before = {p: p.read_bytes() for p in SAMPLE.rglob("*") if p.is_file()}
    run = run_cli("demo", "--keep", "--into", str(tmp_path), timeout=600)
    assert run.code == 0, run.stderr[-2000:]
    assert "sessions list" in run.stdout and "corrupt" in run.stdout
    assert {p: p.read_bytes() for p in SAMPLE.rglob("*") if p.is_file()} == before  # the bundled sample is untouched
    assert (tmp_path / "workspace" / "sessions").is_dir()
