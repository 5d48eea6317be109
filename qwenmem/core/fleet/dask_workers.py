"""The Dask workers' side of a fleet run: the gate every worker passes before it takes a task, and what a worker
that passed holds for the run (its warm task children).

`worker_gate` makes a WorkerPlugin that DaskEngine registers for the run: the scheduler sets it up on every worker
there is and on every worker that joins later (one started during the run, the one a nanny starts in place of a
killed worker). Its setup

1. says which qwenmem the worker imports (version and source digest, `qwenmem_identity`) and compares
   it with the driver's; a worker without qwenmem or with another is refused: it is told to the driver (an event
   on the run's topic, which the driver prints once, naming the worker) and gets none of the run's tasks;
2. warms the worker (`WorkerRuntime`): the command's imports (`Operation.warm`, `COMMON_WARM`), or with --timeout
   its task children (fleet/task_child.py), started with those imports done and waited for until READY;
3. only then gives the worker the run's resource (one unit per thread). Every task of the run asks for one unit,
   so the scheduler sends tasks only to workers that passed, and only once they are warm.

The plugin crosses to the workers by value (its class is made here, in a function, so cloudpickle sends its code):
a worker without qwenmem can load it and say so, where a class imported by name would fail to unpickle there.
The run's state lives on each worker's plugin, never in a module global.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import Any, TypeVar, cast

from qwenmem.core.fleet.operations import Command, warm_up
from qwenmem.core.fleet.targets import Target
from qwenmem.core.fleet.task_child import START_TIMEOUT_S, TaskChild
from qwenmem.core.fleet.tasks import CRASHED, failure, run_task

F = TypeVar("F", bound=Callable[..., Any])


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


def sent_as_code(function: F) -> F:
    """A copy of `function` that cloudpickle sends by value (its code), not by reference (a module name the worker
    would have to import: the very thing a worker without qwenmem cannot do, and so could not report). It may use
    builtins and what it imports itself, nothing else of its module; defaults are not copied."""
    import builtins
    import types

    return cast(F, types.FunctionType(function.__code__, {"__builtins__": builtins}, function.__name__))


def worker_problem(address: str, answer: Any, ours: dict[str, str]) -> str | None:
    """Why a worker cannot run this driver's tasks (no qwenmem, another version, other code), or None. Builtins
    only: the run's gate sends it to the workers as code (sent_as_code), where qwenmem may be missing."""
    if isinstance(answer, BaseException):
        return f"{address}: the check could not run there ({type(answer).__name__}: {answer})"
    if "missing" in answer:
        return f"{address}: qwenmem is not importable by {answer['python']} ({answer['missing']})"
    if answer["version"] != ours["version"]:
        return (f"{address}: qwenmem {answer['version']} at {answer['path']}, this driver runs "
                f"{ours['version']} at {ours['path']}")
    if answer["source"] != ours["source"]:
        return (f"{address}: qwenmem {answer['version']} at {answer['path']} is other code than this "
                f"driver's ({ours['path']}; source digest {answer['source']} ≠ {ours['source']})")
    return None


def worker_problems(answers: dict[str, Any], ours: dict[str, str]) -> list[str]:
    """One line per worker that cannot run this driver's tasks: no qwenmem, another version, other code."""
    return [problem for address, answer in sorted(answers.items())
            if (problem := worker_problem(address, answer, ours)) is not None]


class WorkerRuntime:
    """What a worker that passed the gate holds for the run: with --timeout (`children`), one idle task child per
    worker thread, started warm; a child killed at a timeout is replaced by a fresh one, warming while it waits."""

    def __init__(self, nthreads: int, warm_for: str | None, children: bool) -> None:
        self.warm_for = warm_for
        self.children = children
        self.closed = False
        self._idle: queue.SimpleQueue[TaskChild] = queue.SimpleQueue()
        if children:
            for _ in range(nthreads):
                self._idle.put(TaskChild(warm_for))

    def warm(self) -> str | None:
        """Blocking (a thread of the gate's setup): the imports, or the children's READY. A problem that makes the
        worker unfit (a child that dies at its start) is returned as words; a slow start is not a problem (the first
        task waits for READY, outside its timeout)."""
        if not self.children:
            if self.warm_for is not None:
                warm_up(self.warm_for)
            return None
        started: list[TaskChild] = []
        try:
            while True:
                started.append(self._idle.get_nowait())
        except queue.Empty:
            pass
        problem = None
        for child in started:
            if not child.wait_ready(START_TIMEOUT_S) and not child.alive:
                problem = "its task process did not start (" + child.exit_words() + ")"
            if self.closed:  # the run ended while this worker warmed
                child.kill()
            else:
                self._idle.put(child)
        return problem

    def run(self, target: Target, command: Command, timeout: float) -> dict[str, Any]:
        try:
            child = self._idle.get_nowait()
        except queue.Empty:
            child = TaskChild(self.warm_for)
        try:
            return child.run(target, command, timeout)
        finally:
            if self.closed:  # the run ended while this task ran: no child is kept for it
                child.kill()
            else:
                self._idle.put(child if child.alive else TaskChild(self.warm_for))

    def close(self) -> None:
        self.closed = True
        while True:
            try:
                self._idle.get_nowait().kill()
            except queue.Empty:
                return


