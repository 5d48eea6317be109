"""Links that leave the workspace are never read or written through (issue 19 §1).

Each case plants a link a cloned or shared workspace can hold, runs the real CLI, and checks that the outside
file stays byte-identical and its content appears in no output and no workspace file.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from helpers import invoke

from qwenmem.cli.errors import ExitCode
from qwenmem.core import confine
from qwenmem.core.errors import UnsafeLinkError
from qwenmem.core.fsio import append_durably, atomic_write_bytes, read_with_snapshot
from qwenmem.core.workspace import discover_workspace

SECRET_LINE = "export OUTSIDE_MARKER_7f3a=1  # the user's own file\n"
HOSTILE_LOG = "# 2026-11-30\n\n- $(touch pwned) the deploy key rotates on Mondays\n- The user prefers tea over coffee\n"


@pytest.fixture
def outside(tmp_path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "bashrc").write_text(SECRET_LINE)
    return d


def tree_digest(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(d.rglob("*"))}


def workspace_text(ws: Path) -> str:
    out = []
    for p in ws.rglob("*"):
        if p.is_file() and not p.is_symlink() and not any(q.is_symlink() for q in p.relative_to(ws).parents
                                                          if str(q) != "." and (ws / q).is_symlink()):
            out.append(p.read_bytes().decode("utf-8", "replace"))
    return "\n".join(out)


def assert_untouched(outside: Path, before: dict[str, str], ws: Path, *runs) -> None:
    assert tree_digest(outside) == before
    for run in runs:
        assert "OUTSIDE_MARKER_7f3a" not in run.stdout + run.stderr
    assert "OUTSIDE_MARKER_7f3a" not in workspace_text_no_links(ws)


def workspace_text_no_links(ws: Path) -> str:
    """Every regular file reachable in the workspace without following a link."""
    texts = []
    for dirpath, dirnames, filenames in os.walk(ws, followlinks=False):
        for name in filenames:
            p = Path(dirpath, name)
            if not p.is_symlink():
                texts.append(p.read_bytes().decode("utf-8", "replace"))
    return "\n".join(texts)


def with_daily_log(sample_ws: Path) -> Path:
    (sample_ws / "memory" / "2026-11-30.md").write_text(HOSTILE_LOG)
    return sample_ws


def test_dream_refuses_memory_md_linked_outside(sample_ws, outside):
    ws = with_daily_log(sample_ws)
    (ws / "MEMORY.md").unlink()
    (ws / "MEMORY.md").symlink_to(outside / "bashrc")
    before = tree_digest(outside)
    run = invoke("-w", str(ws), "dream", "--mode", "deterministic", "--date", "2026-11-30")
    assert run.code == ExitCode.UNSAFE_LINK, run.stderr
    assert f"{ws / 'MEMORY.md'}: a link to {outside / 'bashrc'}, outside the workspace" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert not list(ws.glob("backup/memory_backup_*"))  # the outside content was not copied in either
    assert_untouched(outside, before, ws, run)


@pytest.mark.parametrize("linked", ["backup", ".qwenmem", ".qwenmem/quarantine"])
def test_data_dirs_linked_outside_are_never_written(sample_ws, outside, linked):
    ws = with_daily_log(sample_ws)
    target = outside / "dir"
    target.mkdir()
    (target / "keep.txt").write_text(SECRET_LINE)
    link = ws / linked
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target, target_is_directory=True)
    before = tree_digest(outside)
    runs = [invoke("-w", str(ws), "dream", "--mode", "deterministic", "--date", "2026-11-30"),
            invoke("-w", str(ws), "sessions", "repair", "--all"),
            invoke("-w", str(ws), "compact", "--all", "--summarizer", "extractive"),
            invoke("-w", str(ws), "reindex"),
            invoke("-w", str(ws), "search", "tea", "--mode", "text")]
    assert_untouched(outside, before, ws, *runs)
    assert any(r.code == ExitCode.UNSAFE_LINK for r in runs)
    for r in runs:
        assert "internal error" not in r.stderr and "Traceback" not in r.stderr
        if r.code == ExitCode.UNSAFE_LINK:
            assert f"a link to {target}, outside the workspace" in " ".join((r.stdout + r.stderr).split())


@pytest.mark.parametrize("linked", ["memory", "memory/2026-11-30.md"])
def test_dream_never_reads_memory_logs_linked_outside(sample_ws, outside, linked):
    ws = sample_ws
    if linked == "memory":
        (outside / "2026-11-30.md").write_text("- " + SECRET_LINE)
        target = outside
        import shutil
        shutil.rmtree(ws / "memory")
    else:
        target = outside / "log.md"
        target.write_text("- " + SECRET_LINE)
    (ws / linked).symlink_to(target)
    before = tree_digest(outside)
    run = invoke("-w", str(ws), "dream", "--mode", "deterministic", "--date", "2026-11-30")
    assert run.code == ExitCode.UNSAFE_LINK, run.stdout + run.stderr
    assert "outside the workspace" in run.stderr
    assert_untouched(outside, before, ws, run)


@pytest.mark.parametrize("args", [("sessions", "list"), ("sessions", "show", "loop"), ("sessions", "repair", "--all"),
                                  ("sessions", "repair", "--check", "--all"), ("compact", "--all", "--check"),
                                  ("compact", "--all", "--summarizer", "extractive")])
def test_looping_session_link_is_one_line_not_an_internal_error(sample_ws, args):
    loop = sample_ws / "sessions" / "loop.json"
    loop.symlink_to("loop.json")
    run = invoke("-w", str(sample_ws), *args)
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert run.code in (ExitCode.OK, ExitCode.PROBLEMS, ExitCode.UNSAFE_LINK, ExitCode.USAGE), run.stderr


# the confined resolver itself


def test_links_inside_the_workspace_are_followed(sample_ws):
    ws = discover_workspace(sample_ws, env={})
    notes = sample_ws / "notes"
    notes.mkdir()
    (notes / "memory.md").write_bytes(b"# notes\n")
    (sample_ws / "MEMORY.md").unlink()
    (sample_ws / "MEMORY.md").symlink_to("notes/memory.md")
    data, snap = read_with_snapshot(ws.memory_md)
    atomic_write_bytes(ws.memory_md, data + b"- more\n", snap)
    assert (sample_ws / "MEMORY.md").is_symlink() and (notes / "memory.md").read_bytes() == b"# notes\n- more\n"


def test_relative_link_climbing_out_is_refused_and_named(sample_ws, outside):
    discover_workspace(sample_ws, env={})
    (sample_ws / "dialog").symlink_to(os.path.relpath(outside, sample_ws))
    with pytest.raises(UnsafeLinkError, match=r"dialog: a link to .*outside, outside the workspace"):
        append_durably(sample_ws / "dialog" / "2026-11-30.jsonl", b"{}\n")
    assert sorted(p.name for p in outside.iterdir()) == ["bashrc"]


def test_a_link_swapped_in_mid_path_is_caught_at_any_depth(sample_ws, outside):
    discover_workspace(sample_ws, env={})
    deep = sample_ws / "a" / "b"
    deep.mkdir(parents=True)
    (deep / "c").symlink_to(sample_ws / "a" / "d")  # inside: fine
    (sample_ws / "a" / "d").symlink_to(outside)  # ... which leads out
    from qwenmem.core.events import recording

    with recording() as log, pytest.raises(UnsafeLinkError):
        read_with_snapshot(deep / "c" / "bashrc")
    assert log.refused_links


def test_paths_outside_every_workspace_are_opened_normally(tmp_path):
    (tmp_path / "real.txt").write_bytes(b"x")
    (tmp_path / "alias.txt").symlink_to(tmp_path / "real.txt")
    assert confine.root_for(tmp_path / "alias.txt") is None
    assert read_with_snapshot(tmp_path / "alias.txt")[0] == b"x"


def test_repair_never_rebuilds_a_session_from_a_backup_linked_outside(sample_ws, outside):
    """An empty session with a `*.json.backup_*` sibling that is a link out: the outside file is not evidence."""
    import json
    from helpers import run_cli

    session = sample_ws / "sessions" / "console" / "default_1764235442381.json"
    real = json.loads(session.read_text())
    (outside / "backup.json").write_text(json.dumps(real).replace("\"text\": \"", "\"text\": \"OUTSIDE_MARKER_7f3a ", 1))
    session.write_bytes(b"")
    (session.parent / (session.name + ".backup_20261130_120000")).symlink_to(outside / "backup.json")
    before = tree_digest(outside)
    run = run_cli("-w", str(sample_ws), "sessions", "repair", "console/default_1764235442381", "--from-backup")
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr
    assert_untouched(outside, before, sample_ws, run)
