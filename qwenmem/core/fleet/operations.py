"""The maintenance commands a fleet run can apply to one workspace, called through the core library directly.

Each operation parses the same arguments as its single-workspace command (the subset that makes sense unattended),
runs the core function, and returns an `Outcome` of plain data, so it crosses a process pool or a Dask cluster
unchanged. The `result` is the document the command's own `--json` prints under `result`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from qwenmem.core.errors import UsageError
from qwenmem.core.fleet.plain import to_plain
from qwenmem.core.workspace import Workspace

OK, PROBLEMS = "ok", "problems"


@dataclass(frozen=True)
class Outcome:
    status: str  # ok | problems
    result: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Operation:
    name: str  # as typed after `--`, e.g. "sessions repair"
    usage: str
    build: Callable[[argparse.ArgumentParser], None]
    run: Callable[[Workspace, argparse.Namespace], Outcome]
    validate: Callable[[argparse.Namespace], None] = lambda ns: None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse would print usage and sys.exit(2) inside a worker
        raise UsageError(f"{self.prog}: {message}")


def _repair_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true")
    p.add_argument("--all", dest="all_", action="store_true")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--fix-tool-pairs", action="store_true")


def _repair_validate(ns: argparse.Namespace) -> None:
    if ns.check == ns.all_:
        raise UsageError("fleet -- sessions repair takes --check or --all (with --dry-run to only plan)")
    if ns.check and ns.dry_run:
        raise UsageError("--check and --dry-run are alternatives; use one")


def _repair(ws: Workspace, ns: argparse.Namespace) -> Outcome:
    from qwenmem.core.repair import CHECK, DRY_RUN, REPAIR, run_repair
    from qwenmem.core.sessions import iter_session_refs

    mode = CHECK if ns.check else DRY_RUN if ns.dry_run else REPAIR
    run = run_repair(ws, list(iter_session_refs(ws)), mode, ns.fix_tool_pairs)
    if run.changed_underneath:
        from qwenmem.core.errors import ChangedUnderneathError

        changed = [f.key for f in run.files if f.status == "changed"]
        raise ChangedUnderneathError(f"changed while repairing: {', '.join(changed)}")
    result = {"workspace": run.workspace, "mode": run.mode, "run": run.run_id, "quarantine": run.quarantine,
              "counts": run.counts, "statuses": run.statuses, "files": to_plain(run.files)}
    return Outcome(PROBLEMS if run.needs_attention else OK, result)


def _compact_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true")
    p.add_argument("--all", dest="all_", action="store_true")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--summarizer", choices=("auto", "llm", "extractive"), default="auto")
    p.add_argument("--no-longterm", dest="longterm", action="store_false")


def _compact_validate(ns: argparse.Namespace) -> None:
    if ns.check == ns.all_:
        raise UsageError("fleet -- compact takes --check or --all (with --dry-run to only plan)")


def _compact(ws: Workspace, ns: argparse.Namespace) -> Outcome:
    from qwenmem.core.compaction.run import (
        CompactOptions,
        check_session,
        compact_sessions,
    )
    from qwenmem.core.errors import WorkspaceError
    from qwenmem.core.sessions import iter_session_refs
    from qwenmem.core.settings import load_settings

    settings = load_settings(ws)
    opts = CompactOptions(dry_run=ns.dry_run, summarizer=ns.summarizer, longterm=ns.longterm)
    refs = [r for r in iter_session_refs(ws) if ns.check or not r.stale_flat_copy]
    warnings: list[str] = []
    if ns.check:
        reports = []
        for ref in refs:
            try:
                reports.append(check_session(ws, ref, settings, opts))
            except WorkspaceError as exc:
                warnings.append(str(exc))
        result = {"workspace": str(ws.path), "config_layout": settings.config_layout, "sessions": to_plain(reports)}
        return Outcome(PROBLEMS if warnings else OK, result, warnings)
    if ns.summarizer != "extractive":
        from qwenmem.core.llm import resolve_llm_config

        opts.llm = resolve_llm_config(ws, settings, None, None, None, None)
    done, _ = compact_sessions(ws, refs, settings, opts)
    bad = [r for r in done if r.status in ("failed", "skipped")]
    warnings = [f"{r.key}: {w}" for r in done for w in r.warnings]
    warnings += [f"{r.key}: {r.status}, {r.error}" for r in bad]
    result = {"workspace": str(ws.path), "dry_run": ns.dry_run, "sessions": to_plain(done)}
    return Outcome(PROBLEMS if bad else OK, result, warnings)


def _reindex_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--full", action="store_true")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--embedder", default=None)
    p.add_argument("--model", default=None)
    p.add_argument("--sources", default=None)
    p.add_argument("--recursive", action="store_true")


def _reindex(ws: Workspace, ns: argparse.Namespace) -> Outcome:
    from qwenmem.core.index import reindex
    from qwenmem.core.settings import load_settings

    result = reindex(ws, load_settings(ws), full=ns.full, sources=ns.sources, recursive=ns.recursive,
                     backend=ns.embedder, model=ns.model, dry_run=ns.dry_run)
    return Outcome(OK, to_plain(result), list(result.notices))


def _dream_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--date", default=None)
    p.add_argument("--mode", choices=("auto", "llm", "deterministic"), default="auto")
    p.add_argument("--keep", type=int, default=None)


def _dream(ws: Workspace, ns: argparse.Namespace) -> Outcome:
    from qwenmem.core.dream.run import DreamOptions, dream
    from qwenmem.core.settings import load_settings

    settings = load_settings(ws)
    llm = None
    if ns.mode != "deterministic":
        from qwenmem.core.llm import resolve_llm_config

        llm = resolve_llm_config(ws, settings, None, None, None, None)
        if llm is None and ns.mode == "llm":
            raise UsageError("--mode llm: no LLM configured for this workspace")
    result = dream(ws, settings, DreamOptions(date=ns.date, dry_run=ns.dry_run, keep=ns.keep, llm=llm))
    return Outcome(OK, to_plain(result), list(result.warnings))


def _doctor_args(p: argparse.ArgumentParser) -> None:
    """doctor takes no options of its own."""


def _doctor(ws: Workspace, ns: argparse.Namespace) -> Outcome:
    from qwenmem.core.doctor import run_doctor, to_json

    report = run_doctor(ws.path)
    return Outcome(PROBLEMS if report.needs_attention else OK, to_json(report))


def _history_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--deep", action="store_true")


def _history_check(ws: Workspace, ns: argparse.Namespace) -> Outcome:
    from qwenmem.core.history.check import check_history
    from qwenmem.core.history.maintain import live_history_path
    from qwenmem.core.settings2 import load_gen2_settings

    from qwenmem.core.session_rows import rows_locator

    result = check_history(live_history_path(ws), ws.sessions_dir, load_gen2_settings(ws).history_retention_days,
                           deep=ns.deep, locate=rows_locator(ws))
    return Outcome(PROBLEMS if result.needs_attention else OK, to_plain(result))


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation("doctor", "doctor", _doctor_args, _doctor),
        Operation("sessions repair", "sessions repair --check | --all [--dry-run] [--fix-tool-pairs]",
                  _repair_args, _repair, _repair_validate),
        Operation("compact", "compact --check | --all [--dry-run] [--summarizer auto|llm|extractive] [--no-longterm]",
                  _compact_args, _compact, _compact_validate),
        Operation("reindex", "reindex [--full] [--dry-run] [--embedder NAME] [--model NAME] [--sources LIST] "
                             "[--recursive]", _reindex_args, _reindex),
        Operation("dream", "dream [--dry-run] [--date DATE] [--mode auto|llm|deterministic] [--keep N]",
                  _dream_args, _dream),
        Operation("history check", "history check [--deep]", _history_args, _history_check),
    )
}


@dataclass(frozen=True)
class Command:
    """A parsed command line after `--`: the operation and its arguments, checked once in the driver."""

    name: str
    argv: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join((self.name, *self.argv))


def parser_for(op: Operation) -> argparse.ArgumentParser:
    p = _Parser(prog=f"qwenmem fleet -- {op.name}", add_help=False, allow_abbrev=False)
    op.build(p)
    return p


def parse_command(words: list[str]) -> tuple[Command, argparse.Namespace]:
    """Split `sessions repair --check` into the operation and its options; a usage error names what is supported."""
    for n in (2, 1):
        name = " ".join(words[:n])
        if len(words) >= n and name in OPERATIONS:
            op = OPERATIONS[name]
            ns = parser_for(op).parse_args(words[n:])
            op.validate(ns)
            return Command(name, tuple(words[n:])), ns
    supported = "; ".join(op.usage for op in OPERATIONS.values())
    given = " ".join(words) or "nothing"
    raise UsageError(f"fleet cannot run {given!r}; it runs: {supported}")


def command_words() -> set[str]:
    """The first words of the operations: where the workspace list ends on the command line."""
    return {name.split()[0] for name in OPERATIONS}
