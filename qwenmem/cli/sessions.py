"""`qwenmem sessions …`: list and show (read-only). Repair lives in cli/repair.py and mounts itself here."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from qwenmem.cli import output
from qwenmem.cli.context import open_workspace
from qwenmem.cli.choices import SortKey, Tokenizer
from qwenmem.cli.options import AgentOpt, FormatOpt, JsonFlag, TokenizerOpt, WorkspaceOpt
from qwenmem.cli.output import OutputFormat
from qwenmem.cli.errors import ExitCode
from qwenmem.cli.result import CommandResult, Status, status_for
from qwenmem.cli.runner import QwenmemGroup, command
from qwenmem.cli.show_result import SessionsShowResult, ShownMessage
from qwenmem.cli.tables import Cell, CellValue, Column, Kind, number
from qwenmem.cli.tables import render as render_table

if TYPE_CHECKING:  # core is imported by the commands that use it (start-up time)
    from qwenmem.core.listing import SessionRow
    from qwenmem.core.session_model.gen1_doc import Entry, SessionDoc
    from qwenmem.core.sessions import SessionRef
    from qwenmem.core.settings2 import ContextStrategy

app = typer.Typer(help="List, show and repair session files (short-term memory).", no_args_is_help=True,
                  cls=QwenmemGroup)

HEALTH_STYLE = {"ok": "green", "warnings": "yellow", "corrupt": "bold red"}


@dataclass
class SessionsListResult:
    """`sessions list --json` result."""

    workspace: str
    tokenizer: str
    count: int
    sessions: list[Any]
    generation: dict[str, Any]  # the workspace's QwenPaw generation (1.x / 2.x / mixed) with file counts
    strategy: ContextStrategy  # 2.x context strategy; "light" for a 1.x agent.json
    history: dict[str, Any]  # history.db state (core.history.HistoryState)
    history_only: list[dict[str, Any]]  # sessions that exist only in history.db: {session_id, rows}


@command(app, "list")
def list_cmd(
    ctx: typer.Context,
    channel: Annotated[Optional[str], typer.Option("--channel", help="Only this channel (sub-directory).")] = None,
    user: Annotated[Optional[str], typer.Option("--user", help="Only this user id.")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="Modified since: 7d, 12h, or 2026-05-01.")] = None,
    sort: Annotated[SortKey, typer.Option("--sort", help="The column to sort by.")] = SortKey.MODIFIED,
    reverse: Annotated[bool, typer.Option("--reverse", help="Reverse the sort order.")] = False,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="Show at most N rows.")] = None,
    tokenizer: TokenizerOpt = Tokenizer.ESTIMATE,
    json_out: JsonFlag = False,
    output_format: FormatOpt = OutputFormat.TABLE,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """List every session file with its health. Never modifies anything.

    Examples:

      qwenmem sessions list

      qwenmem sessions list --channel discord --sort tokens --limit 10

      qwenmem sessions list --since 7d --json | jq '.result.sessions[] | select(.health != "ok")'
    """
    from qwenmem.core.listing import list_sessions_with_history, parse_since
    from qwenmem.core.settings import load_settings
    from qwenmem.core.tokens import get_counter

    ws = open_workspace(ctx, workspace, agent)
    settings = load_settings(ws)
    counter = get_counter(tokenizer.value, settings.token_count_estimate_divisor)
    rows, extras = list_sessions_with_history(ws, counter, channel, user, parse_since(since) if since else None,
                                              sort.value,
                                              reverse, limit)
    notes = _list_notes(rows) + extras.notes
    more = extras.to_json()
    data = SessionsListResult(str(ws.path), counter.name, len(rows), rows, more["generation"], more["strategy"],
                              more["history"], more["history_only"])
    if not rows and not extras.history_only:  # nothing listed: say which filter matched nothing (a plain note)
        from qwenmem.core.listing import no_match_note

        notes.append(no_match_note(ws, channel, user, parse_since(since) if since else None))
        return CommandResult(data, warnings=notes, warnings_as_notes=True)
    return CommandResult(data, warnings=notes, render=lambda: _render_list(rows, extras))


LIST_COLUMNS = (Column("session", Kind.KEY), Column("channel", Kind.KEY, redundant=True),
                Column("user", Kind.KEY, redundant=True),
                Column("msgs", Kind.NUMBER, "right"), Column("tokens", Kind.NUMBER, "right"),
                Column("summary", Kind.LABEL, "center", drop=3), Column("size", Kind.NUMBER, "right", drop=1),
                Column("modified", Kind.TEXT, drop=2), Column("health", Kind.LABEL))
# a 2.x (or mixed) workspace adds the generation and the history.db rows after `msgs`
GEN2_COLUMNS = (Column("gen", Kind.LABEL, drop=4), Column("history", Kind.NUMBER, "right"))


def _render_list(rows: list[Any], extras: Any) -> None:
    gen2 = extras.generation.generation in ("2.x", "mixed")
    columns = LIST_COLUMNS[:4] + GEN2_COLUMNS + LIST_COLUMNS[4:] if gen2 else LIST_COLUMNS
    table: list[list[CellValue]] = []
    for r in rows:
        who = (r.user_id or "-") + ("?" if r.ambiguous else "")
        extra: list[CellValue] = [r.generation or "-", "-" if r.history_rows is None else number(r.history_rows)] \
            if gen2 else []
        # at risk is a warning whatever the file's health: never green
        health = Cell(r.health + (" at risk" if r.at_risk else ""),
                      HEALTH_STYLE["warnings"] if r.at_risk and r.health == "ok" else HEALTH_STYLE[r.health])
        table.append([r.key, r.channel or "(flat)", who, _msgs(r), *extra, number(r.tokens),
                      "yes" if r.has_summary else "-", Cell(output.human_size(r.size), raw=str(r.size)),
                      Cell(_local_minute(r.modified), raw=r.modified or ""), health])
        for b in r.backups:  # what `repair --from-backup` would read, under the session it backs up
            table.append(["  ↳ " + b["path"].rsplit(".json.", 1)[-1], "", "", str(b["messages"]), *([""] * len(extra)),
                          "", "", Cell(output.human_size(b["size"]), raw=str(b["size"])),
                          Cell(_local_minute(b["modified"]), raw=b["modified"] or ""),
                          Cell(b["health"], HEALTH_STYLE[b["health"]])])
    for h in extras.history_only:  # 2.x: a session whose file is gone, or that never had one
        table.append([h.session_id, "-", "-", "0", "-", number(h.rows), "-", "-", "-", "",
                      Cell("history.db only", "dim")])
    render_table(columns, table)
    if output.table_format() != "tsv" and any(r.in_context < r.messages for r in rows):
        output.para("[dim]msgs: in context/in the file where they differ (compressed or evicted messages are not "
                    "in the context); tokens count the context[/dim]")


def _msgs(r: Any) -> Cell:
    """Every message in the file; `23/230` when only 23 are in the context (the 207 others compressed), so a
    file of 183 compressed messages and 0 tokens reads `0/183`. TSV keeps the file's count."""
    text = f"{r.in_context:,}/{r.messages:,}" if r.in_context < r.messages else f"{r.messages:,}"
    return Cell(text, raw=str(r.messages))


