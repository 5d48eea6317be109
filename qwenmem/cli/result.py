"""The typed result every command returns; qwenmem/cli/runner.py renders it (Rich or the JSON envelope) and exits.

A command never prints its own JSON and never picks an exit code by hand: it returns a CommandResult whose status
is ok, problems or error, with warnings and coded errors, and a `render` function for people.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from qwenmem.cli.errors import ExitCode, classify, outcome_exit_code

if TYPE_CHECKING:
    from qwenmem.core.ops.outcome import Outcome


class Status(str, Enum):
    """The envelope's `status` word."""

    OK = "ok"
    PROBLEMS = "problems"
    ERROR = "error"


@dataclass(frozen=True)
class ErrorItem:
    """One entry of the envelope's `errors` list."""

    code: str
    message: str


@dataclass
class CommandResult:
    """What a command hands to the runner.

    `data` is the envelope's `result` (a dataclass or a mapping, serialised by output.to_json); `render` shows it
    to people on stdout. `exit_code` defaults to the status's code (ok 0, problems 1); a command sets it only when
    a problem has its own name (BUSY for a file that changed, LLM for a rejected reply).
    """

    data: Any
    status: Status = Status.OK
    warnings: list[str] = field(default_factory=list)
    errors: list[ErrorItem] = field(default_factory=list)
    exit_code: ExitCode | None = None
    render: Callable[[], None] | None = None
    command: str | None = None  # the envelope's `command`; the runner fills in the command path when None
    quiet: bool = False  # --quiet: no warnings for people (errors are still shown); `render` decides on its own
    warnings_as_notes: bool = False  # shown to people as plain notes, without "warning:" (search, reindex)
    warnings_first: bool = False  # people read the warning before the output it qualifies (show, dream)

    @property
    def code(self) -> ExitCode:
        if self.exit_code is not None:
            return self.exit_code
        return ExitCode.OK if self.status is Status.OK else ExitCode.PROBLEMS

    @classmethod
    def of(cls, outcome: Outcome[Any], **view: Any) -> CommandResult:
        """A library operation's Outcome (qwenmem.core.ops) as the result; `view` is how people see it (render,
        command, quiet ...). Its exit code is errors.exit_code of the outcome, as fleet's record's is."""
        return cls(outcome.data, Status(outcome.status), warnings=list(outcome.warnings),
                   errors=[ErrorItem(e.code, e.message) for e in outcome.errors],
                   exit_code=outcome_exit_code(outcome), **view)

    @classmethod
    def failure(cls, exc: BaseException, command: str | None = None) -> CommandResult:
        """A core failure (an exception type, never a string) as a result: status error, its named exit code."""
        code, name = classify(exc)
        return cls(None, Status.ERROR, errors=[ErrorItem(name, str(exc))], exit_code=code, command=command)

    @classmethod
    def internal(cls, exc: BaseException, command: str | None = None) -> CommandResult:
        message = f"internal error: {type(exc).__name__}: {exc}"
        return cls(None, Status.ERROR, errors=[ErrorItem("internal_error", message)], exit_code=ExitCode.PROBLEMS,
                   command=command)


def status_for(problems: bool) -> Status:
    return Status.PROBLEMS if problems else Status.OK


def document_of(obj: Any, omit: frozenset[str]) -> dict[str, Any]:
    """A core result dataclass as a JSON `result`, minus fields the envelope carries itself (its warnings)."""
    from dataclasses import asdict

    return {k: v for k, v in asdict(obj).items() if k not in omit}
