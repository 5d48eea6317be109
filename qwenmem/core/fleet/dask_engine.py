"""The Dask engine: fleet's tasks on a distributed cluster, an existing one (--scheduler) or one started here.

Before any task runs, every worker says which qwenmem it imports: a worker without qwenmem, or with another
version or other code, is named (address, what it has) in a UsageError, instead of failing every task it gets.

With --timeout, each task runs in a child process of its worker (TaskChildren, fleet/task_child.py, which says
why), killed at the timeout. Without --timeout the task runs in the worker's thread: no copy of the task and its
result between processes.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from qwenmem.core.errors import UsageError
from qwenmem.core.fleet.operations import Command
from qwenmem.core.fleet.targets import Target
from qwenmem.core.fleet.tasks import CRASHED, ERROR, failure, run_task

WORKERS_WAIT_S = 10.0  # how long a scheduler may have no worker before the run is refused
WORKER_CHECK_S = 30.0  # how long every worker has to say which qwenmem it imports
CHILDREN_PLUGIN = "qwenmem-fleet-children"


def qwenmem_identity() -> dict[str, str]:
    """Which qwenmem this process imports: its version and a digest of its source, so two installs that both
    say 0.1.0 but run different code (an editable checkout and a wheel) are told apart. Sent to the workers as
    code (sent_as_code), so it imports everything itself and runs where qwenmem is missing or another version."""
    import hashlib
    import sys
    from pathlib import Path

    try:
        import qwenmem
    except ImportError as exc:
        return {"missing": f"{type(exc).__name__}: {exc}", "python": sys.executable}
    package = Path(qwenmem.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return {"version": getattr(qwenmem, "__version__", "unknown"), "source": digest.hexdigest()[:16],
            "path": str(package)}


def sent_as_code(function: Callable[[], dict[str, str]]) -> Callable[[], dict[str, str]]:
    """A copy of `function` that cloudpickle sends by value (its code), not by reference (a module name the worker
    would have to import: the very thing a worker without qwenmem cannot do, and so could not report)."""
    import builtins
    import types

    return types.FunctionType(function.__code__, {"__builtins__": builtins}, function.__name__)


def worker_problems(answers: dict[str, Any], ours: dict[str, str]) -> list[str]:
    """One line per worker that cannot run this driver's tasks: no qwenmem, another version, other code."""
    problems = []
    for address, answer in sorted(answers.items()):
        if isinstance(answer, BaseException):
            problems.append(f"{address}: the check could not run there ({type(answer).__name__}: {answer})")
        elif "missing" in answer:
            problems.append(f"{address}: qwenmem is not importable by {answer['python']} ({answer['missing']})")
        elif answer["version"] != ours["version"]:
            problems.append(f"{address}: qwenmem {answer['version']} at {answer['path']}, this driver runs "
                            f"{ours['version']} at {ours['path']}")
        elif answer["source"] != ours["source"]:
            problems.append(f"{address}: qwenmem {answer['version']} at {answer['path']} is other code than this "
                            f"driver's ({ours['path']}; source digest {answer['source']} ≠ {ours['source']})")
    return problems


