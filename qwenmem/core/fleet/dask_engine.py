"""The Dask engine: fleet's tasks submitted to a distributed cluster (an existing scheduler and its workers)."""

from __future__ import annotations

from typing import Any

from qwenmem.core.errors import UsageError
from qwenmem.core.fleet.operations import Command
from qwenmem.core.fleet.targets import Target
from qwenmem.core.fleet.tasks import CRASHED, ERROR, failure, run_task_within


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
