"""Output for people: tables that fit the terminal, TSV for programs, colour rules, the pager, verbatim examples."""

import os
import pty
import re
import subprocess
import sys

import pytest

from helpers import REPO, run_cli
from qwenmem.cli.tables import Cell, Column, Kind, fit, shorten_middle, width_of

ANSI = re.compile(r"\x1b\[[0-9;]*m")
LONG_KEY = "ou_cb6f9ef3a36728dd68951e29d1bf9a00_d1bf9a00"


def test_shorten_middle_keeps_both_ends_and_the_width():
    short = shorten_middle(LONG_KEY, 20)
    assert short == "ou_cb6f9ef…_d1bf9a00" and width_of(short) == 20
    assert shorten_middle("default_1", 20) == "default_1"
    wide = shorten_middle("数据库连接超时的会话记录", 9)  # CJK characters are two cells wide
    assert width_of(wide) <= 9 and wide.startswith("数据") and wide.endswith("记录")


def test_fit_drops_size_and_modified_before_shortening_names_and_never_shortens_numbers():
    cols = [Column("session", Kind.KEY), Column("tokens", Kind.NUMBER), Column("size", Kind.NUMBER, drop=1),
            Column("modified", Kind.TEXT, drop=2), Column("health", Kind.LABEL)]
    rows = [[Cell(LONG_KEY), Cell("31,265"), Cell("125.6 KB"), Cell("2026-12-01 11:24"), Cell("warnings")]]
    roomy = fit(cols, rows, 120)
    assert roomy.columns == [0, 1, 2, 3, 4] and roomy.widths[0] == len(LONG_KEY)
    just = fit(cols, rows, len(LONG_KEY) + 2 + 6 + 2 + 8)  # room for the name, the number and the label only
    assert just.columns == [0, 1, 4] and just.widths[0] == len(LONG_KEY)
    narrow = fit(cols, rows, 40)
    assert narrow.columns == [0, 1, 4] and narrow.widths[1] == 6 and narrow.widths[4] == 8
    assert sum(narrow.widths[i] for i in narrow.columns) + 2 * 2 == 40


def _corpus_like_workspace(sample_ws):
    """The sample plus a session with a real-world long Feishu-style name."""
    src = sample_ws / "sessions" / "console" / "default_1764235442381.json"
    (sample_ws / "sessions" / "console" / f"{LONG_KEY}.json").write_bytes(src.read_bytes())
    return sample_ws


@pytest.mark.parametrize("args", [("sessions", "list"), ("compact", "--check", "--all"),
                                  ("sessions", "repair", "--check")])
def test_tables_fit_80_columns_and_keep_names_and_numbers(sample_ws, args):
    ws = _corpus_like_workspace(sample_ws)
    run = run_cli("-w", str(ws), *args, env={"COLUMNS": "80"})
    assert run.code in (0, 1), run.stderr
    result = run_cli("-w", str(ws), *args, "--json").json()["result"]
    rows = len(result.get("sessions") or result.get("files"))
    table = run.stdout.splitlines()[:1 + rows]
    assert all(width_of(line) <= 80 for line in table), table
    keys = [row["key"] for row in run_cli("-w", str(ws), "sessions", "list", "--json").json()["result"]["sessions"]]
    for line in table[1:]:
        first = line.split()[0]
        if "…" in first:
            head, tail = first.split("…")
            assert any(k.startswith(head) and k.endswith(tail) for k in keys), first
        else:
            assert first in keys, first
    if args == ("sessions", "list"):
        doc = run_cli("-w", str(ws), "sessions", "list", "--json").json()["result"]["sessions"]
        body = "\n".join(table)
        for row in doc:
            assert f"{row['tokens']:,}" in body  # numbers are never cut