def run_in_worker(target: Target, command: Command) -> dict[str, Any]:
    """A Dask task without --timeout: the workspace's task in the worker's thread (no copy between processes)."""
    return run_task(target, command)


def run_in_child(target: Target, command: Command, timeout: float, gate: str) -> dict[str, Any]:
    """A Dask task with --timeout: the workspace's task in one of this worker's task children."""
    from distributed import get_worker

    plugin = get_worker().plugins.get(gate)
    runtime = getattr(plugin, "runtime", None)
    if not isinstance(runtime, WorkerRuntime):  # cannot happen: only a worker that passed has the run's resource
        return failure(CRASHED, "worker_died", "this worker did not pass the run's gate")
    return runtime.run(target, command, timeout)


def worker_gate(name: str, resource: str, topic: str, ours: dict[str, str], warm_for: str | None,
                children: bool) -> Any:
    """The run's WorkerPlugin (see the module's docstring). `name` is the plugin's (one per run, so two runs on one
    cluster never replace each other's), `resource` the one its tasks ask for, `topic` where verdicts go, `ours`
    the driver's qwenmem_identity()."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class WorkerGate(WorkerPlugin):  # type: ignore[misc]  # distributed is not annotated
        # Everything in this class runs on the worker from the plugin's own pickled code: it names no qwenmem module
        # before the worker is known to have this qwenmem (builtins, its attributes and local imports only; no
        # __init__ closing over this function's imports, which cloudpickle would send by name).
        idempotent = False
        runtime: Any = None
        name: str
        resource: str
        topic: str
        ours: dict[str, str]
        warm_for: str | None
        children: bool
        identify: Any  # qwenmem_identity, as code
        judge: Any  # worker_problem, as code

        async def setup(self, worker: Any) -> None:
            import asyncio
            import logging

            address = worker.address
            try:
                problem = self.judge(address, await asyncio.to_thread(self.identify), self.ours)
                if problem is None:
                    from qwenmem.core.fleet.dask_workers import WorkerRuntime

                    self.runtime = WorkerRuntime(worker.state.nthreads, self.warm_for, self.children)
                    unfit = await asyncio.to_thread(self.runtime.warm)
                    problem = None if unfit is None else f"{address}: {unfit}"
            except Exception as exc:  # noqa: BLE001 - whatever it is, the worker is refused and the driver told
                problem = f"{address}: the check could not run there ({type(exc).__name__}: {exc})"
            if problem is not None:
                if self.runtime is not None:
                    self.runtime.close()
                    self.runtime = None
                logging.getLogger("distributed.worker").warning("qwenmem fleet: this worker takes no task: %s",
                                                                problem)
                worker.log_event(self.topic, {"verdict": "refused", "worker": address, "problem": problem})
                return
            if self.runtime is None or self.runtime.closed:  # torn down (the run ended) while it warmed
                return
            await worker.set_resources(**{self.resource: worker.state.nthreads})
            worker.log_event(self.topic, {"verdict": "ready", "worker": address,
                                          "nthreads": worker.state.nthreads})

        async def teardown(self, worker: Any) -> None:
            if self.runtime is not None:
                self.runtime.close()
                self.runtime = None
                await worker.set_resources(**{self.resource: 0})

    gate = WorkerGate()
    gate.name, gate.resource, gate.topic, gate.ours = name, resource, topic, ours
    gate.warm_for, gate.children = warm_for, children
    gate.identify = sent_as_code(qwenmem_identity)
    gate.judge = sent_as_code(worker_problem)
    return gate
