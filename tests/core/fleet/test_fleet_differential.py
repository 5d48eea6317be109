"""Fleet runs what the single-workspace command runs: for each fleet command, `qwenmem fleet WS… -- COMMAND` and
`qwenmem -w WS COMMAND --json` on a 1.x workspace (the sample, which holds a damaged session) and the same without
it, a mixed workspace (a copy of the corpus QwenPaw 2.2.2 wrote: 2.x files beside 1.x ones it still loads), the
same with only its 2.x files, the mixed one with a session cut mid-file, one whose agent.json does not parse, and a
1.x workspace with a session linked out of it, compared on status, exit code and result (issue 25)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from helpers import SAMPLE, invoke, run_cli
from qwenpaw2_support import copy_corpus, needs_gen2_corpus

pytestmark = needs_gen2_corpus

COMMANDS = [
    "compact --check",
    "compact --check --all",  # the documented single-workspace form (fleet used to refuse it, exit 2)
    "compact --check --max-input-length 4000 --system-tokens 500",
    "sessions repair --check",
    "sessions repair --check --all --fix-tool-pairs",
    "sessions repair --dry-run",
    "sessions repair --dry-run --all --from-backup --convert-1x",
    "history check",
    "history check --deep",
    "doctor",
    "compact --all --dry-run --summarizer extractive",  # the writing run, as a dry run: fleet had its own
    "compact --all --dry-run --prune-only --recent-n 1",  # every flag of compact, not three of them
    "dream --dry-run --mode deterministic",
    "dream --dry-run --mode deterministic --promote all --no-embeddings",
    "reindex --embedder none --dry-run",
    "reindex --embedder none --dry-run --sources memory,dialog --verify",
    "upgrade --dry-run",  # 1.x → 2.x: per session what it would add; a 2.x or damaged workspace says so
    "upgrade --dry-run --strategy native --retention-days 7",
]


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("differential")
    gen1 = base / "gen1"
    shutil.copytree(SAMPLE, gen1)
    gen1_healthy = base / "gen1-healthy"
    shutil.copytree(SAMPLE, gen1_healthy)
    (gen1_healthy / "sessions" / "telegram" / "77_telegram--77.json").unlink()  # the sample's damaged session
    mixed = copy_corpus(base / "mixed")
    gen2 = copy_corpus(base / "gen2")
    for name in GEN1_FILES_OF_THE_CORPUS:
        (gen2 / "sessions" / name).unlink()
    damaged = copy_corpus(base / "damaged")
    session = sorted((damaged / "sessions").rglob("*.json"))[-1]
    data = session.read_bytes()
    session.write_bytes(data[: len(data) // 2])  # cut mid-file, as a crash mid-write would leave it
    broken = base / "broken"
    shutil.copytree(SAMPLE, broken)
    (broken / "agent.json").write_text("{not json", encoding="utf-8")
    links_out = base / "links-out"
    shutil.copytree(SAMPLE, links_out)
    (base / "outside.json").write_text("[]", encoding="utf-8")
    (links_out / "sessions" / "evil.json").symlink_to(base / "outside.json")  # refused: exit 6 where it is met
    return {"1.x": gen1, "1.x healthy": gen1_healthy, "mixed": mixed, "2.x": gen2, "mixed damaged": damaged,
            "broken agent.json": broken, "links out": links_out}


#: the 1.x session files the corpus's QwenPaw 2.x workspace holds beside its 2.x ones
GEN1_FILES_OF_THE_CORPUS = ("orphan_unregistered.json", "discord/42_discord--dm--42.json", "telegram/7_telegram--7.json")
VOLATILE = {"elapsed_ms", "seconds"}  # timings: doctor's, reindex's
#: the ids a compaction makes (a 2.x placeholder message, a tier-1 offload file's name): new uuids in every run;
#: also what hashes a repair plan that closes a dangling tool call (its "result lost" message gets a new id)
NEW_ID = re.compile(r"[0-9a-f]{32}")


def _plain(doc):
    """As JSON, without the keys that differ between two runs of the same command."""
    if isinstance(doc, dict):
        return {k: _plain(v) for k, v in doc.items() if k not in VOLATILE}
    if isinstance(doc, list):
        return [_plain(v) for v in doc]
    if isinstance(doc, str):
        return NEW_ID.sub("<id>", doc)
    return json.loads(json.dumps(doc))


@pytest.mark.parametrize("command", COMMANDS)
def test_fleet_gives_each_workspace_what_the_single_command_gives(workspaces, command):
    run = run_cli("fleet", *map(str, workspaces.values()), "-j", "2", "--", *command.split())
    records = {r["workspace"]: r for r in map(json.loads, run.stdout.splitlines())}
    assert len(records) == len(workspaces), run.stderr
    mismatches = []
    for label, ws in workspaces.items():
        single = invoke("-w", str(ws), *command.split(), "--json")
        envelope = json.loads(single.stdout)
        record = records[str(ws)]
        want = (envelope["status"], single.code, _plain(envelope["result"]), envelope["warnings"])
        got = (record["status"], record["exit_code"], _plain(record["result"]), record["warnings"])
        if want != got:
            mismatches.append(f"{label}: single {want[:2]}, fleet {got[:2]}"
                              + ("" if want[2] == got[2] else ", results differ")
                              + ("" if want[3] == got[3] else f", warnings {want[3]} != {got[3]}"))
    assert mismatches == []
    expected_run_code = 1 if any(r["exit_code"] for r in records.values()) else 0
    assert run.code == expected_run_code


def test_fleet_checks_2x_sessions_as_2x(workspaces):
    """The bug of issue 25: fleet's compact --check ran the 1.x-only check, called every healthy 2.x file
    "damaged", left it out and exited 1."""
    run = run_cli("fleet", str(workspaces["mixed"]), "--", "compact", "--check")
    [record] = map(json.loads, run.stdout.splitlines())
    assert (record["status"], record["exit_code"], run.code) == ("ok", 0, 0)
    checked = {s["path"]: s["generation"] for s in record["result"]["sessions"]}
    assert checked["sessions/console/alice_console--alice.json"] == checked["sessions/console/bob_console--bob.json"] \
        == "2.x"  # (the corpus also holds 1.x files: QwenPaw 2.x loads both)
    # the one warning is the corpus's carol file, which has bytes after its document (QwenPaw never imports it)
    assert [w.partition(":")[0] for w in record["warnings"]] == ["sessions/console/carol_console--carol.json"]


def test_the_workspaces_are_of_the_generations_they_are_named_for(workspaces):
    generations = {label: json.loads(invoke("-w", str(workspaces[label]), "info", "--json").stdout)
                   ["result"]["generation"]["generation"] for label in ("1.x", "1.x healthy", "mixed", "2.x")}
    assert generations == {"1.x": "1.x", "1.x healthy": "1.x", "mixed": "mixed", "2.x": "2.x"}
    health = {label: json.loads(invoke("-w", str(workspaces[label]), "sessions", "repair", "--check", "--json")
                                .stdout)["status"] for label in ("1.x", "1.x healthy", "mixed damaged")}
    assert health == {"1.x": "problems", "1.x healthy": "ok", "mixed damaged": "problems"}
