"""Running qwenmem command lines as another (unprivileged) user, for the owner and permission tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from helpers import REPO

# Runs in a child: the interpreter lives under /root (unreadable to the user), so the child warms every import up
# on a scratch copy first, then drops to the user with os.setgid/os.setuid and runs the real command lines.
CHILD = textwrap.dedent("""
    import contextlib, io, json, os, sys
    from qwenmem.cli.app import run
    scratch, target, uid, as_user, commands = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", json.loads(sys.argv[5])
    def go(ws, argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run(["-w", ws, *argv])
        return {"argv": argv, "code": code, "stderr": err.getvalue()}
    if as_user:
        for argv in commands:
            go(scratch, argv)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    print(json.dumps([go(target, argv) for argv in commands]))
""")



def run_commands(ws: Path, scratch: Path, commands: list[list[str]], uid: int | None) -> list[dict]:
    """Run each command line on `ws` in one child process: as root, or (uid given) as that user after a warm-up
    of the same commands on `scratch` (so every import is loaded while the interpreter is still readable)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), HOME=str(ws.parent), NO_COLOR="1")
    proc = subprocess.run([sys.executable, "-c", CHILD, str(scratch), str(ws), str(uid or 0), "1" if uid else "0",
                           json.dumps(commands)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])
