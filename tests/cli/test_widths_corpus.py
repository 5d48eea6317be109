"""80- and 120-column captures of the real corpus (copies of real 1.x workspaces and of the generated QwenPaw 2.2.2
root): nothing wider than the screen, no padding past a table's last column, CJK wrapped without kinsoku
violations, no spec section numbers, and a pipe into a pane as wide as the pane (issue 26)."""

import fcntl
import os
import pty
import shutil
import struct
import subprocess
import sys
import termios

import pytest

from helpers import CORPUS_REAL, REPO, corpus_params, invoke, run_cli
from qwen_widths import kinsoku_violations
from qwenmem.cli.tables import width_of
from qwenpaw2_support import GEN2_WS, copy_corpus, needs_gen2_corpus

REAL = ["jownda__llm-wiki-builder__276e7d8", "DrifterM__swqhyjs__fda458a", "ziwei-control__ai_no1_ruyi__4696ca7",
        "White-147__MiLu_HTML__9ceae3c", "zzjmay123__aiWorkflow__c70a43d"]
LONG_KEY = "ou_cb6f9ef3a36728dd68951e29d1bf9a00_d1bf9a00"
COMMANDS = [("sessions", "list"), ("compact", "--check", "--all"), ("sessions", "repair", "--check"), ("info",),
            ("doctor",)]


def _real_copy(name, tmp_path):
    dest = tmp_path / name
    shutil.copytree(CORPUS_REAL / name, dest)
    return dest / "workspaces" / "default" if (dest / "workspaces").is_dir() else dest


def _captures(ws, width, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(width))
    keys = [r["key"] for r in invoke("-w", str(ws), "sessions", "list", "--json").json()["result"]["sessions"]]
    runs = {args: invoke("--no-pager", "-w", str(ws), *args) for args in COMMANDS}
    for key in keys[:2]:
        runs[("sessions", "show", key)] = invoke("--no-pager", "-w", str(ws), "sessions", "show", key)
    return runs


def _check(runs, width):
    for args, run in runs.items():
        assert run.code in (0, 1), (args, run.stderr)
        lines = run.stdout.splitlines()
        too_wide = [line for line in lines if width_of(line) > width]
        assert too_wide == [], (args, too_wide[:3])
        padded = [line for line in lines if line != line.rstrip()]
        assert padded == [], (args, padded[:3])
        assert kinsoku_violations(lines) == [], args
        assert "spec §" not in run.stdout + run.stderr, args


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("name", corpus_params(REAL))
def test_real_1x_workspaces_at_80_and_120_columns(name, width, tmp_path, monkeypatch):
    _check(_captures(_real_copy(name, tmp_path), width, monkeypatch), width)


@needs_gen2_corpus
@pytest.mark.parametrize("width", [80, 120])
def test_the_generated_2x_root_at_80_and_120_columns(width, tmp_path, monkeypatch):
    ws = copy_corpus(tmp_path)
    runs = _captures(ws, width, monkeypatch)
    runs[("sessions", "show", "--history")] = invoke("--no-pager", "-w", str(ws), "sessions", "show", "console:alice",
                                                     "--history")
    _check(runs, width)
    listing = runs[("sessions", "list")].stdout
    assert "console/alice_console--alice" in listing  # the redundant channel/user columns went first
    assert GEN2_WS.is_dir()


