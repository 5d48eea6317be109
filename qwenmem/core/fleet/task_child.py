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
START_TIMEOUT_S = 120.0  # a cold interpreter and its warm-up on a loaded machine; not part of any task's timeout
PARENT_POLL_S = 0.5
#: once a record's header is there its body follows in the same write: a child that stops halfway is dead or wedged
BODY_TIMEOUT_S = 60.0
#: a task's frame is small, and the child reads it as soon as it is READY: a pipe that takes none of it for this long
#: belongs to a wedged child
SEND_TIMEOUT_S = 60.0
KILL_WAIT_S = 10.0  # for the kernel to reap a SIGKILLed child (one stuck in the kernel is left behind, not waited on)


class TaskChild:
    """The parent's handle on one child process. Every wait on it is bounded: the start (START_TIMEOUT_S), the task
    (its timeout), the rest of a record (BODY_TIMEOUT_S), the sending of a task (SEND_TIMEOUT_S), the reaping."""

    def __init__(self, warm_for: str | None = None) -> None:
        import qwenmem

        # the child imports the very qwenmem this process runs, wherever sys.path found it
        home = str(Path(qwenmem.__file__).resolve().parent.parent)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (home, os.environ.get("PYTHONPATH")))))
        warm = ("--warm", warm_for) if warm_for else ()
        self._proc = subprocess.Popen([sys.executable, "-m", "qwenmem.core.fleet.task_child", *warm, str(os.getpid())],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self._ready = False

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> bool:
        """Whether the child has said READY (its imports and warm-up done) within `timeout` seconds."""
        assert self._proc.stdout is not None
        if not self._ready:
            self._ready = _read_exactly(self._proc.stdout, len(READY), time.monotonic() + timeout) == READY
        return self._ready

    def run(self, target: Target, command: Command, timeout: float | None) -> dict[str, Any]:
        """The task's record; `timeout` (seconds from when the child got the task) kills the child."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        if not self.wait_ready():
            self.kill()
            return failure(CRASHED, "worker_died", f"the task's process did not start ({self.exit_words()})")
        start = time.monotonic()
        header: bytes | None = b""
        try:
            if _write_all(self._proc.stdin, _frame(pickle.dumps((target, command))), start + SEND_TIMEOUT_S):
                header = _read_exactly(self._proc.stdout, FRAME.size, None if timeout is None else start + timeout)
                if header is not None and len(header) == FRAME.size:
                    size = FRAME.unpack(header)[0]
                    body = _read_exactly(self._proc.stdout, size, time.monotonic() + BODY_TIMEOUT_S)
                    if body is not None and len(body) == size:  # else it died (or stopped) while writing the record
                        record: dict[str, Any] = pickle.loads(body)
                        return record
                    header = b""
        except BrokenPipeError:
            pass
        if header is None:  # the timeout passed first
            self.kill()  # it can write nothing more from now on
            return failure(TIMEOUT, "timeout", f"stopped after {timeout:g} s", time.monotonic() - start)
        self.kill()
        return failure(CRASHED, "worker_died", f"the task's process died ({self.exit_words()})",
                       time.monotonic() - start)

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        try:
            self._proc.wait(KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            pass  # killed, but not reaped yet (stuck in the kernel): nothing more is waited on
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                stream.close()

    def exit_words(self) -> str:
        code = self._proc.poll()
        return "still running" if code is None else f"exit code {code}"


def _frame(data: bytes) -> bytes:
    return FRAME.pack(len(data)) + data


def _write_frame(stream: IO[bytes], data: bytes) -> None:
    stream.write(_frame(data))
    stream.flush()


def _write_all(stream: IO[bytes], data: bytes, deadline: float) -> bool:
    """Write `data` to the pipe's descriptor, or give up (False) at `deadline`. BrokenPipeError if the child is gone."""
    fd, sent = stream.fileno(), 0
    while sent < len(data):
        _, writable, _ = select.select([], [fd], [], max(0.0, deadline - time.monotonic()))
        if not writable:
            return False
        sent += os.write(fd, data[sent:sent + select.PIPE_BUF])
    return True


def _read_exactly(stream: IO[bytes], n: int, deadline: float | None) -> bytes | None:
    """`n` bytes (fewer at end of file), or None when `deadline` (time.monotonic) passes before the first of them is
    there; bytes short of `n` when it passes after. Read from the descriptor itself, never through a buffer that
    select() cannot see."""
    fd, got = stream.fileno(), 0
    chunks: list[bytes] = []
    while got < n:
        if deadline is not None:
            readable, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not readable:
                return None if not chunks else b"".join(chunks)
        chunk = os.read(fd, n - got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def serve(parent: int, warm_for: str | None = None) -> None:
    """The child: task after task from stdin, each record to the pipe that was stdout, until stdin ends. It says
    READY once its imports are done, the command's own (`warm_for`: Operation.warm and COMMON_WARM) included, so
    they cost nothing inside the first task's timeout."""
    from qwenmem.core.fleet.operations import warm_up
    from qwenmem.core.interrupts import quiet_worker_signals

    quiet_worker_signals()
    threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True).start()
    tasks, records = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything an operation prints goes to stderr, never into the records' pipe
    import qwenmem.core.workspace  # noqa: F401  # imported now, outside the first task's timeout

    if warm_for is not None:
        warm_up(warm_for)

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


def main(argv: list[str]) -> None:
    """`python -m qwenmem.core.fleet.task_child [--warm OPERATION] PARENT_PID`"""
    warm_for = argv[argv.index("--warm") + 1] if "--warm" in argv else None
    serve(int(argv[-1]), warm_for)


if __name__ == "__main__":
    main(sys.argv[1:])
