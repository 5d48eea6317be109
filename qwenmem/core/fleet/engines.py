"""Where the tasks run: a local process pool (pebble) or an existing Dask distributed cluster.

Both are real engines; qwenmem only maps tasks onto them. Pebble is used instead of the standard library's pool
because it stops a task at its timeout and survives a worker that dies (the standard pool breaks as a whole).
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import os
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from qwenmem.core.errors import UsageError
from qwenmem.core.fleet.operations import Command
from qwenmem.core.fleet.targets import Target
from qwenmem.core.fleet.tasks import (
    CRASHED,
    ERROR,
    TIMEOUT,
    failure,
    run_task,
    run_task_within,
)


class Engine(Protocol):
    name: str
    workers: int

    def submit(self, target: Target, command: Command) -> Any: ...

    def wait(self, futures: list[Any], timeout: float | None) -> list[Any]: ...

    def outcome(self, future: Any) -> dict[str, Any]: ...

    def close(self, cancel: bool = False) -> None: ...


def start_worker(warm_for: str | None) -> None:
    """A local worker's start, before its first task and outside every task's timeout (pebble times a task from
    the moment a worker takes it): the signal dispositions, then the operation's imports, so neither the first
    task nor the replacement of a worker killed at a timeout pays the start-up inside its timeout."""
    from qwenmem.core.fleet.operations import warm_up
    from qwenmem.core.interrupts import quiet_worker_signals

    quiet_worker_signals()
    if warm_for is not None:
        warm_up(warm_for)


class LocalEngine:
    name = "local"

    def __init__(self, jobs: int, timeout: float | None, warm_for: str | None = None) -> None:
        from pebble import ProcessPool

        self.workers = jobs
        self.timeout = timeout
        self._pool = ProcessPool(max_workers=jobs, initializer=functools.partial(start_worker, warm_for))

    def submit(self, target: Target, command: Command) -> Any:
        return self._pool.schedule(run_task, args=(target, command), timeout=self.timeout)

    def wait(self, futures: list[Any], timeout: float | None) -> list[Any]:
        done, _ = cf.wait(futures, timeout=timeout, return_when=cf.FIRST_COMPLETED)
        return list(done)

    def outcome(self, future: Any) -> dict[str, Any]:
        from pebble import ProcessExpired

        try:
            outcome: dict[str, Any] = future.result()  # run_task's record (fleet/tasks.py)
            return outcome
        except cf.TimeoutError:
            return failure(TIMEOUT, "timeout", f"stopped after {self.timeout:g} s", self.timeout or 0.0)
        except ProcessExpired as exc:
            return failure(CRASHED, "worker_died", f"the worker process died (exit code {exc.exitcode})")
        except cf.CancelledError:
            return failure(ERROR, "cancelled", "cancelled")
        except Exception as exc:  # noqa: BLE001 - e.g. a result that could not be sent back
            return failure(ERROR, "internal", f"{type(exc).__name__}: {exc}")

    def close(self, cancel: bool = False) -> None:
        if cancel:
            self._pool.stop()  # type: ignore[no-untyped-call]  # pebble's pool methods are not annotated
        else:
            self._pool.close()  # type: ignore[no-untyped-call]  # (as above)
        self._pool.join()


class DaskEngine:
    """Submit to an existing cluster. A worker that dies mid-task costs that task only: the scheduler reruns it
    elsewhere (up to its `allowed-failures`), and each task is atomic per workspace, so a rerun is safe."""

    name = "dask"

    def __init__(self, scheduler: str, timeout: float | None) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise UsageError("--engine dask needs the fleet extra: pip install 'qwenmem[fleet]'") from None
        try:
            self._client = Client(scheduler, timeout="10s", set_as_default=False)  # type: ignore[no-untyped-call]  # distributed is not annotated
        except (OSError, TimeoutError) as exc:
            raise UsageError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
        self.timeout = timeout
        self.workers = max(1, sum(w.get("nthreads", 1) for w in self._client.scheduler_info()["workers"].values()))

    def submit(self, target: Target, command: Command) -> Any:
        return self._client.submit(run_task_within, target, command, self.timeout, pure=False)

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
            outcome: dict[str, Any] = future.result()  # run_task_within's record (fleet/tasks.py)
            return outcome
        except KilledWorker as exc:
            return failure(CRASHED, "worker_died", f"workers died running it: {exc}")
        except Exception as exc:  # noqa: BLE001
            return failure(ERROR, "internal", f"{type(exc).__name__}: {exc}")

    def close(self, cancel: bool = False) -> None:
        self._client.close()  # type: ignore[no-untyped-call]  # distributed is not annotated


@dataclass(frozen=True)
class EngineOptions:
    """Where `qwenmem fleet` runs its tasks (--engine, --jobs, --scheduler, --timeout), with the CLI's defaults;
    the flag rules are checked when the options are made, before any workspace is looked for."""

    engine: Literal["local", "dask"] = "local"
    jobs: int | None = None  # local worker processes; None: the CPU count
    scheduler: str | None = None  # the Dask scheduler's address, tcp://HOST:8786
    timeout: float | None = None  # seconds one workspace may take; None: no limit

    def __post_init__(self) -> None:
        if self.engine == "dask" and not self.scheduler:
            raise UsageError("--engine dask needs --scheduler tcp://HOST:8786 (an existing cluster)")
        if self.scheduler and self.engine != "dask":
            raise UsageError("--scheduler is for --engine dask")

    def start(self, warm_for: str | None = None) -> Engine:
        """`warm_for`: the operation whose imports local workers make before their first task."""
        if self.engine == "dask":
            assert self.scheduler is not None  # refused when made
            return DaskEngine(self.scheduler, self.timeout)
        return LocalEngine(self.jobs or os.cpu_count() or 1, self.timeout, warm_for)
