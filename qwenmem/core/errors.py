"""Domain errors. Each class names its error code (the `--json` envelope's `error.code`) and the exit it ends a
command with, so the CLI and a fleet worker read the same two words off any error without knowing its class; the
numbers for those exits are the CLI's, in one place (qwenmem/cli/errors.py ExitCode)."""

from __future__ import annotations

import os
from typing import ClassVar, Literal

# the exits an error can name, as ExitCode's member names in lower case
ErrorExit = Literal["problems", "usage", "workspace", "busy", "llm", "unsafe_link", "disk_full"]
ErrorCode = Literal["error", "workspace_unavailable", "config_invalid", "unsafe_path", "not_found", "ambiguous",
                    "busy", "changed_underneath", "llm_failed", "rejected", "usage", "unsafe_link", "disk_full"]


class QwenmemError(Exception):
    """Base class: a problem the user can act on. Shown as one line, never a traceback."""

    code: ClassVar[ErrorCode] = "error"
    exit_as: ClassVar[ErrorExit] = "problems"


class WorkspaceError(QwenmemError):
    """The workspace (or a file in it) is missing, unreadable or not a workspace."""

    code: ClassVar[ErrorCode] = "workspace_unavailable"
    exit_as: ClassVar[ErrorExit] = "workspace"


class ConfigError(QwenmemError):
    """A configuration file (agent.json, config.json, …) cannot be parsed."""

    code: ClassVar[ErrorCode] = "config_invalid"
    exit_as: ClassVar[ErrorExit] = "workspace"

    def __init__(self, path: str | os.PathLike[str], message: str, line: int | None = None,
                 column: int | None = None):
        self.path = path
        self.line = line
        self.column = column
        where = f"{path}" + (f":{line}:{column}" if line is not None else "")
        super().__init__(f"{where}: {message}")


class UnsafePathError(QwenmemError):
    """A user-supplied name resolves outside the workspace (traversal, absolute path, escaping symlink)."""

    code: ClassVar[ErrorCode] = "unsafe_path"
    exit_as: ClassVar[ErrorExit] = "usage"


class NotFoundError(QwenmemError):
    """A named session, backup or file does not exist."""

    code: ClassVar[ErrorCode] = "not_found"
    exit_as: ClassVar[ErrorExit] = "usage"


class AmbiguousError(QwenmemError):
    """A name matches more than one thing."""

    code: ClassVar[ErrorCode] = "ambiguous"
    exit_as: ClassVar[ErrorExit] = "usage"


class BusyError(QwenmemError):
    """Another process holds the workspace lock."""

    code: ClassVar[ErrorCode] = "busy"
    exit_as: ClassVar[ErrorExit] = "busy"


class ChangedUnderneathError(QwenmemError):
    """A file changed between our read and our write; nothing was written."""

    code: ClassVar[ErrorCode] = "changed_underneath"
    exit_as: ClassVar[ErrorExit] = "busy"


class LLMError(QwenmemError):
    """The configured LLM endpoint failed, timed out, or returned an unusable reply."""

    code: ClassVar[ErrorCode] = "llm_failed"
    exit_as: ClassVar[ErrorExit] = "llm"


class ValidationError(QwenmemError):
    """A proposed result (summary, rewrite) failed validation; nothing was written."""

    code: ClassVar[ErrorCode] = "rejected"
    exit_as: ClassVar[ErrorExit] = "llm"


class UsageError(QwenmemError):
    """Options that do not make sense together."""

    code: ClassVar[ErrorCode] = "usage"
    exit_as: ClassVar[ErrorExit] = "usage"


class UnsafeLinkError(WorkspaceError):
    """A symlink in the workspace leads outside it, or loops; it was neither read nor written through."""

    code: ClassVar[ErrorCode] = "unsafe_link"
    exit_as: ClassVar[ErrorExit] = "unsafe_link"


class DiskFullError(WorkspaceError):
    """The filesystem (or the user's quota) has no room for a write; the target was left as it was."""

    code: ClassVar[ErrorCode] = "disk_full"
    exit_as: ClassVar[ErrorExit] = "disk_full"
