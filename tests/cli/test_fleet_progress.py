"""`qwenmem fleet`'s progress, in real processes: a line every --progress-every seconds on a piped stderr, nothing
with --quiet, a live bar when stderr is a terminal (a real pty); the JSON Lines on stdout stay as they were."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from helpers import REPO, SAMPLE, run_cli

LINE = re.compile(r"^fleet: \d+(/\d+)? done.*, \d+ failed, \d+ with problems, \d+ running, [\d.]+/s, ETA ")
COUNT = 60


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("fleet")
    for i in range(COUNT):
        shutil.copytree(SAMPLE, base / f"ws{i:02d}")
    return base


def _only_records(stdout: str) -> list[dict]:
    records = [json.loads(line) for line in stdout.splitlines()]
    assert all(r["qwenmem_fleet"] == 1 and r["status"] in ("ok", "problems") for r in records)
    return records


def test_piped_stderr_gets_a_line_every_n_seconds_and_stdout_only_records(fleet):
    run = run_cli("fleet", str(fleet), "-j", "1", "--progress-every", "0.1", "--", "doctor")
    lines = [line for line in run.stderr.splitlines() if LINE.match(line)]
    assert lines, run.stderr
    assert len(_only_records(run.stdout)) == COUNT
    done = [int(re.match(r"fleet: (\d+)", line).group(1)) for line in lines]
    assert done == sorted(done) and done[-1] <= COUNT
    assert "\x1b[" not in run.stderr  # no terminal codes in a log
    assert run.stderr.splitlines()[len(lines)].startswith(f"fleet (local): `doctor` on {COUNT} workspace(s)")


def test_the_default_is_quiet_for_a_short_run_and_quiet_shows_no_progress(fleet):
    default = run_cli("fleet", str(fleet), "-j", "1", "--", "doctor")
    assert not [line for line in default.stderr.splitlines() if LINE.match(line)]  # < 30 s: the summary only
    quiet = run_cli("fleet", str(fleet), "-j", "1", "--progress-every", "0.1", "--quiet", "--", "doctor")
    assert not [line for line in quiet.stderr.splitlines() if LINE.match(line)]
    def answers(stdout: str) -> set[tuple[str, str]]:
        return {(r["workspace"], r["status"]) for r in _only_records(stdout)}

    assert len(answers(quiet.stdout)) == COUNT and answers(quiet.stdout) == answers(default.stdout)


def _read_all(fd: int, proc: subprocess.Popen, limit: float) -> bytes:
    chunks, deadline = [], time.monotonic() + limit
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the pty's other side closed: the process ended
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    return b"".join(chunks)


def test_a_terminal_stderr_gets_the_live_bar_and_stdout_stays_records(fleet, tmp_path):
    main, side = os.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    out = tmp_path / "records.jsonl"
    env = dict(os.environ, PYTHONPATH=str(REPO), TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    with open(out, "w", encoding="utf-8") as stdout:
        proc = subprocess.Popen([sys.executable, "-m", "qwenmem", "fleet", str(fleet), "-j", "1", "--", "doctor"],
                                stdout=stdout, stderr=side, stdin=subprocess.DEVNULL, env=env)
    os.close(side)
    screen = _read_all(main, proc, 120).decode("utf-8", "replace")
    proc.wait(timeout=30)
    os.close(main)
    assert "\x1b[?25l" in screen  # Rich's live display hides the cursor while it redraws in place
    assert f"{COUNT}/{COUNT} done" in screen and "failed" in screen and "ETA" in screen and "/s" in screen
    assert "━" in screen  # the bar
    assert f"`doctor` on {COUNT} workspace(s)" in screen  # then the summary, on one line
    assert not LINE.search(screen)  # not the plain lines
    assert len(_only_records(out.read_text(encoding="utf-8"))) == COUNT