def test_tsv_has_one_row_per_session_with_raw_numbers(sample_ws):
    run = run_cli("-w", str(sample_ws), "sessions", "list", "--format", "tsv", "--sort", "name")
    doc = run_cli("-w", str(sample_ws), "sessions", "list", "--json", "--sort", "name").json()["result"]["sessions"]
    rows = [line.split("\t") for line in run.stdout.splitlines()]
    assert [r[0] for r in rows] == [d["key"] for d in doc]
    assert [int(r[4]) for r in rows] == [d["tokens"] for d in doc] and [int(r[6]) for r in rows] == [
        d["size"] for d in doc]
    assert run_cli("-w", str(sample_ws), "sessions", "list", "--format", "json").json()["command"] == "sessions list"


@pytest.mark.parametrize("env,flag,coloured", [
    ({}, None, False), ({"CLICOLOR_FORCE": "1"}, None, True), ({"CLICOLOR_FORCE": "1", "NO_COLOR": "1"}, None, False),
    ({}, "always", True), ({"CLICOLOR_FORCE": "1"}, "never", False), ({"CLICOLOR": "0"}, None, False)])
def test_colour_rules(sample_ws, monkeypatch, env, flag, coloured):
    monkeypatch.delenv("NO_COLOR", raising=False)
    for var in ("CLICOLOR_FORCE", "CLICOLOR"):
        monkeypatch.delenv(var, raising=False)
    args = (["--color", flag] if flag else []) + ["-w", str(sample_ws), "sessions", "list"]
    run = run_cli(*args, env=env)
    assert bool(ANSI.search(run.stdout)) is coloured, (env, flag)


def test_long_output_on_a_terminal_goes_through_the_pager(sample_ws, tmp_path):
    paged = tmp_path / "paged.txt"
    env = dict(os.environ, PYTHONPATH=str(REPO), PAGER=f"sh -c 'cat > {paged}'", LINES="10", COLUMNS="100")
    argv = [sys.executable, "-m", "qwenmem", "-w", str(sample_ws), "sessions", "show", "console/default_1764235442381"]
    for extra, expect_paged in (([], True), (["--no-pager"], False)):
        paged.unlink(missing_ok=True)
        leader, follower = pty.openpty()
        proc = subprocess.run([argv[0], *argv[1:3], *extra, *argv[3:]], stdout=follower, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, env=env, timeout=60)
        os.close(follower)
        os.close(leader)
        assert proc.returncode == 0, proc.stderr
        assert paged.exists() is expect_paged
        if expect_paged:
            assert "console/default_1764235442381" in paged.read_text(encoding="utf-8")


def test_help_examples_are_never_rewrapped():
    run = run_cli("compact", "--help", env={"COLUMNS": "60"})
    assert "QWENMEM_LLM_BASE_URL=http://localhost:8000/v1 QWENMEM_LLM_MODEL=qwen3 qwenmem compact --all --json" in run.stdout
    run = run_cli("completions", "--help", env={"COLUMNS": "60"})
    assert "qwenmem completions bash > ~/.local/share/bash-completion/completions/qwenmem" in run.stdout


def test_a_wrapped_cell_counts_the_space_it_breaks_at():
    # `info`'s e5 kernel note on a CPU with many AVX-512 flags: the check once left out the space kept between
    # two words, so a line came out one column too wide (81 at COLUMNS=80)
    from qwenmem.cli.tables import wrap_dotted

    note = "CPU flags: avx avx2 avx512_bf16 avx512_bitalg avx512_vbmi2 avx512_vnni avx512bw avx512cd avx512vl"
    assert wrap_dotted(note, 30)[0] == "CPU flags: avx avx2"
    assert wrap_dotted("agent.json running.light_context_config", 20) == ["agent.json running.", "light_context_config"]


@pytest.mark.parametrize("width", range(4, 41))
def test_no_wrapped_line_is_wider_than_its_column(width):
    from qwenmem.cli.tables import wrap_dotted

    texts = ["CPU flags: avx avx2 avx512_bf16 avx512_bitalg avx512_vbmi2 avx512_vnni avx512bw avx512cd",
             "agent.json running.light_context_config.dialog_path/sessions x y.z 卷宗号怎么编 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]
    for text in texts:
        lines = wrap_dotted(text, width)
        assert all(width_of(line) <= width for line in lines), (width, lines)
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")
