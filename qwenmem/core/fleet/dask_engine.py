"""The Dask engine: fleet's tasks on a distributed cluster, an existing one (--scheduler) or one started here.

Before any task runs, every worker says which qwenmem it imports: a worker without qwenmem, or with another
version or other code, is named (address, what it has) in a UsageError, instead of failing every task it gets.
Then the run's gate (fleet/dask_workers.py) is set up on every worker, and on every worker that joins later: it
checks the worker the same way, warms it, and only then lets the scheduler send it the run's tasks; a late joiner
that cannot run them gets none, and the driver says so once (`take_notices`).

With --timeout, each task runs in a child process of its worker (fleet/task_child.py says why), killed at the
timeout. Without --timeout the task runs in the worker's thread: no copy of the task and its result between
processes.

No wait of the driver is without a limit. Results are gathered in batches, each within `Patience.gather_s`; a
result lost with its worker is not waited for (Dask computes it again and it comes back as a new answer). When
no answer comes, the driver asks the scheduler where its oldest tasks are (`cluster_state`): a task the scheduler
no longer knows, or (with --timeout) one that runs past its timeout or sits on a worker that has stopped answering,
gets a `crashed` record (`no_answer`) instead of being waited for; a cluster with no worker able to run the run's
tasks for `Patience.no_worker_s` (or a scheduler that does not answer that long) ends the run with a UsageError.
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import distributed  # noqa: F401  # here, so a missing fleet extra is one ImportError (EngineOptions.start names it)

from qwenmem.core.errors import UsageError
from qwenmem.core.fleet.dask_workers import qwenmem_identity, sent_as_code, worker_problems
from qwenmem.core.fleet.operations import Command
from qwenmem.core.fleet.targets import Target
from qwenmem.core.fleet.task_child import START_TIMEOUT_S
from qwenmem.core.fleet.tasks import CRASHED, ERROR, failure

WORKERS_WAIT_S = 10.0  # how long a scheduler may have no worker before the run is refused
WORKER_CHECK_S = 30.0  # how long every worker has to say which qwenmem it imports
GATE_REMOVAL_S = 5.0  # how long the end of a run waits for the workers to take its gate down
#: tasks in flight per worker thread: a Dask answer costs a round trip through the scheduler, which the window
#: hides (bench/speed/fleet_window.py); each one in flight is a future and a target in the driver, some 2 KB
WINDOW_PER_THREAD = 8
WINDOW_MAX = 4096


@dataclass(frozen=True)
class Patience:
    """How long the Dask driver waits for what, in seconds (tests shorten them)."""

    start_s: float = START_TIMEOUT_S  # a task child's start, which a task may wait for outside its timeout
    grace_s: float = 30.0  # on top of --timeout and the start, before a task is known not to answer
    probe_every_s: float = 15.0  # without an answer for this long, the scheduler is asked where the tasks are
    no_worker_s: float = 300.0  # no worker able to run the tasks (or no answer from the scheduler) this long: stop
    gather_s: float = 60.0  # for one batch of results

    def limit(self, timeout: float) -> float:
        """How long a task may run, or its worker stay silent, with --timeout before it is given up on."""
        return timeout + self.start_s + self.grace_s


def cluster_state(resource: str, keys: list[str], dask_scheduler: Any = None) -> dict[str, Any]:
    """On the scheduler (sent as code: the scheduler may have no qwenmem): the workers that can run the run's
    tasks (they hold its resource) with their threads, and where each of `keys` is: its state, the worker it is
    processing on, how long it has been executing there and how long that worker has been silent."""
    import time

    scheduler, now = dask_scheduler, time.time()
    workers = {address: quantity for address, quantity in scheduler.resources.get(resource, {}).items()
               if quantity > 0 and address in scheduler.workers}
    tasks: dict[str, Any] = {}
    for key in keys:
        task = scheduler.tasks.get(key)
        on = None if task is None else task.processing_on
        tasks[key] = None if task is None else {
            "dask_state": task.state, "worker": None if on is None else on.address,
            "executing": None if on is None else on.executing.get(task),
            "silent": None if on is None else now - on.last_seen,
            "held_by": {holder.address: now - holder.last_seen for holder in task.who_has or ()}}
    return {"workers": workers, "tasks": tasks}


class DaskEngine:
    """Submit to a cluster. A worker that dies mid-task costs that task only: the scheduler reruns it elsewhere
    (up to its `allowed-failures`), and each task is atomic per workspace, so a rerun is safe; past that the
    record is `crashed`. `scheduler=None` starts a LocalCluster of `jobs` worker processes on this machine."""

    name = "dask"

    def __init__(self, scheduler: str | None, timeout: float | None, jobs: int = 1, warm_for: str | None = None,
                 patience: Patience | None = None) -> None:
        from distributed import Client

        from qwenmem.core.fleet.dask_workers import worker_gate

        self.timeout = timeout
        self.patience = patience or Patience()
        self.notice: str | None = None
        self._cluster: Any = None
        run = uuid.uuid4().hex[:12]
        # one per run: two runs on one cluster neither replace each other's gate nor take each other's workers
        self._gate = self._resource = self._topic = f"qwenmem-fleet-{run}"
        self._events: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()  # verdicts, from the client's loop
        self._notices: list[str] = []
        self._refused: set[str] = set()
        self._threads: dict[str, int] = {}  # worker -> threads, of the workers that passed the gate
        self._pending: dict[Any, float | None] = {}  # in submission order -> when it became one of the oldest
        self._records: dict[Any, dict[str, Any]] = {}  # answered (or given up on), not yet taken by outcome()
        self._suspects: set[Any] = set()  # finished, but their results did not come when asked
        self._last_suspects_try = 0.0
        self._last_answer = self._last_probe = time.monotonic()
        self._no_worker_since: float | None = None
        self._silent_since: float | None = None
        if scheduler is None:
            scheduler = self._start_local_cluster(jobs)
        self._address = scheduler
        try:
            self._client = Client(scheduler, timeout="10s", set_as_default=False)  # type: ignore[no-untyped-call]  # distributed is not annotated
        except (OSError, TimeoutError) as exc:
            self._close_cluster()
            raise UsageError(f"cannot reach the Dask scheduler {scheduler}: {exc}") from None
        try:
            nthreads = self._check_workers(scheduler)
            self._client.subscribe_topic(self._topic, lambda event: self._events.put(event[1]))  # type: ignore[no-untyped-call]  # (as above)
            gate = worker_gate(self._gate, self._resource, self._topic, qwenmem_identity(), warm_for,
                               children=timeout is not None)
            # returns once every worker's setup has ended (the check, the warm-up, the task children's READY)
            within(lambda: self._client.register_plugin(gate, name=self._gate),  # type: ignore[no-untyped-call]  # (as above)
                   WORKER_CHECK_S + 2 * self.patience.start_s,
                   f"the workers of {scheduler} did not finish setting up for the run")
        except BaseException:
            self.close()
            raise
        self._threads = dict(nthreads)
        self._take_events()

    @property
    def workers(self) -> int:
        """Threads of the workers that can run the run's tasks (the ones that passed its gate)."""
        return max(1, sum(self._threads.values()))

    @property
    def window(self) -> int:
        return min(WINDOW_MAX, WINDOW_PER_THREAD * self.workers)

    def _start_local_cluster(self, jobs: int) -> str:
        from distributed import LocalCluster

        # processes, one thread each: the operations are CPU-bound Python, which threads would serialise
        self._cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,  # type: ignore[no-untyped-call]  # (as above)
                                     dashboard_address=None, host="127.0.0.1", silence_logs=logging.ERROR)
        address: str = self._cluster.scheduler_address
        self.notice = (f"fleet: no --scheduler given: started a local Dask cluster of {jobs} worker process(es) at "
                       f"{address}, stopped when the run ends")
        return address

    def _check_workers(self, scheduler: str) -> dict[str, int]:
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
        nthreads: dict[str, int] = self._client.nthreads()  # type: ignore[no-untyped-call]  # (as above)
        return {address: n for address, n in nthreads.items() if address in answers}

    def submit(self, target: Target, command: Command) -> Any:
        from qwenmem.core.fleet.dask_workers import run_in_child, run_in_worker

        # the worker's working directory is not the driver's: a relative path would name another workspace there
        where = Target(os.path.abspath(target.path), target.agent)
        need = {self._resource: 1}  # only a worker that passed the run's gate, warm, holds it
        if self.timeout is None:
            future = self._client.submit(run_in_worker, where, command, pure=False, resources=need)
        else:
            future = self._client.submit(run_in_child, where, command, self.timeout, self._gate, pure=False,
                                         resources=need)
        self._pending[future] = None
        return future

    def wait(self, futures: list[Any], timeout: float | None) -> list[Any]:
        """Up to `timeout` seconds for answers (or answers given up on); never longer, whatever the cluster does."""
        from distributed import wait

        self._take_events()
        waiting = [f for f in futures if not f.done()]  # a suspect (done, its result not come) is not waited on
        if not any(f in self._records for f in futures) and not any(f.done() and f not in self._suspects
                                                                    for f in futures):
            if waiting:
                try:
                    with self._client.as_current():
                        wait(waiting, timeout=timeout, return_when="FIRST_COMPLETED")  # type: ignore[no-untyped-call]  # (as above)
                except Exception:  # noqa: BLE001 - a timeout, or futures the cluster cancelled: both are looked at below
                    pass
            elif timeout:
                time.sleep(timeout)
        # done() is an answer there; a status other than pending is not (a result lost with its worker is "lost",
        # which distributed.wait counts as done, and whose result() would wait for Dask to compute it again)
        self._collect([f for f in futures if f.done() and f not in self._records])
        self._watch(futures)
        return [f for f in futures if f in self._records]

    def outcome(self, future: Any) -> dict[str, Any]:
        self._pending.pop(future, None)
        return self._records.pop(future)

    def take_notices(self) -> list[str]:
        """What the operator should hear of since the last call (e.g. a worker that joined and was refused)."""
        self._take_events()
        notices, self._notices = self._notices, []
        return notices

    def _take_events(self) -> None:
        while True:
            try:
                event = self._events.get_nowait()
            except queue.Empty:
                return
            worker = str(event.get("worker"))
            if event.get("verdict") == "ready":
                self._threads[worker] = int(event.get("nthreads") or 1)
            elif worker not in self._refused:
                self._refused.add(worker)
                self._threads.pop(worker, None)
                self._notices.append(f"fleet: a Dask worker that cannot run this fleet joined; it gets no task: "
                                     f"{event.get('problem')}")

    def _collect(self, done: list[Any]) -> None:
        """The answers of `done`, into `_records`. Results come in one batch through the scheduler (one round trip
        for all of them, within gather_s). A batch that could not be gathered in time (its worker stopped answering,
        or a result was lost meanwhile) makes its futures suspects, gathered apart from the fresh ones, at most
        every probe_every_s, until they come or the backstop gives them up."""
        from distributed import KilledWorker

        for future in done:
            if future.status == "error":
                exc = future.exception(timeout=self.patience.gather_s)
                self._answer(future, failure(CRASHED, "worker_died", f"workers died running it: {exc}")
                             if isinstance(exc, KilledWorker) else failure(ERROR, "internal",
                                                                           f"{type(exc).__name__}: {exc}"))
            elif future.status == "cancelled":
                self._answer(future, failure(ERROR, "cancelled", "cancelled by the Dask cluster"))
        finished = [f for f in done if f.status == "finished" and f not in self._records]
        fresh = [f for f in finished if f not in self._suspects]
        if fresh and not self._gather(fresh):
            self._suspects.update(fresh)
        suspects = [f for f in finished if f in self._suspects]
        now = time.monotonic()
        if suspects and now - self._last_suspects_try >= self.patience.probe_every_s:
            self._last_suspects_try = now
            self._gather(suspects)

    def _gather(self, futures: list[Any]) -> bool:
        """Whether the results of `futures` came within gather_s (each one that came is answered)."""
        batch = dict(enumerate(futures))
        try:
            results = self._client.sync(lambda: self._client.gather(batch, errors="skip", asynchronous=True),  # type: ignore[no-untyped-call]  # (as above)
                                        callback_timeout=self.patience.gather_s)
        except Exception:  # noqa: BLE001 - e.g. the timeout: these futures are asked again later
            return False
        for i, future in batch.items():
            if results.get(i) is not None:  # run_task's record (fleet/tasks.py)
                self._answer(future, results[i])
        return True

    def _answer(self, future: Any, record: dict[str, Any]) -> None:
        self._records[future] = record
        self._pending.pop(future, None)
        self._suspects.discard(future)
        self._last_answer = time.monotonic()

    def _watch(self, futures: list[Any]) -> None:
        """The backstop: the oldest tasks (one per thread) start a clock; past the patience, or without any answer
        for probe_every_s, the scheduler is asked where they are, and what cannot answer any more is given up."""
        now = time.monotonic()
        heads: list[tuple[Any, float]] = []
        for future, since in self._pending.items():
            if len(heads) >= self.workers:
                break
            if future not in self._records:
                if since is None:
                    self._pending[future] = since = now
                heads.append((future, since))
        limit = None if self.timeout is None else self.patience.limit(self.timeout)
        overdue = limit is not None and any(now - since > limit for _, since in heads)
        quiet = bool(futures) and now - self._last_answer > self.patience.probe_every_s
        if (overdue or quiet) and now - self._last_probe >= self.patience.probe_every_s:
            self._last_probe = now
            self._probe(heads, now, limit)

    def _probe(self, heads: list[tuple[Any, float]], now: float, limit: float | None) -> None:
        keys = [str(future.key) for future, since in heads if now - since >= self.patience.probe_every_s]
        try:
            state = self._client.sync(lambda: self._client.run_on_scheduler(  # type: ignore[no-untyped-call]  # (as above)
                sent_as_code(cluster_state), self._resource, keys, asynchronous=True),
                callback_timeout=self.patience.probe_every_s)
        except Exception as exc:  # noqa: BLE001 - no answer: the scheduler's silence is bounded too
            self._silent_since = self._silent_since or now
            if now - self._silent_since > self.patience.no_worker_s:
                raise UsageError(f"the Dask scheduler {self._address} has not answered for "
                                 f"{now - self._silent_since:.0f} s ({type(exc).__name__}: {exc}); stopped: "
                                 "rerun with --resume to go on") from None
            return
        self._silent_since = None
        self._threads = {address: int(n) for address, n in state["workers"].items()}
        if not self._threads:
            if self._no_worker_since is None:
                self._no_worker_since = now
                self._notices.append(f"fleet: no Dask worker of {self._address} can run this fleet's tasks now; "
                                     f"waiting up to {self.patience.no_worker_s:g} s for one")
            elif now - self._no_worker_since > self.patience.no_worker_s:
                raise UsageError(f"no Dask worker of {self._address} could run this fleet's tasks for "
                                 f"{now - self._no_worker_since:.0f} s; stopped: rerun with --resume to go on")
        else:
            self._no_worker_since = None
        for future, _ in heads:
            why = given_up(state["tasks"].get(str(future.key), False), limit)
            if why is not None:
                self._answer(future, failure(CRASHED, "no_answer", why))

    def close(self, cancel: bool = False) -> None:
        """Take the run's gate off the cluster (its workers' task children end, its resource goes), then leave."""
        client: Any = getattr(self, "_client", None)
        if client is not None:
            for step, name in ((client.unsubscribe_topic, self._topic), (client.unregister_worker_plugin, self._gate)):
                # Bounded, and short: the scheduler drops the gate (no worker that joins later gets it) before it
                # tells the workers, and a worker still starting, or one that stopped answering, must not hold
                # the end of the run; such a worker tears the gate down (its task children) when it gets there.
                try:
                    within(functools.partial(step, name), GATE_REMOVAL_S, "the run's gate was not removed")
                except Exception:  # noqa: BLE001 - never registered (a refused start), or the cluster is gone
                    pass
            client.close()
        self._close_cluster()

    def _close_cluster(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


def within(call: Callable[[], Any], seconds: float, what: str) -> Any:
    """`call()`'s result, or a UsageError saying `what` when it has not returned within `seconds`: for the calls of
    distributed that take no timeout (they wait for every worker). The call goes on in a daemon thread."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append((True, call()))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box.append((False, exc))

    thread = threading.Thread(target=run, name="qwenmem-fleet dask call", daemon=True)
    thread.start()
    thread.join(seconds)
    if not box:
        raise UsageError(f"{what} within {seconds:g} s")
    ok, value = box[0]
    if not ok:
        raise value
    return value


def given_up(task: Any, limit: float | None) -> str | None:
    """Why a task the driver has had no answer for is to be given up on (`task`: cluster_state's words for it,
    False when it was not asked about), or None to go on waiting. Without --timeout (`limit` None) only a task
    the scheduler no longer knows is: a long task may be a long workspace."""
    if task is False:
        return None
    if task is None:
        return "no answer: the Dask scheduler no longer knows this task"
    if limit is None:
        return None
    held_by = task.get("held_by") or {}
    if task["dask_state"] == "memory" and held_by and min(held_by.values()) > limit:
        return (f"no answer: its result is on {', '.join(sorted(held_by))}, which has not answered the scheduler "
                f"for {min(held_by.values()):.0f} s")
    if task["dask_state"] != "processing":
        return None
    if task["executing"] is not None and task["executing"] > limit:
        return (f"no answer: it has been running for {task['executing']:.0f} s on {task['worker']}, past its "
                f"timeout; that worker does not answer for it")
    if task["silent"] is not None and task["silent"] > limit:
        return f"no answer: its worker {task['worker']} has not answered the scheduler for {task['silent']:.0f} s"
    return None
