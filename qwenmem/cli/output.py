"""Rendering: Rich for people (stdout for data, stderr for everything else), a versioned JSON envelope for scripts.

JSON envelope (version 1, pinned by tests/test_json_contract.py):
  {"qwenmem_json": 4, "command": "sessions list", "status": "ok"|"problems"|"error",
   "result": <command-specific object or null>, "warnings": [str], "errors": [{"code": str, "message": str}]}
Colour (`--color auto|always|never`): auto colours a terminal unless NO_COLOR is set or CLICOLOR=0;
CLICOLOR_FORCE=1 colours even a pipe. Tables: `--format table|tsv|json` (qwenmem/cli/tables.py).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, is_dataclass
from datetime import date, datetime
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any

JSON_VERSION = 4  # 2: reindex, dream: warnings only in the envelope (no `notices`/`warnings` in result)
#                  4: history salvage: `complete`; sources without `tool`, with cut/missing seqs, lost pages, WAL rows
#                   3: snapshot, snapshot restore, history salvage likewise (no `warnings`/`notices` in result)


class ColorMode(str, Enum):
    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"


class OutputFormat(str, Enum):
    TABLE = "table"
    TSV = "tsv"
    JSON = "json"


_settings: dict[str, Any] = {"color": ColorMode.AUTO, "format": OutputFormat.TABLE}


def configure(color: ColorMode | None = None, table_format: OutputFormat | None = None) -> None:
    """Set this run's colour mode and table format (the root callback and the runner do); consoles are rebuilt."""
    if color is not None:
        _settings["color"] = ColorMode(color)
    if table_format is not None:
        _settings["format"] = OutputFormat(table_format)
    out.cache_clear()
    err.cache_clear()


def table_format() -> str:
    return OutputFormat(_settings["format"]).value


def color_wanted(is_terminal: bool) -> bool:
    """--color, then NO_COLOR (https://no-color.org), CLICOLOR_FORCE and CLICOLOR (https://bixense.com/clicolors/)."""
    import os

    mode = ColorMode(_settings["color"])
    if mode is not ColorMode.AUTO:
        return mode is ColorMode.ALWAYS
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("CLICOLOR_FORCE", "0") != "0":
        return True
    if os.environ.get("CLICOLOR") == "0":
        return False
    return is_terminal


def _console_colors(stream: Any) -> dict[str, Any]:
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if color_wanted(tty):
        return {"force_terminal": True} if not tty else {}
    return {"color_system": None, "no_color": True}


@lru_cache(maxsize=1)
def out() -> Any:
    import os

    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # Rich exits 1 here; `qwenmem … | head` is not an error of ours: let the app's BrokenPipeError handler
            # exit 0. stdout goes to /dev/null first so the interpreter's final flush cannot fail again.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise BrokenPipeError

    # Piped output is read by programs and pagers: do not fold table rows at an imaginary 80 columns.
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 240
    return _Console(highlight=False, width=width, **_console_colors(sys.stdout))


@lru_cache(maxsize=1)
def err() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True, **_console_colors(sys.stderr))


def _default(obj: Any) -> Any:
    if is_dataclass(obj) and not isinstance(obj, type):
        return asdict(obj)
    if isinstance(obj, (datetime, date)):
        return obj.isoformat()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def envelope(command: str, result: Any, status: str = "ok", warnings: list[str] | None = None,
             errors: list[dict] | None = None) -> dict:
    return {"qwenmem_json": JSON_VERSION, "command": command, "status": status, "result": result,
            "warnings": list(warnings or []), "errors": list(errors or [])}


def print_json(command: str, result: Any, status: str = "ok", warnings: list[str] | None = None,
               errors: list[dict] | None = None) -> None:
    doc = envelope(command, result, status, warnings, errors)
    sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=2, default=_default) + "\n")
    sys.stdout.flush()


def warn(message: str) -> None:
    err().print(f"[yellow]warning:[/yellow] {escape(message)}")


def note(message: str) -> None:
    err().print(escape(message))


def error_line(message: str) -> None:
    err().print(f"[bold red]error:[/bold red] {escape(message)}")


def escape(text: str) -> str:
    from rich.markup import escape as _escape

    return _escape(str(text))


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def progress(description: str, total: int | None, quiet: bool = False):
    """A Rich progress bar on stderr (hidden when stderr is not a terminal, or in --quiet/--json mode)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    console = err()
    prog = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("ETA"), TimeRemainingColumn(),
                    console=console, transient=True, disable=quiet or not console.is_terminal)
    return prog, description, total
