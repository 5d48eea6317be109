"""The smaller output points of issue 26: one timestamp format for 1.x and 2.x, a damaged backup's counts that
agree, `ok at risk` not green and no JSON field names in table notes, whole-token trigger/reserve, grouped --help."""

import re
import shutil

import pytest

from helpers import CORPUS_REAL, corpus_params, invoke, run_cli
from qwenpaw2_support import copy_corpus, needs_gen2_corpus

STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}")


@needs_gen2_corpus
def test_one_timestamp_format_for_1x_and_2x_messages(tmp_path):
    ws = copy_corpus(tmp_path)
    for key in ("orphan_unregistered", "console/alice_console--alice"):  # a 1.x and a 2.x file
        shown = invoke("--no-pager", "-w", str(ws), "sessions", "show", key).stdout
        headers = [line for line in shown.splitlines() if line.startswith("#")]
        assert headers and all(STAMP.search(h) for h in headers), (key, headers[:3])
        assert not any("T" in h.split()[-1] and ":" in h.split()[-1] for h in headers)


@pytest.mark.parametrize("name", corpus_params(["ziwei-control__ai_no1_ruyi__4696ca7"]))
def test_a_damaged_backup_of_compressed_messages_reads_0_of_183(name, tmp_path, monkeypatch):
    ws = tmp_path / name
    shutil.copytree(CORPUS_REAL / name, ws)
    monkeypatch.setenv("COLUMNS", "100")
    table = invoke("-w", str(ws), "sessions", "list").stdout
    row = next(line for line in table.splitlines() if line.startswith("main_main"))
    assert "0/183" in row.split(), row  # 183 messages in the file, none in the context: 0 tokens agrees
    assert "in context/in the file" in table
    tsv = invoke("-w", str(ws), "sessions", "list", "--format", "tsv").stdout.split("\t")
    assert tsv[3] == "183"  # programs keep the file's count


@needs_gen2_corpus
def test_at_risk_is_not_green_and_the_note_names_no_json_field(tmp_path):
    ws = copy_corpus(tmp_path)
    run = run_cli("--color", "always", "-w", str(ws), "sessions", "list", env={"COLUMNS": "120"})
    risky = [line for line in run.stdout.splitlines() if "at risk" in line]
    assert risky and all("\x1b[32m" not in line for line in risky), risky  # 32: green
    assert "see at_risk" not in run.stderr and "at risk" in run.stderr


@needs_gen2_corpus
def test_trigger_and_reserve_are_whole_tokens(tmp_path, monkeypatch):
    ws = copy_corpus(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    table = invoke("-w", str(ws), "compact", "--check", "--all").stdout.splitlines()
    header = table[0].split()
    assert "in ctx" in table[0] and "trigger" in header
    for line in table[1:]:
        if line.startswith("console/"):
            assert not re.search(r"\d,\d{3}\.\d", line), line


def test_help_groups_the_commands_as_gh_does():
    out = invoke("--help").stdout
    core, maint, setup = (out.index(t) for t in ("Core commands:", "Maintenance commands:", "Setup commands:"))
    assert core < maint < setup
    assert core < out.index("  sessions ") < maint < out.index("  doctor ") < setup < out.index("  schedule ")
    assert "\nCommands:" not in out
