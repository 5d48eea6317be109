"""`qwenmem fleet ROOT… -- COMMAND [ARGS]`: one maintenance command over every agent workspace found.

stdout gets one JSON Lines record per workspace as it finishes (format pinned by tests/core/fleet/test_fleet.py):
  {"qwenmem_fleet": 1, "workspace": str, "agent": str|null, "command": str, "status": str, "exit_code": int,
   "attempts": int, "seconds": float, "result": object|null, "warnings": [str], "error": {"code", "message"}|null}
stderr gets the progress (qwenmem/cli/fleet_progress.py) and the final summary.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from qwenmem.cli import output
from qwenmem.cli.choices import Engine
from qwenmem.cli.fleet_progress import DEFAULT_EVERY
from qwenmem.cli.options import DryRunFlag, QuietFlag
from qwenmem.cli.result import CommandResult, Status
from qwenmem.cli.runner import command as register_command

if TYPE_CHECKING:
    from qwenmem.core.fleet import Command, FleetSummary, Target
    from qwenmem.core.fleet.engines import EngineOptions

FLEET_JSON_VERSION = 1
RECORD_KEYS = ("qwenmem_fleet", "workspace", "agent", "command", "status", "exit_code", "attempts", "seconds",
               "result", "warnings", "error")


def fleet(
    ctx: typer.Context,
    words: Annotated[list[str] | None, typer.Argument(
        help="Roots, workspaces or directories of them, then `--` and the command.", metavar="[ROOT…] -- COMMAND",
        show_default=False)] = None,
    from_file: Annotated[Path | None, typer.Option("--from", help="Read workspace paths, one a line, from "
                                                      "FILE (`-` for stdin).", show_default=False)] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Worker processes for the local "
                                                "engine, or for the Dask cluster started without --scheduler "
                                                "(default: the CPU count).")] = None,
    engine: Annotated[Engine, typer.Option("--engine", help="local (a process pool) or dask (the cluster of "
                                           "--scheduler, else one started on this machine).")] = Engine.LOCAL,
    scheduler: Annotated[str | None, typer.Option("--scheduler", help="The Dask scheduler address, e.g. "
                                                     "tcp://HOST:8786 (with --engine dask; without it, a local "
                                                     "cluster is started for the run).")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.1, help="Seconds one workspace may take "
                                                     "(default: no limit).")] = None,
    retries: Annotated[int, typer.Option("--retries", min=0, help="Retries, with backoff, for a busy workspace "
                                         "(exit 4: locked, or a file changed underneath).")] = 3,
    backoff: Annotated[float, typer.Option("--backoff", min=0.0, help="Seconds before the first retry; "
                                           "doubled each time.")] = 1.0,
    resume: Annotated[Path | None, typer.Option("--resume", help="Go on from this earlier run's JSON Lines: "
                                                   "skip the workspaces it recorded for the same command, and run "
                                                   "again those that failed (crashed, timeout, error, busy).",
                                                   show_default=False)] = None,
    retry_failed: Annotated[bool, typer.Option("--retry-failed/--no-retry-failed", help="With --resume: run "
                                               "again the workspaces whose last record failed.")] = True,
    progress_every: Annotated[float, typer.Option("--progress-every", min=0.1, metavar="SECONDS",
                                                  help="When stderr is not a terminal (a pipe, a log, cron): one "
                                                       "progress line every SECONDS. On a terminal a live bar "
                                                       "shows instead; --quiet shows neither.")] = DEFAULT_EVERY,
    dry_run: DryRunFlag = False,
    quiet: QuietFlag = False,
) -> CommandResult | None:
    """Run one maintenance command over many workspaces, in a local process pool or on a Dask cluster.

    Inputs are QwenPaw roots (every agent in each), agent workspaces, directories holding them, or a list
    (--from). Commands: doctor, sessions repair, compact, reindex, dream, history check and upgrade, called through the core library operations called in-process, not a qwenmem process per workspace.
    A busy workspace is retried with backoff; a failing one never stops the rest. Exit 1 if any workspace had
    problems. Records go to stdout; progress (a live bar on a terminal, else a line every --progress-every
    seconds) and the summary to stderr. --resume skips what an earlier run ended and runs again what failed.

    Examples:

      qwenmem fleet /srv/qwenpaw -- sessions repair --check > check.jsonl

      qwenmem fleet /srv/qwenpaw -j 4 --timeout 600 -- dream --mode deterministic

      find /srv -name config.json -printf '%h\\n' | qwenmem fleet --from - -- compact --check

      qwenmem fleet /srv/qwenpaw --resume check.jsonl -- sessions repair --check >> check.jsonl

      qwenmem fleet /srv/qwenpaw --engine dask --scheduler tcp://10.0.0.5:8786 -- reindex

      qwenmem fleet /srv/qwenpaw --engine dask -j 4 -- doctor   # a Dask cluster on this machine
    """
    from qwenmem.cli.fleet_commands import parse_command
    from qwenmem.core.errors import UsageError
    from qwenmem.core.fleet import command_words

    paths, command_line = _split(list(words or []), command_words())
    command = parse_command(ctx, command_line)  # by the single-workspace command itself: same flags, same rules
    from qwenmem.core.fleet.engines import EngineOptions

    engine_options = EngineOptions(engine.value, jobs, scheduler, timeout)
    if not paths and from_file is None:
        raise UsageError("name QwenPaw roots or workspaces before `--`, or pass --from FILE")
    targets = _targets(paths, from_file)
    if dry_run:
        _plan(targets, command.text)
        return None
    recorded = _recorded(resume, command.text) if resume else Recorded()
    if resume and not quiet:
        output.note(recorded.describe(resume, retry_failed))
    skip = recorded.skipped(retry_failed)
    return _execute(targets, command, engine_options, Pacing(retries, backoff, progress_every), skip, quiet,
                    rerun=recorded.failed if retry_failed else frozenset())


def _split(words: list[str], command_words: set[str]) -> tuple[list[Path], list[str]]:
    """The workspace list ends at the first command word (write `./dream` for a directory named like one)."""
    for i, word in enumerate(words):
        if word in command_words:
            return [Path(w) for w in words[:i]], words[i:]
    from qwenmem.core.errors import UsageError

    raise UsageError("no command given: put `--` and a command after the workspaces, e.g. "
                     "`qwenmem fleet ROOT -- sessions repair --check`")


def _targets(paths: list[Path], from_file: Path | None) -> Iterator[Target]:
    from qwenmem.core.fleet import discover, listed_paths

    def inputs() -> Iterator[Path]:
        yield from paths
        if from_file is not None:
            if str(from_file) == "-":
                yield from listed_paths(sys.stdin)
            else:
                try:
                    with open(from_file, encoding="utf-8") as stream:
                        yield from listed_paths(stream)
                except OSError as exc:
                    from qwenmem.core.errors import UsageError

                    raise UsageError(f"--from {from_file}: {exc.strerror or exc}") from None

    return discover(inputs())


def _plan(targets: Iterable[Target], command_text: str) -> None:
    n = 0
    for target in targets:
        n += 1
        _write({"qwenmem_fleet": FLEET_JSON_VERSION, "workspace": target.path, "agent": target.agent,
                "command": command_text, "status": "dry-run"})
    output.note(f"fleet: would run `{command_text}` on {n} workspace(s); nothing was run")


#: a record that says the command did not run to its end on that workspace: --resume runs it again by default
FAILED_STATUSES = frozenset({"crashed", "timeout", "error", "busy"})


@dataclass(frozen=True)
class Recorded:
    """What an earlier run's JSON Lines say, by each workspace's last record for the command."""

    done: frozenset[str] = frozenset()  # labels whose last record is ok or problems: the command ran to its end
    failed: frozenset[str] = frozenset()  # labels whose last record is one of FAILED_STATUSES

    def skipped(self, retry_failed: bool) -> frozenset[str]:
        return self.done if retry_failed else self.done | self.failed

    def describe(self, path: Path, retry_failed: bool) -> str:
        if retry_failed:
            again = f"{len(self.failed):,} that failed (crashed, timeout, error, busy) run again"
        else:
            again = f"{len(self.failed):,} that failed are skipped too (--no-retry-failed)"
        return f"fleet: resuming from {path}: {len(self.done):,} recorded workspace(s) skipped, {again}"


def _recorded(path: Path, command_text: str) -> Recorded:
    from qwenmem.core.errors import UsageError
    from qwenmem.core.fleet import Target

    last: dict[str, str] = {}  # label -> the status of its last record (a resumed run appends to the same file)
    try:
        with open(path, encoding="utf-8") as stream:
            for line in stream:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a run killed mid-line leaves a partial last line: that workspace runs again
                if isinstance(rec, dict) and rec.get("command") == command_text and rec.get("status") != "dry-run" \
                        and isinstance(rec.get("workspace"), str):
                    agent = rec.get("agent") if isinstance(rec.get("agent"), str) else None
                    last[Target(rec["workspace"], agent).label] = str(rec.get("status"))
    except OSError as exc:
        raise UsageError(f"--resume {path}: {exc.strerror or exc}") from None
    failed = frozenset(label for label, status in last.items() if status in FAILED_STATUSES)
    return Recorded(frozenset(last) - failed, failed)


def record_exit_code(record: dict[str, Any]) -> int:
    """The workspace's exit code, by the rule the single-workspace CLI exits by (cli/errors.py exit_code), so a
    link refused or a disk full in that workspace says so here too. The exit is named by the record (the
    operation's outcome, or the error the worker caught), never rebuilt from a class name."""
    from qwenmem.cli.errors import ExitCode, exit_code
    from qwenmem.core.events import Events

    status = record["status"]
    events = record.get("events") or {}
    named = ExitCode[record["exit_as"].upper()] if record.get("exit_as") else None
    if status == "busy":
        named = ExitCode.BUSY
    return int(exit_code("ok" if status == "ok" else "problems",
                         Events(tuple(events.get("refused_links", ())), tuple(events.get("disk_full", ()))), named))


def _error_code(record: dict[str, Any]) -> dict[str, str] | None:
    error = record.get("error")
    if not error:
        return None
    code = error.get("code") or (error["type"] if error["type"] in ("timeout", "worker_died", "no_answer", "cancelled")
                                 else "internal_error")
    return {"code": code, "message": error["message"]}


def _write(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")
    sys.stdout.flush()


@dataclass(frozen=True)
class Pacing:
    retries: int  # --retries
    backoff: float  # --backoff
    progress_every: float  # --progress-every


def _execute(targets: Iterable[Target], command: Command, engine_options: EngineOptions, pacing: Pacing,
             skip: frozenset[str], quiet: bool, rerun: frozenset[str]) -> CommandResult:
    from qwenmem.cli.fleet_progress import display
    from qwenmem.core.fleet import RetryPolicy, run_fleet

    engine = engine_options.start(command.name)
    notice = getattr(engine, "notice", None)  # e.g. the Dask engine saying it started a local cluster
    if notice and not quiet:
        output.note(notice)
    failures: list[str] = []
    rerun_seen: list[str] = []

    def on_record(target: Target, record: dict[str, Any], attempts: int) -> None:
        code = record_exit_code(record)
        _write({"qwenmem_fleet": FLEET_JSON_VERSION, "workspace": target.path, "agent": target.agent,
                "command": command.text, "status": record["status"], "exit_code": int(code), "attempts": attempts,
                "seconds": record["seconds"], "result": record["result"], "warnings": record["warnings"],
                "error": _error_code(record)})
        if target.label in rerun:
            rerun_seen.append(target.label)
        if record["status"] != "ok" and len(failures) < 10:
            failures.append(f"{target.label}: {record['status']}"
                            + (f", {record['error']['message']}" if record.get("error") else ""))

    shown = display(command.text, quiet, pacing.progress_every)
    try:
        summary = run_fleet(targets, command, engine, on_record, policy=RetryPolicy(pacing.retries, pacing.backoff),
                            skip=skip, on_progress=shown.update, on_notice=output.note)
    except KeyboardInterrupt:
        shown.close()
        output.note("fleet: interrupted; workspaces already recorded are done (rerun with --resume to go on)")
        raise
    shown.close()
    all_ok = summary.total == summary.statuses["ok"]
    # the records on stdout are the data; the summary is for people, on stderr (quiet hides it when all went well)
    show = not quiet or not all_ok
    return CommandResult(None, Status.OK if all_ok else Status.PROBLEMS,
                         render=(lambda: _summarize(summary, command.text, engine.name, failures, len(rerun_seen)))
                         if show else None)


def _summarize(summary: FleetSummary, command_text: str, engine_name: str, failures: list[str], rerun: int) -> None:
    rate = summary.total / summary.seconds if summary.seconds else 0.0
    parts = ", ".join(f"{n} {s}" for s, n in sorted(summary.statuses.items())) or "nothing run"
    output.note(f"fleet ({engine_name}): `{command_text}` on {summary.total} workspace(s) in {summary.seconds:.1f} s "
                f"({rate:.1f}/s): {parts}")
    if summary.skipped:
        output.note(f"  {summary.skipped} skipped: already recorded in the --resume file")
    if rerun:
        output.note(f"  {rerun} run again: they had failed in the --resume file")
    if summary.retried:
        output.note(f"  {len(summary.retried)} workspace(s) were busy and retried "
                    f"({sum(summary.retried.values())} retries)")
    for line in failures:
        output.note(f"  {line}")


def register(app: typer.Typer) -> None:
    register_command(app, "fleet")(fleet)
