"""Domain errors. The CLI maps each class to a named exit code in one place (qwenmem/cli/errors.py)."""

from __future__ import annotations

import os


class QwenmemError(Exception):
    """Base class: a problem the user can act on. Shown as one line, never a traceback."""


class WorkspaceError(QwenmemError):
    """The workspace (or a file in it) is missing, unreadable or not a workspace."""


class ConfigError(QwenmemError):
    """A configuration file (agent.json, config.json, …) cannot be parsed."""

    def __init__(self, path: str | os.PathLike[str], message: str, line: int | None = None,
                 column: int | None = None):
        self.path = path
        self.line = line
        self.column = column
        where = f"{path}" + (f":{line}:{column}" if line is not None else "")
        super().__init__(f"{where}: {message}")


class UnsafePathError(QwenmemError):
    """A user-supplied name resolves outside the workspace (traversal, absolute path, escaping symlink)."""


class NotFoundError(QwenmemError):
    """A named session, backup or file does not exist."""


class AmbiguousError(QwenmemError):
    """A name matches more than one thing."""


class BusyError(QwenmemError):
    """Another process holds the workspace lock."""


class ChangedUnderneathError(QwenmemError):
    """A file changed between our read and our write; nothing was written."""


class LLMError(QwenmemError):
    """The configured LLM endpoint failed, timed out, or returned an unusable reply."""


class ValidationError(QwenmemError):
    """A proposed result (summary, rewrite) failed validation; nothing was written."""


class UsageError(QwenmemError):
    """Options that do not make sense together."""


class UnsafeLinkError(WorkspaceError):
    """A symlink in the workspace leads outside it, or loops; it was neither read nor written through."""


class DiskFullError(WorkspaceError):
    """The filesystem (or the user's quota) has no room for a write; the target was left as it was."""
