"""What an operation ends with: a status word, its data, warnings, coded errors and the events it went on past."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from qwenmem.core.events import Events

Status = Literal["ok", "problems", "error"]
#: an exit other than the status's (ok 0, problems 1), named as cli/errors.py ExitCode names it: a file that changed
#: underneath (busy), or a damage shown without failing (ok)
ExitAs = Literal["ok", "problems", "busy"]
D = TypeVar("D")


@dataclass(frozen=True)
class CodedError:
    code: str  # the envelope's error code: busy, llm_failed, ...
    message: str


@dataclass(frozen=True)
class Outcome(Generic[D]):
    status: Status
    data: D
    warnings: tuple[str, ...] = ()
    errors: tuple[CodedError, ...] = ()
    events: Events = Events()  # links refused and files left for want of space, during this call only
    exit_as: ExitAs | None = None  # None: the status's own exit code
