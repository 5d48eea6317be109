"""A compaction run over several sessions of either generation: one read per file, dispatch by its generation
(QwenPaw 1.x: qwenmem.core.compaction.gen1.run, 2.x: qwenmem.core.compaction.gen2.run), and the order of the work
(the read-only --check of one file is `check_one`).

Each generation's `prepare_*` reads nothing more and writes nothing: it does what needs no write (an LLM is awaited
there) and returns the step that writes (a 2.x scroll session does all its work in that step: history.db rows are
writes). With a remote LLM, up to `CompactOptions.llm_concurrency` sessions are being prepared at once; the writing
steps run one session at a time, in the order the sessions were given, so the files written do not depend on which
LLM reply came first. A real run holds the workspace lock throughout.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, Awaitable

from qwenmem.core.compaction.check import Commit, CompactReport
from qwenmem.core.compaction.context import CompactRun
from qwenmem.core.compaction.gen1.check import CheckReport, check_loaded, unusable_reason
from qwenmem.core.compaction.gen1.run import prepare_gen1
from qwenmem.core.compaction.options import CompactOptions
from qwenmem.core.errors import ChangedUnderneathError, LLMError, QwenmemError, ValidationError, WorkspaceError
from qwenmem.core.fsio import exclusive_lock
from qwenmem.core.session_model.detect import GEN2, HEAD_BYTES, sniff_generation
from qwenmem.core.sessions import LoadedSession, SessionRef, load_session
from qwenmem.core.settings import Settings
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.compaction.gen2.check import Gen2CheckReport

__all__ = ["check_one", "compact_sessions", "load_once"]


def load_once(ref: SessionRef) -> tuple[LoadedSession, bool]:
    """(the session as read, whether it is a QwenPaw 2.x file): the one read of the file a run makes before it
    writes. Its generation comes from its first bytes when they are the usual `{"agent": {"state": …`, else from
    what the loader made of it."""
    loaded = load_session(ref, keep_raw=True)
    guess = sniff_generation(loaded.raw[:HEAD_BYTES]) if loaded.raw else None
    loaded.raw = None  # only the head was needed; the document is parsed
    return loaded, (guess == GEN2 if guess is not None else loaded.gen2_doc is not None)


def check_one(run: CompactRun, ref: SessionRef) -> CheckReport | Gen2CheckReport:
    """The `--check` report of one session of either generation (CheckReport or Gen2CheckReport), from one read.
    Raises WorkspaceError when it cannot be compacted."""
    loaded, gen2 = load_once(ref)
    try:
        if gen2 and loaded.gen2_doc is not None:
            from qwenmem.core.compaction.gen2.check import check_gen2_loaded

            return check_gen2_loaded(run, ref, loaded)
        return check_loaded(run, ref, loaded)
    except RecursionError:  # a structure deeper than some step can walk: this file is reported, the others checked
        raise WorkspaceError(f"{ref.rel}: nested too deeply to check; left as it is") from None


async def _prepare(run: CompactRun, ref: SessionRef, refuse_damaged: bool) -> Commit:
    loaded, gen2 = load_once(ref)
    if gen2:  # QwenPaw 2.x: its own math and writer (qwenmem.core.compaction.gen2)
        from qwenmem.core.compaction.gen2.run import prepare_gen2

        return await prepare_gen2(run, ref, loaded)
    problem = unusable_reason(loaded)
    if problem and refuse_damaged:
        raise WorkspaceError(f"{ref.rel}: {problem}")
    return await prepare_gen1(run, ref, loaded)


def _failure(ref: SessionRef, exc: QwenmemError) -> CompactReport:
    kind = ("llm" if isinstance(exc, (LLMError, ValidationError)) else
            "changed" if isinstance(exc, ChangedUnderneathError) else "error")
    return CompactReport(ref.key, ref.rel, "failed", error=str(exc), error_kind=kind)


async def _run_all(run: CompactRun, refs: list[SessionRef], refuse_damaged: bool) -> list[CompactReport]:
    """Prepare up to `llm_concurrency` sessions at once (only an LLM makes that worth it) and commit them one at a
    time in the given order. With one session a failure propagates; with several it becomes that session's
    report and the others still run."""
    alone = len(refs) == 1
    window = max(1, run.opts.llm_concurrency) if run.chat_client is not None else 1

    async def guarded(step: Awaitable[Commit], ref: SessionRef) -> Commit:
        try:
            return await step
        except QwenmemError as exc:
            if alone:
                raise
            failed = _failure(ref, exc)
            return lambda: failed

    def commit(step: Commit, ref: SessionRef) -> CompactReport:
        try:
            return step()
        except QwenmemError as exc:
            if alone:
                raise
            return _failure(ref, exc)

    out: list[CompactReport] = []
    pending: deque[tuple[asyncio.Task[Commit], SessionRef]] = deque()
    try:
        for ref in refs:
            pending.append((asyncio.create_task(guarded(_prepare(run, ref, refuse_damaged and alone), ref)), ref))
            while len(pending) >= window:
                task, done_ref = pending.popleft()
                out.append(commit(await task, done_ref))
        while pending:
            task, done_ref = pending.popleft()
            out.append(commit(await task, done_ref))
    finally:
        for task, _ in pending:  # an interrupt or a propagated failure: nothing left half-prepared in flight
            task.cancel()
        await asyncio.gather(*(t for t, _ in pending), return_exceptions=True)
    return out


def compact_sessions(ws: Workspace, refs: list[SessionRef], settings: Settings, opts: CompactOptions,
                     refuse_damaged: bool = False) -> tuple[list[CompactReport], str]:
    """Compact several sessions under one workspace lock. Returns (reports, summarizer announcement).

    With a single session a failure propagates (exit code says why), and `refuse_damaged` makes a damaged 1.x
    session a WorkspaceError instead of a skipped report; with several, each failure is recorded in its report
    and the others still run.
    """
    run = CompactRun(ws, settings, opts)
    _ = run.summarizer  # a summarizer choice that cannot work is a usage error before anything is read
    if opts.dry_run:
        return asyncio.run(_run_all(run, refs, refuse_damaged)), run.announcement
    with exclusive_lock(ws.lock_path):
        return asyncio.run(_run_all(run, refs, refuse_damaged)), run.announcement
