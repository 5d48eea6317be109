"""The one place where core errors become exit codes. The README's exit-code table is generated from ExitCode."""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING

from qwenmem.core import errors as E

if TYPE_CHECKING:
    from typing import Any

    from qwenmem.core.events import Events
    from qwenmem.core.ops.outcome import Outcome


class ExitCode(IntEnum):
    OK = 0  # done, or nothing to do
    PROBLEMS = 1  # problems found (--check), partial success, no search results, or an internal error
    USAGE = 2  # bad arguments, unknown or ambiguous session, unsafe path
    WORKSPACE = 3  # workspace or a config file missing, unreadable or malformed
    BUSY = 4  # another qwenmem (or QwenPaw, on history.db) holds the lock, or a file changed underneath; nothing written
    LLM = 5  # the LLM endpoint failed or its reply was rejected; nothing was written
    UNSAFE_LINK = 6  # a link in the workspace leads outside it or loops: not followed, the rest was done
    DISK_FULL = 7  # no space left on the device (or quota): the file named was left as it was
    INTERRUPTED = 130  # Ctrl-C / SIGINT
    TERMINATED = 143  # SIGTERM


EXIT_CODE_HELP = {
    ExitCode.OK: "success, or nothing to do",
    ExitCode.PROBLEMS: ("problems found (e.g. `repair --check`), partial success (e.g. `reindex` with the embedder down, "
                       "`compact` with history.db locked), no results (`search`), or an internal error"),
    ExitCode.USAGE: "usage error: bad option, unknown or ambiguous session, path outside the workspace",
    ExitCode.WORKSPACE: "workspace or config file missing, unreadable or malformed",
    ExitCode.BUSY: ("busy: another qwenmem holds the lock, QwenPaw keeps history.db locked, or a file changed while we "
                    "worked (nothing written)"),
    ExitCode.LLM: "the LLM endpoint failed or its reply was rejected (nothing written)",
    ExitCode.UNSAFE_LINK: "a symlink in the workspace leads outside it or loops: it was not followed (the rest was done)",
    ExitCode.DISK_FULL: "no space left on the device: the file named was left as it was",
    ExitCode.INTERRUPTED: "interrupted (SIGINT), at a safe point: nothing half-written",
    ExitCode.TERMINATED: "terminated (SIGTERM), at a safe point: nothing half-written",
}

def classify(exc: BaseException) -> tuple[ExitCode, str]:
    """An error's exit and envelope code, as the error names them (qwenmem.core.errors); anything else is an
    internal error."""
    if isinstance(exc, E.QwenmemError):
        return ExitCode[exc.exit_as.upper()], exc.code
    return ExitCode.PROBLEMS, "internal_error"


def exit_code(status: str, events: Events, named: ExitCode | None = None) -> ExitCode:
    """The one rule from what a run ended with to its exit code: a problem with its own name (`named`: BUSY, LLM,
    USAGE ...) keeps it; otherwise a run that went on past a full disk exits DISK_FULL, past a refused link
    UNSAFE_LINK (it did the rest, and said what), else ok 0 and problems or error 1."""
    code = named if named is not None else ExitCode.OK if status == "ok" else ExitCode.PROBLEMS
    if code not in (ExitCode.OK, ExitCode.PROBLEMS):
        return code
    if events.disk_full:
        return ExitCode.DISK_FULL
    return ExitCode.UNSAFE_LINK if events.refused_links else code


def outcome_exit_code(outcome: Outcome[Any]) -> ExitCode:
    """A library operation's exit code (qwenmem.core.ops): its status, its named exit if it has one, its events."""
    named = ExitCode[outcome.exit_as.upper()] if outcome.exit_as is not None else None
    return exit_code(outcome.status, outcome.events, named)
