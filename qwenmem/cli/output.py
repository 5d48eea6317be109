"""Rendering: Rich for people (stdout for data, stderr for everything else), a versioned JSON envelope for scripts.

JSON envelope (`qwenmem_json` is its version, JSON_VERSION below; the shape is pinned by tests/contract/test_json_contract.py):
  {"qwenmem_json": int, "command": "sessions list", "status": "ok"|"problems"|"error",
   "result": <command-specific object or null>, "warnings": [str], "errors": [{"code": str, "message": str}]}
Colour (`--color auto|always|never`): auto colours a terminal unless NO_COLOR is set or CLICOLOR=0;
CLICOLOR_FORCE=1 colours even a pipe. Tables: `--format table|tsv|json` (qwenmem/cli/tables.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from datetime import date, datetime
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:  # rich.progress is imported when a bar is wanted (start-up time)
    from rich.progress import Progress

JSON_VERSION = 6  # 2: reindex, dream: warnings only in the envelope (no `notices`/`warnings` in result)
#                  4: history salvage: `complete`; sources without `tool`, with cut/missing seqs, lost pages, WAL rows
#                   3: snapshot, snapshot restore, history salvage likewise (no `warnings`/`notices` in result)
#                  5: compact --check: `generation` is only ever the QwenPaw generation (1.x/2.x); the agent.json
#                     key layout (current/legacy) is `config_layout`, in `result`, each 1.x report and its budget
#                  6: search: a hit's `score` is the ranking key (it never rises down the list); its own absolute
#                     match, which `score` was in hybrid mode before, is `match_score`


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


def _fd_columns(fd: int) -> int | None:
    """A terminal's width; None for no terminal, and for one that reports 0 columns (a pty nobody sized, as
    `script` or a CI runner makes): wrapping at 0 would put each character on a line of its own."""
    import os

    try:
        return (os.get_terminal_size(fd).columns or None) if os.isatty(fd) else None
    except OSError:
        return None


def terminal_width() -> int | None:
    """The width the reader sees: $COLUMNS, else stdout's terminal, else the terminal stderr or stdin is on
    (`qwenmem sessions list | cat` in a pane), else None (a file, cron, a program)."""
    import os

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for fd in (1, 2, 0):
        width = _fd_columns(fd)
        if width:
            return width
    return None


def table_width() -> int | None:
    """How wide a table may be: the reader's terminal; None (each column its natural width, no padding past the
    last column) when no terminal is known."""
    return terminal_width()


def prose_width() -> int | None:
    """How wide wrapped prose may be (a message's text, a note): the terminal's width, else None (unwrapped)."""
    return terminal_width()


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

    # Piped output: the terminal the pipe ends in when there is one; else rules and panels are 80 wide (tables
    # are not folded at all: qwenmem/cli/tables.py).
    width = None if sys.stdout.isatty() else (terminal_width() or 80)
    return _Console(highlight=False, width=width, **_console_colors(sys.stdout))


@lru_cache(maxsize=1)
def err() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True, **_console_colors(sys.stderr))


def _stderr_width() -> int | None:
    """Diagnostics are wrapped (at spaces, with a hanging indent) only on a terminal: a log file keeps one line
    per message for grep."""
    return _fd_columns(2)


_held: list[tuple[str, str]] | None = None


@contextmanager
def held_diagnostics() -> Iterator[None]:
    """Hold what goes to stderr (notes, warnings, errors) until the block ends: while a pager shows stdout, a
    summary printed on stderr would appear above the table it sums up, then be scrolled away."""
    global _held
    outer, _held = _held, []
    try:
        yield
    finally:
        held, _held = _held, outer
        for prefix, message in held or []:
            _say(prefix, message)


def _say(prefix: str, message: str) -> None:
    if _held is not None:
        _held.append((prefix, message))
        return
    width = _stderr_width()
    plain_prefix = prefix and (_plain(prefix) + " ")
    if width is None:
        err().print(f"{prefix} {escape(message)}" if prefix else escape(message))
        return
    from qwenmem.cli.wrap import wrap

    for k, line in enumerate(wrap(plain_prefix + message, width - 1, hang="  ")):
        body = escape(line[len(plain_prefix):]) if k == 0 and prefix else escape(line)
        err().print(f"{prefix} {body}" if k == 0 and prefix else body)


def _plain(markup: str) -> str:
    from rich.text import Text

    return Text.from_markup(markup).plain


def para(markup: str, hang: str = "", width: int | None = None, lists: bool = False) -> None:
    """Print one line of Rich markup on stdout wrapped to the reader's width (by display width, CJK between
    characters, kinsoku), continuation lines after `hang` (`lists`: a Markdown item's hang, after the marker), or as
    it is when no width is known: a file keeps its long lines for grep and editors."""
    from rich.text import Text

    con = out()
    width = width or prose_width()
    text = Text.from_markup(markup)
    if width is None:
        con.print(text, soft_wrap=True)
        return
    from qwenmem.cli.wrap import list_hang, wrap_rich

    for line in text.split("\n", allow_blank=True):
        extra = list_hang(line.plain) if lists else ""
        for piece in wrap_rich(line, width - 1, hang=hang + extra):
            con.print(piece, soft_wrap=True)


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


class EnvelopeError(TypedDict):
    """One entry of the envelope's `errors` (cli.result.ErrorItem, as JSON)."""

    code: str
    message: str


class Envelope(TypedDict):
    qwenmem_json: int
    command: str
    status: str
    result: Any  # the command's own result, any JSON value (to_json serialises it)
    warnings: list[str]
    errors: list[EnvelopeError]


def envelope(command: str, result: Any, status: str = "ok", warnings: list[str] | None = None,
             errors: list[EnvelopeError] | None = None) -> Envelope:
    return {"qwenmem_json": JSON_VERSION, "command": command, "status": status, "result": result,
            "warnings": list(warnings or []), "errors": list(errors or [])}


def print_json(command: str, result: Any, status: str = "ok", warnings: list[str] | None = None,
               errors: list[EnvelopeError] | None = None) -> None:
    doc = envelope(command, result, status, warnings, errors)
    sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=2, default=_default) + "\n")
    sys.stdout.flush()


def warn(message: str) -> None:
    _say("[yellow]warning:[/yellow]", message)


def note(message: str) -> None:
    for line in str(message).split("\n"):
        _say("", line)


def error_line(message: str) -> None:
    _say("[bold red]error:[/bold red]", message)


def escape(text: str) -> str:
    from rich.markup import escape as _escape

    return _escape(str(text))


def timestamp(value: Any) -> str:
    """A message's time in one format for both generations: `2026-03-13 14:48:28.529` (1.x writes that, 2.x
    writes ISO `2026-12-01T09:22:18.960921`); an offset is kept; what does not parse is shown as it is."""
    if not isinstance(value, str) or not value:
        return "" if value is None else str(value)
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return value
    text = moment.strftime("%Y-%m-%d %H:%M:%S") + f".{moment.microsecond // 1000:03d}"
    return text + (moment.strftime(" %z") if moment.tzinfo is not None else "")


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def progress(description: str, total: int | None, quiet: bool = False) -> tuple[Progress, str, int | None]:
    """A Rich progress bar on stderr (hidden when stderr is not a terminal, or in --quiet/--json mode)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    console = err()
    prog = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("ETA"), TimeRemainingColumn(),
                    console=console, transient=True, disable=quiet or not console.is_terminal)
    return prog, description, total
