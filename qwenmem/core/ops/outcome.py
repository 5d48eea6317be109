"""What an operation ends with: a status word, its data, warnings, coded errors and the events it went on past."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from qwenmem.core.events import Events

Status = Literal["ok", "problems", "error"]
#: an exit other than the status's (ok 0, problems 1), named as cli/errors.py ExitCode names it: a file that changed
#: underneath (busy), an LLM that failed (llm), or a damage shown without failing (ok)
ExitAs = Literal["ok", "problems", "busy", "llm"]
D = TypeVar("D")
E = TypeVar("E")


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

    def with_data(self, data: E) -> Outcome[E]:
        """The same outcome over other data: its document for JSON, say (fields only people's view needs left out)."""
        return Outcome(self.status, data, self.warnings, self.errors, self.events, self.exit_as)
