"""A task's own process, for an engine whose workers run tasks in threads (Dask): killed at the timeout.

A thread cannot be stopped, so an operation given up on in a thread goes on, and could still write to its
workspace after its record said `timeout`. A killed process writes nothing more, and a write it was in the middle
of is only a temporary file (fsio writes temp → os.replace). A deadline checked before each os.replace would not
cover the other writes (SQLite, renames, the index) and would leave the thread running, holding the workspace lock.

The child is a plain `python -m` process on pipes, not a multiprocessing one: a Dask worker under a nanny is a
daemonic process, which multiprocessing forbids to have children. It is started warm (its imports are done before
it says it is ready, outside any task's timeout), serves task after task, and exits when its parent dies.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from qwenmem.core.fleet.operations import Command
from qwenmem.core.fleet.targets import Target
from qwenmem.core.fleet.tasks import CRASHED, TIMEOUT, failure, run_task

READY = b"R"
FRAME = struct.Struct("!Q")  # the length of the pickle that follows
START_TIMEOUT_S = 120.0  # a cold interpreter on a loaded machine; not part of any task's timeout
PARENT_POLL_S = 0.5


class TaskChild:
    """The parent's handle on one child process."""

    def __init__(self) -> None:
        import qwenmem

        # the child imports the very qwenmem this process runs, wherever sys.path found it
        home = str(Path(qwenmem.__file__).resolve().parent.parent)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (home, os.environ.get("PYTHONPATH")))))
        self._proc = subprocess.Popen([sys.executable, "-m", "qwenmem.core.fleet.task_child", str(os.getpid())],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self._ready = False

    def run(self, target: Target, command: Command, timeout: float | None) -> dict[str, Any]:
        """The task's record; `timeout` (seconds from when the child got the task) kills the child."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        if not self._ready:
            self._ready = _read_exactly(self._proc.stdout, len(READY), START_TIMEOUT_S) == READY
            if not self._ready:
                self.kill()
                return failure(CRASHED, "worker_died", f"the task's process did not start ({self._exit_words()})")
        start = time.monotonic()
        header: bytes | None = b""
        try:
            _write_frame(self._proc.stdin, pickle.dumps((target, command)))
            header = _read_exactly(self._proc.stdout, FRAME.size, timeout)
            if header is not None and len(header) == FRAME.size:
                size = FRAME.unpack(header)[0]
                body = _read_exactly(self._proc.stdout, size, None)
                if body is not None and len(body) == size:  # else it died while writing the record
                    record: dict[str, Any] = pickle.loads(body)
                    return record
        except BrokenPipeError:
            pass
        if header is None:  # the timeout passed first
            self.kill()  # it can write nothing more from now on
            return failure(TIMEOUT, "timeout", f"stopped after {timeout:g} s", time.monotonic() - start)
        self.kill()
        return failure(CRASHED, "worker_died", f"the task's process died ({self._exit_words()})",
                       time.monotonic() - start)

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                stream.close()

    def _exit_words(self) -> str:
        code = self._proc.poll()
        return "still running" if code is None else f"exit code {code}"


def _write_frame(stream: IO[bytes], data: bytes) -> None:
    stream.write(FRAME.pack(len(data)) + data)
    stream.flush()


def _read_exactly(stream: IO[bytes], n: int, timeout: float | None) -> bytes | None:
    """`n` bytes (fewer at end of file), or None when `timeout` passes before the first of them is there."""
    if timeout is not None:
        readable, _, _ = select.select([stream], [], [], timeout)
        if not readable:
            return None
    return stream.read(n)


def serve(parent: int) -> None:
    """The child: task after task from stdin, each record to the pipe that was stdout, until stdin ends."""
    from qwenmem.core.interrupts import quiet_worker_signals

    quiet_worker_signals()
    threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True).start()
    tasks, records = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything an operation prints goes to stderr, never into the records' pipe
    import qwenmem.core.workspace  # noqa: F401  # imported now, outside the first task's timeout

    records.write(READY)
    records.flush()
    while True:
        header = tasks.read(FRAME.size)
        if len(header) < FRAME.size:
            return
        target, command = pickle.loads(tasks.read(FRAME.unpack(header)[0]))
        _write_frame(records, pickle.dumps(run_task(target, command)))


def _exit_when_orphaned(parent: int) -> None:
    """A worker killed mid-run must leave no child that goes on writing while the scheduler reruns its task."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
