"""Pool workers inherit the CLI's SIGINT/SIGTERM handlers through fork. The pool ends its workers with SIGTERM at
every normal shutdown, so a worker that still raised `Interrupted` printed a traceback from inside the pool
(seen once in five `doctor` runs on 1,000 sessions). Workers must ignore SIGINT and die quietly on SIGTERM."""

from __future__ import annotations

import multiprocessing as mp
import signal


def _dispositions(_: int) -> tuple[int, int]:
    return int(signal.getsignal(signal.SIGINT)), int(signal.getsignal(signal.SIGTERM))  # type: ignore[arg-type]


def test_listing_workers_reset_the_cli_handlers():
    from qwenmem.cli import signals as cli_signals
    from qwenmem.core import listing

    previous = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    cli_signals.install()
    try:
        assert callable(signal.getsignal(signal.SIGTERM))  # the parent's handler is a Python function
        with mp.get_context("fork").Pool(1, listing._init_worker) as pool:
            got = pool.map(_dispositions, [0])[0]
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
    assert got == (int(signal.SIG_IGN), int(signal.SIG_DFL))


def test_fleet_workers_reset_the_cli_handlers():
    from qwenmem.cli import signals as cli_signals
    from qwenmem.core.fleet.engines import LocalEngine

    previous = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    cli_signals.install()
    try:
        engine = LocalEngine(1, None)
        got = engine._pool.schedule(_dispositions, args=(0,)).result(timeout=60)
        engine.close()
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
    assert got == (int(signal.SIG_IGN), int(signal.SIG_DFL))