@pytest.mark.parametrize("name", corpus_params(["jownda__llm-wiki-builder__276e7d8"]))
def test_at_80_columns_the_redundant_columns_go_before_a_key_is_shortened(name, tmp_path, monkeypatch):
    ws = _real_copy(name, tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    table = invoke("-w", str(ws), "sessions", "list").stdout
    assert LONG_KEY in table and "…" not in table, table  # whole, where it was `ou_cb6f9ef3a367…bf9a00_d1bf9a00`
    header = table.splitlines()[0].split()
    assert "channel" not in header and "user" not in header and "tokens" in header
    monkeypatch.setenv("COLUMNS", "200")
    assert "channel" in invoke("-w", str(ws), "sessions", "list").stdout.splitlines()[0]  # room: they come back


@pytest.mark.parametrize("name", corpus_params(["DrifterM__swqhyjs__fda458a"]))
def test_a_piped_table_with_no_terminal_is_not_padded(name, tmp_path):
    ws = _real_copy(name, tmp_path)
    run = run_cli("-w", str(ws), "sessions", "list", env={"COLUMNS": ""})
    assert run.code == 0 and run.stdout
    assert [line for line in run.stdout.splitlines() if line != line.rstrip()] == []


def _pane(columns: int) -> tuple[int, int]:
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    return leader, follower


@needs_gen2_corpus
def test_a_table_piped_in_a_120_column_pane_fits_the_pane(tmp_path):
    """`qwenmem sessions list | cat` in a 120-column pane: stdout is a pipe, stderr the pane's terminal."""
    ws = copy_corpus(tmp_path)
    leader, follower = _pane(120)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = str(REPO)
    try:
        proc = subprocess.run([sys.executable, "-m", "qwenmem", "-w", str(ws), "sessions", "list"],
                              stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL, env=env, timeout=120)
    finally:
        os.close(follower)
        os.close(leader)
    lines = proc.stdout.decode().splitlines()
    assert proc.returncode == 0 and len(lines) > 3
    assert max(width_of(line) for line in lines) <= 120, lines[:2]


@needs_gen2_corpus
def test_warnings_on_a_terminal_break_between_words_with_a_hanging_indent(tmp_path):
    ws = copy_corpus(tmp_path)
    leader, follower = _pane(60)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = str(REPO)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "qwenmem", "-w", str(ws), "sessions", "list"],
                                stdout=subprocess.DEVNULL, stderr=follower, stdin=subprocess.DEVNULL, env=env)
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=120)
    finally:
        os.close(leader)
    lines = [line for line in b"".join(chunks).decode().replace("\r", "").splitlines() if line]
    assert any(line.startswith("warning:") for line in lines), lines
    assert all(width_of(line) < 60 for line in lines), lines
    continued = [line for line in lines if not line.startswith("warning:")]
    assert continued and all(line.startswith("  ") for line in continued), lines
    words = " ".join(line.strip() for line in lines).split()
    assert "details" in words and "--check`" in words  # no word cut at the edge


@pytest.mark.parametrize("name", corpus_params(["DrifterM__swqhyjs__fda458a"]))
def test_written_to_a_file_panels_are_80_columns_not_240(name, tmp_path):
    ws = _real_copy(name, tmp_path)
    run = run_cli("--no-pager", "-w", str(ws), "sessions", "show", "default_1773379549580", env={"COLUMNS": ""})
    assert run.code == 0, run.stderr
    panel = [line for line in run.stdout.splitlines() if line.startswith(("╭", "│", "╰"))]
    assert panel and max(width_of(line) for line in panel) == 80
    assert kinsoku_violations(panel) == []


def test_with_the_pager_the_repair_summary_comes_after_the_table(sample_ws, tmp_path):
    """stdout and stderr on one terminal, as a person sees them: the pager shows the table, then the summary."""
    leader, follower = _pane(100)
    env = dict(os.environ, PYTHONPATH=str(REPO), PAGER="cat", LINES="4", COLUMNS="100")
    try:
        proc = subprocess.Popen([sys.executable, "-m", "qwenmem", "-w", str(sample_ws), "sessions", "repair",
                                 "--check"], stdout=follower, stderr=follower, stdin=subprocess.DEVNULL, env=env)
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=120)
    finally:
        os.close(leader)
    screen = b"".join(chunks).decode().replace("\r", "")
    assert proc.returncode == 1, screen
    table, summary = screen.find("session "), screen.find("file(s):")
    assert 0 <= table < summary, screen
