"""Resource faults are one line and a documented exit code (issue 19 §4): a full disk (a real tmpfs the test
mounts), a directory the user may not read, and a 1 GB sparse dialog log that compact must read in bounded memory."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers import REPO, SAMPLE
from security_fixtures import run_commands

from qwenmem.cli.errors import ExitCode
from qwenmem.core.fsio import iter_lines_bounded

WRITING = [["sessions", "repair", "--all"],
           ["compact", "--all", "--max-input-length", "1200", "--summarizer", "extractive"],
           ["dream", "--mode", "deterministic", "--date", "2026-11-30"],
           ["reindex", "--embedder", "none"]]
NOBODY = 65534


def _digests(ws: Path) -> dict[str, str]:
    return {str(p.relative_to(ws)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(ws.rglob("*")) if p.is_file()}


@pytest.fixture
def full_disk():
    """A 3 MiB tmpfs holding a copy of the sample workspace, then filled to the last byte."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mnt = Path(tempfile.mkdtemp(prefix="qwenmem-full-"))
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if proc.returncode != 0:
        os.rmdir(mnt)
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        ws = mnt / "ws"
        shutil.copytree(SAMPLE, ws)
        (ws / "memory" / "2026-11-30.md").write_text("# 2026-11-30\n\n- The user prefers tea over coffee\n")
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
        for piece in (65536, 1):  # big pieces, then the last partial page byte by byte
            try:
                while True:
                    os.write(fd, b"\0" * piece)
            except OSError:
                pass
        os.close(fd)
        assert os.statvfs(mnt).f_bavail == 0
        yield ws
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        os.rmdir(mnt)


@pytest.mark.parametrize("argv", WRITING, ids=[a[0] if a[0] != "sessions" else "repair" for a in WRITING])
def test_disk_full_is_one_line_naming_the_file_and_the_free_space(full_disk, argv):
    from helpers import run_cli

    before = _digests(full_disk)
    run = run_cli("-w", str(full_disk), *argv)
    text = run.stdout + run.stderr
    assert run.code == ExitCode.DISK_FULL, text
    assert "internal error" not in text and "Traceback" not in text
    said = re.search(r"(/\S+): no space left on the device \((\d+) bytes free\)", " ".join(text.split()))
    assert said and said.group(1).startswith(str(full_disk)) and said.group(2) == "0", text
    after = _digests(full_disk)
    assert {k: v for k, v in after.items() if k in before} == before  # nothing that was there was damaged
    assert not [p for p in full_disk.rglob("*.qwenmem-tmp")]
    if argv[0] == "sessions":  # an incomplete run says what it finished: every other session still has its row
        assert text.count(" ok") >= 3 and "error" in text


def test_a_directory_the_user_may_not_read_is_one_line(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root, to run qwenmem as another user")
    shared = Path(tempfile.mkdtemp(prefix="qwenmem-perm-", dir="/tmp"))
    try:
        os.chmod(shared, 0o755)
        ws, scratch = shared / "ws", shared / "scratch"
        for d in (ws, scratch):
            shutil.copytree(SAMPLE, d)
            (d / "memory" / "2026-11-30.md").write_text("# 2026-11-30\n\n- The user prefers tea over coffee\n")
            for dirpath, dirnames, filenames in os.walk(d):
                for name in dirnames + filenames:
                    os.chown(os.path.join(dirpath, name), NOBODY, NOBODY)
            os.chown(d, NOBODY, NOBODY)
        os.chown(ws / "memory", 0, 0)
        os.chmod(ws / "memory", 0o000)  # as its non-owner, nobody can list or read it
        commands = [WRITING[2], WRITING[1], ["reindex", "--embedder", "none"], ["search", "tea", "--mode", "text"]]
        results = run_commands(ws, scratch, commands, NOBODY)
        for r in results:
            assert "internal error" not in r["stderr"] and "Traceback" not in r["stderr"], r
            assert r["code"] in (ExitCode.OK, ExitCode.PROBLEMS, ExitCode.WORKSPACE), r  # search: 1 = no hits
        dream = results[0]
        assert dream["code"] == ExitCode.WORKSPACE and "permission denied" in dream["stderr"], dream
        assert len(dream["stderr"].strip().splitlines()) == 1
    finally:
        shutil.rmtree(shared, ignore_errors=True)


@pytest.mark.slow  # writes and reads 1 GiB sparse logs: ~7 s
def test_compact_reads_a_1gb_sparse_dialog_log_in_bounded_memory(sample_ws):
    dates = set(re.findall(r'"timestamp": "(\d{4}-\d{2}-\d{2})', "".join(
        p.read_text(errors="replace") for p in (sample_ws / "sessions").rglob("*.json"))))
    assert dates
    dialog = sample_ws / "dialog"
    dialog.mkdir()
    for d in dates:
        with open(dialog / f"{d}.jsonl", "wb") as fh:
            fh.truncate(1 << 30)  # 1 GiB of NULs, no newline, taking no disk
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # Linux keeps a process's peak RSS across fork+exec, so a child forked straight from this (by now large) pytest
    # process would report pytest's size: a small launcher runs compact and reports its child's own peak.
    launcher = ("import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)"
                ".returncode; print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    proc = subprocess.run([sys.executable, "-c", launcher, sys.executable, "-m", "qwenmem", "-w", str(sample_ws),
                           "compact", "--all", "--max-input-length", "1200", "--summarizer", "extractive",
                           "--no-longterm"], capture_output=True, text=True, env=env, timeout=600, check=False)
    err = proc.stderr
    code, maxrss_kib = (int(v) for v in proc.stdout.split())
    assert code in (0, 1), err
    peak_mib = maxrss_kib / 1024  # KiB on Linux
    assert peak_mib < 400, f"compact peaked at {peak_mib:.0f} MiB on a 1 GiB sparse dialog log"
    assert any((dialog / f"{d}.jsonl").stat().st_size > 1 << 30 for d in dates)  # and it still appended


def test_bounded_lines_skip_an_overlong_line_and_keep_the_rest(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_bytes(b'{"a": 1}\n' + b"x" * 5000 + b"\n" + b'{"b": 2}\n' + b"y" * 3000)
    skipped: list[int] = []
    with open(p, "rb") as fh:
        lines = list(iter_lines_bounded(fh, max_line=1000, skipped=skipped))
    assert lines == [b'{"a": 1}\n', b'{"b": 2}\n'] and skipped == [5001, 3000]
