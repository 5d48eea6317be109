"""Naming sessions as people do (issue 26): the shortened key a table shows, a unique prefix, a unique substring;
an ambiguous name lists its candidates (exit 2). And `search` takes every remaining word as its query."""

import shutil

import pytest

from helpers import CORPUS_REAL, invoke, needs_shared, run_cli
from qwenmem.core.session_names import loose_matches

JOWNDA = CORPUS_REAL / "jownda__llm-wiki-builder__276e7d8"
DRIFTER = CORPUS_REAL / "DrifterM__swqhyjs__fda458a"
ZZJ = CORPUS_REAL / "zzjmay123__aiWorkflow__c70a43d"


def _copy(src, tmp_path):
    dest = tmp_path / src.name
    shutil.copytree(src, dest)
    return dest


def test_loose_matches_steps():
    names = ["default_1773379549580", "default_1773384423741", "ou_975690183c044ff01e03b1d66fb98df9_6fb98df9"]
    assert loose_matches(names, "ou_975690183…df9_6fb98df9") == [names[2]]
    assert loose_matches(names, "ou_975690183...df9_6fb98df9") == [names[2]]
    assert loose_matches(names, "default_177") == names[:2]  # ambiguous: both are candidates
    assert loose_matches(names, "default_1773384") == [names[1]]
    assert loose_matches(names, "84423741") == [names[1]]  # a substring
    assert loose_matches(names, "default_17…80") == [names[0]]
    assert loose_matches(names, "nomatch") == [] and loose_matches(names, "") == []
    assert loose_matches(["ab"], "ab…ab") == []  # head and tail may not overlap


@needs_shared
def test_the_shortened_key_a_table_shows_names_the_session(tmp_path):
    ws = _copy(JOWNDA, tmp_path)
    listed = run_cli("-w", str(ws), "sessions", "list", "--sort", "name", env={"COLUMNS": "50"})
    keys = [r["key"] for r in invoke("-w", str(ws), "sessions", "list", "--sort", "name", "--json").json()["result"][
        "sessions"]]
    assert listed.code == 0, listed.stderr
    shown = [line.split()[0] for line in listed.stdout.splitlines()[1:]]
    assert len(shown) == len(keys) and "ou_cb6f9ef3a36728dd68951e29d1bf9a00_d1bf9a00" not in shown, listed.stdout
    for name, key in zip(shown, keys):
        for args in (["sessions", "show", name, "--json"], ["compact", "--check", name, "--json"],
                     ["sessions", "repair", "--check", name, "--json"]):
            run = invoke("-w", str(ws), *args)
            assert run.code in (0, 1), (args, run.stderr)  # 1: repair --check's "needs repair", never 2
            doc = run.json()["result"]
            assert (doc.get("key") or (doc.get("sessions") or doc.get("files"))[0]["key"]) == key, args


@needs_shared
def test_a_prefix_names_a_session_and_an_ambiguous_one_lists_the_candidates(tmp_path):
    ws = _copy(DRIFTER, tmp_path)
    run = invoke("-w", str(ws), "sessions", "show", "default_177")
    assert run.code == 2 and run.stdout == ""
    assert "default_1773379549580" in run.stderr and "default_1773384423741" in run.stderr, run.stderr
    doc = invoke("-w", str(ws), "sessions", "show", "default_1773384", "--json")
    assert doc.code == 0 and doc.json()["result"]["key"] == "default_1773384423741"
    ambiguous = invoke("-w", str(ws), "sessions", "show", "default_177", "--json")
    assert ambiguous.code == 2 and ambiguous.json()["errors"][0]["code"] == "ambiguous"
    assert "default_1773379549580" in ambiguous.json()["errors"][0]["message"]


@needs_shared
def test_a_unique_substring_and_the_reported_shortened_form_name_a_session(tmp_path):
    ws = _copy(ZZJ, tmp_path)
    for name in ("6fb98df9", "ou_975690183…df9_6fb98df9"):
        doc = invoke("-w", str(ws), "sessions", "show", name, "--json")
        assert doc.code == 0, (name, doc.stderr)
        assert doc.json()["result"]["key"] == "ou_975690183c044ff01e03b1d66fb98df9_6fb98df9"
    assert invoke("-w", str(ws), "sessions", "show", "nothing-like-it").code == 2


@pytest.mark.parametrize("words", [["connection", "timeout"], ["数据库", "连接"]])
def test_search_takes_every_remaining_word_as_the_query(sample_ws, words):
    run = invoke("search", *words, "-w", str(sample_ws), "--mode", "text", "--json")
    assert run.code == 0, run.stderr
    doc = run.json()
    assert doc["result"]["query"] == " ".join(words) and doc["result"]["hits"] and doc["status"] == "ok"


def test_search_without_hits_says_problems_as_its_exit_code_does(sample_ws):
    run = invoke("search", "xyzzyqq", "nonexistent", "-w", str(sample_ws), "--mode", "text", "--json")
    assert run.code == 1 and run.json()["status"] == "problems" and run.json()["result"]["hits"] == []
    assert run.json()["errors"] == []  # nothing found is not an error


def test_the_shells_complete_a_shortened_form_or_a_substring_to_the_key(tmp_path):
    """`__complete sessions --like WORD`, and bash's function through a `qwenmem` on PATH (this checkout)."""
    import os
    import subprocess
    import sys

    from helpers import FIXTURE_ROOT, REPO

    base = ["__complete", "sessions", "-w", str(FIXTURE_ROOT), "--agent", "default"]
    assert run_cli(*base, "--like", "7700112233").stdout.split() == ["telegram/7700112233_telegram--7700112233"]
    assert run_cli(*base, "--like", "console/…0001").stdout.split() == ["console/default_1772000000001"]
    assert run_cli(*base, "--like", "tele").stdout.split() == ["telegram/7700112233_telegram--7700112233"]
    assert run_cli(*base, "--like", "").stdout.split() == ["console/default_1772000000001",
                                                            "telegram/7700112233_telegram--7700112233"]
    if shutil.which("bash") is None:
        return
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "qwenmem"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} -m qwenmem \"$@\"\n")
    shim.chmod(0o755)
    probe = (f"source {REPO / 'completions' / 'qwenmem.bash'}\n"
             f"COMP_WORDS=(qwenmem -w {FIXTURE_ROOT} --agent default sessions show 2233_tele); COMP_CWORD=7; "
             "_qwenmem; echo \"${COMPREPLY[*]}\"\n")
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True,
                         env=dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}"), timeout=120).stdout
    assert out.split() == ["telegram/7700112233_telegram--7700112233"], out
