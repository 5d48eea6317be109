"""One cold `python -m qwenmem` process, measured: wall time, CPU time and peak RSS (used by the benches).

The process is started by a small launcher, a fresh interpreter that imports only os, resource, sys and time. Linux
keeps a process's peak RSS across fork+exec: a forked child starts with its parent's high-water mark and exec keeps
it, so qwenmem forked straight from a bench that has grown (a generated workspace, a million-row history.db, a
loaded model) reports the bench's size, not its own. Forked from the launcher, it starts from the launcher's few
MiB; the launcher times it and reads its rusage with wait4, exactly as the benches did in-process before.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# argv[1:] is the command; its stdout goes to /dev/null, its stderr is the launcher's. Prints one line:
# wall seconds, CPU seconds (user + sys, with the processes it waited for), peak RSS KiB, exit code.
LAUNCHER = """\
import os, sys, time
devnull = os.open(os.devnull, os.O_WRONLY)
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.dup2(devnull, 1)
    try:
        os.execv(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
print(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


@dataclass(frozen=True)
class Run:
    wall: float  # seconds from fork to exit
    cpu: float  # user + sys seconds of the process and the children it waited for (a fork pool's workers)
    peak_rss_mib: float  # the largest peak of the process and those children (ru_maxrss is a maximum, not a sum)
    code: int  # exit code


def measure(argv: list[str], env: dict[str, str] | None = None) -> Run:
    """Run `argv` (stdout discarded) from the launcher and return what the launcher measured."""
    out = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], stdout=subprocess.PIPE, env=env, text=True,
                         check=True).stdout.split()
    wall, cpu, maxrss_kib, code = float(out[0]), float(out[1]), int(out[2]), int(out[3])
    return Run(wall, cpu, maxrss_kib / 1024, code)  # ru_maxrss is in KiB on Linux


def run_qwenmem(args: list[str], ok: tuple[int, ...] = (0,)) -> Run:
    """One fresh `python -m qwenmem ARGS` of this checkout; exits the bench when its exit code is not in `ok`."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    run = measure([sys.executable, "-m", "qwenmem", *args], env)
    if run.code not in ok:
        raise SystemExit(f"qwenmem {' '.join(args)} failed with exit code {run.code}")
    return run