def _list_notes(rows: list[SessionRow]) -> list[str]:
    """What a reader of the listing should act on; the same sentences go to stderr and into the JSON `warnings`."""
    from qwenmem.core.sessions import BACKUP_RE

    notes = []
    ambiguous = sum(r.ambiguous for r in rows)
    if ambiguous:
        notes.append(f"{ambiguous} file name(s) split ambiguously at '_' into user and session (marked ?); "
                     "chats.json would settle it")
    # CoPaw's *.json.backup_* copies are listed, but `repair --check`/`--all` cover live sessions only
    bad_backups = [r.key for r in rows if r.health == "corrupt" and BACKUP_RE.search(r.path)]
    bad = sum(r.health == "corrupt" for r in rows) - len(bad_backups)
    bad_backups += [b["key"] for r in rows for b in r.backups if b["health"] == "corrupt"]
    if bad:
        notes.append(f"{bad} corrupt session file(s); run `qwenmem sessions repair --check` for details")
    if bad_backups:
        notes.append(f"{len(bad_backups)} damaged backup copy(ies), which `repair --all` leaves alone; name one to "
                     f"check it: `qwenmem sessions repair {bad_backups[0]} --check`")
    return notes


@command(app, "show")
def show_cmd(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session key, file name, path, or QwenPaw session id.")],
    tail: Annotated[Optional[int], typer.Option("--tail", min=1, help="Only the last N messages.")] = None,
    role: Annotated[Optional[str], typer.Option("--role", help="Only messages with this role (user/assistant/system).")] = None,
    full: Annotated[bool, typer.Option("--full", help="Do not shorten tool results.")] = False,
    thinking: Annotated[bool, typer.Option("--thinking", help="Show thinking blocks in full.")] = False,
    compressed: Annotated[bool, typer.Option("--compressed/--no-compressed", help="Include messages marked 'compressed'.")] = True,
    history: Annotated[bool, typer.Option("--history", help="QwenPaw 2.x: the full record from history.db, evicted "
                                                            "turns included, the live tail marked.")] = False,
    json_out: JsonFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """Show one conversation readably: roles, names, timestamps, tool calls, summary.

    Examples:

      qwenmem sessions show console/default_1775286565823

      qwenmem sessions show 1775286565823 --tail 5 --thinking

      qwenmem sessions show sessions/discord/1234_discord--dm--1234.json --role user --json

      qwenmem sessions show console:alice --history
    """
    from qwenmem.cli import show2
    from qwenmem.core.errors import NotFoundError
    from qwenmem.core.sessions import find_session, load_session

    ws = open_workspace(ctx, workspace, agent)
    try:
        ref = find_session(ws, session)
    except NotFoundError:
        if not history:
            raise
        ref = None  # a session that exists only in history.db
    loaded = load_session(ref) if ref is not None else None
    if history or (loaded is not None and loaded.generation == "2.x"):
        return show2.show(ws, ref, loaded, session, history, tail, role, full, thinking, compressed,
                          json_out or _json_wanted(ctx))
    assert ref is not None and loaded is not None  # without --history a missing session raised above
    doc = loaded.session
    entries = doc.entries() if doc else []
    indexed = [(i, e) for i, e in enumerate(entries) if compressed or not e.compressed]
    if role:
        indexed = [(i, e) for i, e in indexed if isinstance(e.msg, dict) and e.msg.get("role") == role]
    if tail:
        indexed = indexed[-tail:]
    model = loaded.as_model()  # once, not once per shown message
    data = SessionsShowResult(
        ref.key, ref.rel, ref.channel, ref.user_id, ref.session_id, loaded.health, loaded.salvaged, loaded.problems,
        doc.summary if doc else None, len(entries),
        [ShownMessage(i, e.marks, e.msg, model.messages[i].to_json() if model else None)
         for i, e in indexed], loaded.generation)
    warnings: list[str] = []
    if doc is None:  # nothing salvaged: exit 1, with or without --json
        return CommandResult(data, Status.PROBLEMS, errors=[_nothing_salvaged(ref, loaded)])
    if loaded.health == "corrupt":
        warnings.append(f"{ref.rel} is damaged; showing the {len(entries)} message(s) that can be salvaged "
                        f"({'; '.join(loaded.problems)})")
    elif loaded.problems:
        warnings.append("; ".join(loaded.problems[:5]) + (" …" if len(loaded.problems) > 5 else ""))
    # a damaged file that could be salvaged is shown, and is no failure: exit 0 as before, status problems
    return CommandResult(data, status_for(loaded.health == "corrupt"), warnings=warnings,
                         exit_code=ExitCode.OK, warnings_first=True,
                         render=lambda: _render_conversation(ref, doc, indexed, len(entries), full, thinking))


def _nothing_salvaged(ref: Any, loaded: Any) -> Any:
    from qwenmem.cli.result import ErrorItem

    return ErrorItem("unrecoverable", f"{ref.rel}: nothing can be salvaged ({'; '.join(loaded.problems)})")


def _local_minute(iso: str | None) -> str:
    """The table shows modification times in the local timezone, like ls and like --since's dates (JSON keeps UTC)."""
    if not iso:
        return ""
    from datetime import datetime

    return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")


def _render_conversation(ref: SessionRef, doc: SessionDoc | None, indexed: list[tuple[int, Entry]], total: int,
                         full: bool, thinking: bool) -> None:
    from rich.panel import Panel

    con = output.out()
    who = f"user {ref.user_id}" if ref.user_id else "user ?"
    output.para(f"[bold]{output.escape(ref.key)}[/bold]  channel {output.escape(ref.channel or '(flat)')}, "
                f"{output.escape(who)}, session {output.escape(ref.session_id or '?')}  ({total} messages)", "  ",
                width=con.width)
    if doc and doc.summary:
        from qwenmem.cli.show2 import panel_body

        con.print(Panel(panel_body(con, doc.summary), title="compressed summary", title_align="left",
                        border_style="cyan"))
    shown = len(indexed)
    if shown < total:
        con.print(f"[dim]… showing {shown} of {total} messages[/dim]")
    for index, entry in indexed:
        msg = entry.msg if isinstance(entry.msg, dict) else {"content": repr(entry.msg)}
        role = msg.get("role", "?")
        colour = {"user": "green", "assistant": "blue", "system": "magenta"}.get(role, "red")
        marks = f" [dim]\\[{', '.join(map(str, entry.marks))}][/dim]" if entry.marks else ""
        con.print(f"\n[bold {colour}]#{index} {output.escape(str(role))}[/] [dim]{output.escape(str(msg.get('name', '')))}"
                  f"  {output.escape(output.timestamp(msg.get('timestamp', '')))}[/dim]{marks}")
        for line in render_blocks(msg.get("content"), full, thinking):
            output.para(line, lists=True)  # wrapped on a terminal (CJK by display width, kinsoku), else as it is


def _shorten(text: str, limit: int, full: bool) -> str:
    if full or len(text) <= limit:
        return text
    return text[:limit].rstrip() + f" … [{len(text) - limit:,} more characters; --full shows all]"


def render_blocks(content: Any, full: bool, thinking: bool) -> list[str]:  # a 1.x message's content, as written
    esc = output.escape
    if isinstance(content, str):
        return [esc(content)]
    if not isinstance(content, list):
        return [f"[red]{esc(repr(content))}[/red]"]
    lines = []
    for block in content:
        if not isinstance(block, dict):
            lines.append(f"[red]{esc(repr(block))}[/red]")
            continue
        kind = block.get("type")
        if kind == "text":
            lines.append(esc(str(block.get("text", ""))))
        elif kind == "thinking":
            text = str(block.get("thinking", ""))
            lines.append(f"[dim italic]thinking: {esc(text)}[/]" if thinking
                         else f"[dim italic](thinking, {len(text):,} characters; --thinking shows it)[/]")
        elif kind == "tool_use":
            args = json.dumps(block.get("input", {}), ensure_ascii=False)
            lines.append(f"[yellow]→ {esc(str(block.get('name')))}[/yellow]({esc(_shorten(args, 400, full))}) "
                         f"[dim]id={esc(str(block.get('id')))}[/dim]")
        elif kind == "tool_result":
            out_val = block.get("output")
            if isinstance(out_val, list):
                text = "\n".join(str(b.get("text", "")) if isinstance(b, dict) and b.get("type") == "text"
                                 else f"<{b.get('type') if isinstance(b, dict) else type(b).__name__}>" for b in out_val)
            else:
                text = str(out_val)
            lines.append(f"[cyan]← {esc(str(block.get('name')))}[/cyan] [dim]id={esc(str(block.get('id')))}[/dim]\n"
                         f"{esc(_shorten(text, 600, full))}")
        elif kind in ("image", "audio", "video", "file"):
            src: dict[str, Any] = block["source"] if isinstance(block.get("source"), dict) else {}
            where = src.get("url") or (f"base64 {len(src.get('data') or '')} chars" if src.get("data") else "?")
            lines.append(f"[dim]<{kind}: {esc(str(block.get('filename') or where))}>[/dim]")
        else:
            lines.append(f"[dim]<{esc(str(kind))} block: {esc(_shorten(json.dumps(block, ensure_ascii=False), 200, full))}>[/dim]")
    return lines


def _json_wanted(ctx: Any) -> bool:
    """--json given anywhere the runner learns it (the command's own flag or the group's)."""
    from qwenmem.cli.context import state

    return bool(getattr(state(ctx), "json", False))
