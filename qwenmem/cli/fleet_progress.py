"""What `qwenmem fleet` shows on stderr while it runs: a live bar on a terminal, a plain line every N seconds when
stderr is a pipe or a log (cron), nothing with --quiet. Core reports where the run is (qwenmem.core.fleet.run's
Progress); how that looks is decided here, so Rich stays out of core. The records on stdout are not touched."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from qwenmem.cli import output

if TYPE_CHECKING:
    from qwenmem.core.fleet.run import Progress

#: --progress-every's default: often enough to see a run is alive in a cron mail or a log, rarely enough to stay short
DEFAULT_EVERY = 30.0


class Display(Protocol):
    def update(self, progress: Progress) -> None: ...

    def close(self) -> None: ...


class Silent:
    def update(self, progress: Progress) -> None:
        pass

    def close(self) -> None:
        pass


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    whole = int(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def counts(progress: Progress) -> str:
    """`120/1,000 done` once the total is known; while workspaces are still being found, how many so far."""
    if progress.total is None:
        return f"{progress.done:,} done of {progress.found - progress.skipped:,} found so far (still finding)"
    return f"{progress.done:,}/{progress.total:,} done"


def line(progress: Progress) -> str:
    return (f"fleet: {counts(progress)}, {progress.failed:,} failed, {progress.problems:,} with problems, "
            f"{progress.in_flight} running, {progress.rate:.1f}/s, ETA {duration(progress.eta)}")


class Lines:
    """One plain line every `every` seconds (the first after `every` seconds: a short run prints only its
    summary), for a pipe, a log file or cron."""

    def __init__(self, every: float) -> None:
        self.every = every
        self._next = time.monotonic() + every

    def update(self, progress: Progress) -> None:
        now = time.monotonic()
        if now >= self._next:
            output.note(line(progress))
            self._next = now + self.every

    def close(self) -> None:
        pass


class Live:
    """A Rich progress bar on the terminal stderr is: done/total, failed, problems, rate and ETA."""

    def __init__(self, command_text: str) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(TextColumn("fleet [bold]{task.description}[/bold]"), BarColumn(),
                             TextColumn("{task.fields[counts]}, [red]{task.fields[failed]} failed[/red], "
                                        "{task.fields[problems]} with problems, {task.fields[rate]}/s"),
                             TimeElapsedColumn(), TextColumn("ETA {task.fields[eta]}"),
                             console=output.err(), transient=False, refresh_per_second=4,
                             redirect_stdout=False, redirect_stderr=False)
        self._task = self._bar.add_task(output.escape(command_text), total=None, **self._fields(None))
        self._bar.start()

    @staticmethod
    def _fields(progress: Progress | None) -> dict[str, Any]:
        if progress is None:
            return {"counts": "starting", "failed": 0, "problems": 0, "rate": "0.0", "eta": "?"}
        return {"counts": counts(progress), "failed": f"{progress.failed:,}", "problems": f"{progress.problems:,}",
                "rate": f"{progress.rate:.1f}", "eta": duration(progress.eta)}

    def update(self, progress: Progress) -> None:
        self._bar.update(self._task, completed=progress.done, total=progress.total, **self._fields(progress))

    def close(self) -> None:
        self._bar.stop()


def display(command_text: str, quiet: bool, every: float) -> Display:
    if quiet:
        return Silent()
    if output.err().is_terminal:
        return Live(command_text)
    return Lines(every)
