"""A link refused or a disk full is an event of the call that met it (qwenmem.core.events), never of the process:
two operations in one process on two workspaces each see their own, and a fleet worker's second workspace does not
inherit its first's (issue 25: these were process-global lists that only the CLI's entry point reset)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import SAMPLE, run_cli


@pytest.fixture
def two(tmp_path) -> tuple[Path, Path]:
    """A workspace with a session linked out of it, then a plain one (both the sample: one damaged session)."""
    links_out, plain = tmp_path / "a-links-out", tmp_path / "b-plain"
    shutil.copytree(SAMPLE, links_out)
    shutil.copytree(SAMPLE, plain)
    (tmp_path / "outside.json").write_text("[]", encoding="utf-8")
    (links_out / "sessions" / "evil.json").symlink_to(tmp_path / "outside.json")
    return links_out, plain


def test_one_fleet_worker_gives_each_workspace_its_own_exit_code(two):
    links_out, plain = two
    run = run_cli("fleet", str(links_out), str(plain), "-j", "1", "--", "sessions", "repair", "--check")
    codes = {Path(r["workspace"]).name: r["exit_code"] for r in map(json.loads, run.stdout.splitlines())}
    single = {p.name: run_cli("-w", str(p), "sessions", "repair", "--check").code for p in two}
    # the refused link is exit 6 (UNSAFE_LINK) for that workspace, as for the single command; the plain workspace,
    # run next in the same worker process, has only its damaged session: 1
    assert codes == single == {"a-links-out": 6, "b-plain": 1}


def test_two_operations_in_one_process_see_only_their_own_events(two):
    from qwenmem.cli.app import fleet_command as parse_words
    from qwenmem.core.fleet.targets import Target
    from qwenmem.core.fleet.tasks import run_task

    links_out, plain = two
    command = parse_words(["sessions", "repair", "--check"])
    first = run_task(Target(str(links_out), None), command)
    second = run_task(Target(str(plain), None), command)
    assert [Path(r.split(":")[0]).name for r in first["events"]["refused_links"]] == ["evil.json"]
    assert second["events"] == {"refused_links": [], "disk_full": []}


def test_a_recording_sees_its_own_events_and_passes_them_to_the_one_around_it(two):
    from qwenmem.core.events import recording
    from qwenmem.core.repair import CHECK, run_repair
    from qwenmem.core.sessions import iter_session_refs
    from qwenmem.core.workspace import discover_workspace

    links_out, plain = two
    with recording() as outer:
        with recording() as first:
            ws = discover_workspace(links_out, env={})
            run_repair(ws, list(iter_session_refs(ws)), CHECK)
        with recording() as second:
            ws = discover_workspace(plain, env={})
            run_repair(ws, list(iter_session_refs(ws)), CHECK)
    assert len(first.refused_links) == 1 and "evil.json" in first.refused_links[0]
    assert not second.events and outer.refused_links == first.refused_links
    ws = discover_workspace(links_out, env={})
    run_repair(ws, list(iter_session_refs(ws)), CHECK)  # outside any recording: nothing is kept anywhere
    with recording() as later:
        pass
    assert not later.events