class DaskEngine:
    """Submit to a cluster. A worker that dies mid-task costs that task only: the scheduler reruns it elsewhere
    (up to its `allowed-failures`), and each task is atomic per workspace, so a rerun is safe; past that the
    record is `crashed`. `scheduler=None` starts a LocalCluster of `jobs` worker processes on this machine."""

    name = "dask"

    def __init__(self, scheduler: str | None, timeout: float | None, jobs: int = 1) -> None:
        from distributed import Client

        self.timeout = timeout
        self.notice: str | None = None
        self._cluster: Any = None
        if scheduler is None:
            scheduler = self._start_local_cluster(jobs)
        try:
            self._client = Client(scheduler, timeout="10s", set_as_default=False)  # type: ignore[no-untyped-call]  # distributed is not annotated
        except (OSError, TimeoutError) as exc:
            self._close_cluster()
            raise UsageError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
        try:
            self._check_workers(scheduler)
            if timeout is not None:
                self._client.register_plugin(TaskChildren(), name=CHILDREN_PLUGIN)
        except BaseException:
            self.close()
            raise
        self.workers = max(1, sum(self._client.nthreads().values()))  # type: ignore[no-untyped-call]  # (as above)

    def _start_local_cluster(self, jobs: int) -> str:
        from distributed import LocalCluster

        # processes, one thread each: the operations are CPU-bound Python, which threads would serialise
        self._cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,  # type: ignore[no-untyped-call]  # (as above)
                                     dashboard_address=None, host="127.0.0.1", silence_logs=logging.ERROR)
        address: str = self._cluster.scheduler_address
        self.notice = (f"fleet: no --scheduler given: started a local Dask cluster of {jobs} worker process(es) at "
                       f"{address}, stopped when the run ends")
        return address

    def _check_workers(self, scheduler: str) -> None:
        try:
            self._client.wait_for_workers(1, timeout=WORKERS_WAIT_S)
        except TimeoutError:
            raise UsageError(f"the Dask scheduler {scheduler} has no workers (waited {WORKERS_WAIT_S:g} s); start "
                             f"some with `dask worker {scheduler}`") from None
        try:
            answers = self._client.run(sent_as_code(qwenmem_identity), on_error="return", callback_timeout=WORKER_CHECK_S)
        except TimeoutError:
            raise UsageError(f"the workers of {scheduler} did not say which qwenmem they have within "
                             f"{WORKER_CHECK_S:g} s; is one of them stuck?") from None
        problems = worker_problems(answers, qwenmem_identity())
        if problems:
            raise UsageError(f"{len(problems)} of {len(answers)} Dask worker(s) cannot run this fleet; install this "
                             "qwenmem on them (or stop them):\n  " + "\n  ".join(problems))

    def submit(self, target: Target, command: Command) -> Any:
        # the worker's working directory is not the driver's: a relative path would name another workspace there
        where = Target(os.path.abspath(target.path), target.agent)
        if self.timeout is None:
            return self._client.submit(run_task, where, command, pure=False)
        return self._client.submit(run_in_child, where, command, self.timeout, pure=False)

    def wait(self, futures: list[Any], timeout: float | None) -> list[Any]:
        from distributed import wait

        try:
            with self._client.as_current():
                done, _ = wait(futures, timeout=timeout, return_when="FIRST_COMPLETED")  # type: ignore[no-untyped-call]  # (as above)
        except TimeoutError:
            return []
        return list(done)

    def outcome(self, future: Any) -> dict[str, Any]:
        from distributed import KilledWorker

        try:
            outcome: dict[str, Any] = future.result()  # run_task's record (fleet/tasks.py)
            return outcome
        except KilledWorker as exc:
            return failure(CRASHED, "worker_died", f"workers died running it: {exc}")
        except Exception as exc:  # noqa: BLE001
            return failure(ERROR, "internal", f"{type(exc).__name__}: {exc}")

    def close(self, cancel: bool = False) -> None:
        self._client.close()  # type: ignore[no-untyped-call]  # distributed is not annotated
        self._close_cluster()

    def _close_cluster(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


def run_in_child(target: Target, command: Command, timeout: float) -> dict[str, Any]:
    """A Dask task with --timeout: run_task in one of this worker's child processes (TaskChildren)."""
    from distributed import get_worker

    children = get_worker().plugins[CHILDREN_PLUGIN]
    assert isinstance(children, TaskChildren)  # registered by DaskEngine before its first task with a timeout
    return children.run(target, command, timeout)


class TaskChildren(WorkerPlugin):  # type: ignore[misc]  # distributed is not annotated
    """A Dask worker plugin: the worker's idle task children (fleet/task_child.py), one per worker thread, started
    warm when the plugin is set up. A child killed at a timeout is replaced by a fresh one. The state lives on the
    worker's plugin, not in a module global."""

    def setup(self, worker: Any) -> None:
        import queue

        from qwenmem.core.fleet.task_child import TaskChild

        self._idle: queue.SimpleQueue[TaskChild] = queue.SimpleQueue()
        for _ in range(worker.state.nthreads):
            self._idle.put(TaskChild())

    def run(self, target: Target, command: Command, timeout: float) -> dict[str, Any]:
        import queue

        from qwenmem.core.fleet.task_child import TaskChild

        try:
            child = self._idle.get_nowait()
        except queue.Empty:
            child = TaskChild()
        try:
            return child.run(target, command, timeout)
        finally:
            self._idle.put(child if child.alive else TaskChild())

    def teardown(self, worker: Any) -> None:
        import queue

        while True:
            try:
                self._idle.get_nowait().kill()
            except queue.Empty:
                return
