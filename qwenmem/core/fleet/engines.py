"""Where the tasks run: a local process pool (pebble), or a Dask distributed cluster (fleet/dask_engine.py).

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
)


class Engine(Protocol):
    name: str

    @property
    def workers(self) -> int:
        """Worker threads (local: processes) that run tasks."""
        ...

    @property
    def window(self) -> int:
        """Tasks in flight at most: enough to keep every worker busy between two answers, few enough to keep the
        driver's memory flat."""
        ...

    def take_notices(self) -> list[str]:
        """What the operator should hear of since the last call (e.g. a Dask worker that joined and was refused)."""
        ...

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


#: local tasks in flight per worker process: one running, one waiting in the pool's queue (an answer is a pipe away)
LOCAL_WINDOW_PER_WORKER = 2


class LocalEngine:
    name = "local"

    def __init__(self, jobs: int, timeout: float | None, warm_for: str | None = None) -> None:
        from pebble import ProcessPool

        self.workers = jobs
        self.window = max(2, LOCAL_WINDOW_PER_WORKER * jobs)
        self.timeout = timeout
        self._pool = ProcessPool(max_workers=jobs, initializer=functools.partial(start_worker, warm_for))

    def take_notices(self) -> list[str]:
        return []

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


@dataclass(frozen=True)
class EngineOptions:
    """Where `qwenmem fleet` runs its tasks (--engine, --jobs, --scheduler, --timeout), with the CLI's defaults;
    the flag rules are checked when the options are made, before any workspace is looked for."""

    engine: Literal["local", "dask"] = "local"
    jobs: int | None = None  # worker processes, local or of the Dask cluster started here; None: the CPU count
    scheduler: str | None = None  # the Dask scheduler's address, tcp://HOST:8786; None: start a local cluster
    timeout: float | None = None  # seconds one workspace may take; None: no limit

    def __post_init__(self) -> None:
        if self.scheduler and self.engine != "dask":
            raise UsageError("--scheduler is for --engine dask")
        if self.scheduler and self.jobs is not None:
            raise UsageError("--jobs is for the local engine or a Dask cluster started here (no --scheduler); an "
                             "existing cluster has the workers it has")

    def start(self, warm_for: str | None = None) -> Engine:
        """`warm_for`: the operation whose imports workers make before their first task (local workers, Dask
        workers or, with --timeout, their task children)."""
        jobs = self.jobs or os.cpu_count() or 1
        if self.engine == "dask":
            try:
                from qwenmem.core.fleet.dask_engine import DaskEngine  # distributed is imported only for a Dask run
            except ImportError as exc:
                if exc.name and exc.name.split(".")[0] in ("dask", "distributed"):
                    raise UsageError("--engine dask needs the fleet extra: pip install 'qwenmem[fleet]'") from None
                raise
            return DaskEngine(self.scheduler, self.timeout, jobs, warm_for)
        return LocalEngine(jobs, self.timeout, warm_for)
