"""A dream that changes nothing says, in one line, what the day's log held that it skipped and why (issue 26):
on real Chinese logs no entry sits under a Facts/Decisions/Lessons heading, so `facts` promotes none."""

import shutil

import pytest

from helpers import CORPUS_REAL, corpus_params, invoke


@pytest.mark.parametrize("name", corpus_params(["DrifterM__swqhyjs__fda458a"]))
def test_already_tidy_says_what_the_facts_rule_skipped_and_what_all_would_add(name, tmp_path):
    ws = tmp_path / name
    shutil.copytree(CORPUS_REAL / name, ws)
    args = ("-w", str(ws), "dream", "--dry-run", "--date", "2026-03-12", "--mode", "deterministic")
    everything = invoke(*args, "--promote", "all", "--json").json()["result"]
    would_add = sum(c["action"] == "added" for c in everything["changes"])
    assert would_add > 0
    tidy = invoke(*args)
    assert tidy.code == 0, tidy.stderr
    first = tidy.stdout.splitlines()[0]
    assert "already tidy" in first
    summary = " ".join(line.strip() for line in tidy.stdout.splitlines())  # one line, wrapped on a terminal
    assert f"{would_add} log entries skipped" in summary and "`--promote all` would add them" in summary, summary
    doc = invoke(*args, "--json").json()["result"]
    assert doc["status"] == "unchanged"
    assert sum("--promote all` would add it" in s for s in doc["skipped"]) == would_add
