"""Snapshot-store temporaries of a killed run (issue 24 §7): named like every qwenmem temporary
(`.object.PID-RANDOM.qwenmem-tmp`, qwenmem.core.tempnames), and removed by the next run under the workspace lock once
their process is gone, the read-only ones included.

A real `snapshot` process dies (os._exit, as a SIGKILL would leave it) just as it publishes its first object: every
object is a temporary then, one already made read-only.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap

from helpers import REPO, run_cli
from qwenpaw2_support import copy_corpus, needs_gen2_corpus

from qwenmem.core.tempnames import TEMP_SUFFIX, owner_pid

pytestmark = needs_gen2_corpus

DIE_AT_FIRST_LINK = textwrap.dedent("""
    import os, sys
    from qwenmem.core import snapshot
    from qwenmem.core.workspace import discover_workspace
    def die(*args, **kwargs):
        os._exit(9)
    os.link = die  # the first object's name: every object is still a temporary
    snapshot.create(discover_workspace(sys.argv[1]))
""")


def _temporaries(ws):
    return sorted(p for p in (ws / ".qwenmem").rglob(f"*{TEMP_SUFFIX}"))


def test_a_killed_snapshot_leaves_pid_named_temporaries_the_next_run_removes(tmp_path):
    ws = copy_corpus(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", DIE_AT_FIRST_LINK, str(ws)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 9, proc.stderr
    left = _temporaries(ws)
    assert len(left) > 3, left
    pids = {owner_pid(p.name) for p in left}
    assert len(pids) == 1 and None not in pids, [p.name for p in left]
    assert any(stat.S_IMODE(p.stat().st_mode) & 0o222 == 0 for p in left)  # a read-only one among them
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in left)

    run = run_cli("-w", str(ws), "snapshot")
    assert run.code == 0, run.stderr
    assert _temporaries(ws) == []


def test_a_live_writers_temporary_is_kept(tmp_path):
    """Under the lock, a temporary whose process still runs (another qwenmem writing into the store) stays."""
    ws = copy_corpus(tmp_path)
    assert run_cli("-w", str(ws), "snapshot").code == 0
    objects = ws / ".qwenmem" / "snapshots" / "objects"
    live = objects / f".object.{os.getpid()}-0123abcd{TEMP_SUFFIX}"
    live.write_bytes(b"being written")
    assert run_cli("-w", str(ws), "snapshot", "--keep", "1").code == 0
    assert live.exists()
