"""`sessions show` for QwenPaw 2.x files and for `--history` (the full record from history.db).

Both render the generation-neutral messages of qwenmem.core.session_model; `--json` prints them in the normalised
shape (`Message.to_json`), the same for a file's messages and for history rows.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from qwenmem.cli import output
from qwenmem.cli.show_result import SessionsShowResult

if TYPE_CHECKING:  # core and rich are imported where they are used (start-up time)
    from rich.console import Console
    from rich.text import Text

    from qwenmem.cli.result import CommandResult
    from qwenmem.core.history.record import HistoryRecord
    from qwenmem.core.session_model.model import Block, Message, Session
    from qwenmem.core.sessions import LoadedSession, SessionRef
    from qwenmem.core.workspace import Workspace

Line = list[tuple[str, str | None]]  # one rendered line: (text, rich style) segments, no markup to parse

ROLE_COLOUR = {"user": "green", "assistant": "blue", "system": "magenta"}


def _filter(messages: list[Message], role: str | None, tail: int | None, compressed: bool) -> list[Message]:
    picked = [m for m in messages if (compressed or not m.compressed) and (role is None or m.role == role)]
    return picked[-tail:] if tail else picked


def show(ws: Workspace, ref: SessionRef | None, loaded: LoadedSession | None, query: str, history: bool,
         tail: int | None, role: str | None, full: bool, thinking: bool, compressed: bool,
         json_out: bool = True) -> CommandResult:
    """A CommandResult for a 2.x file, or for any session's --history (`ref` and `loaded` None: a session only in
    history.db, named by `query`). Without `json_out` the normalised messages are not built (a 20,000-row record
    renders faster without them)."""
    from qwenmem.cli.errors import ExitCode
    from qwenmem.cli.result import CommandResult, status_for

    model = loaded.as_model() if loaded is not None else None
    record = _record(ws, ref, loaded, model, query) if history else None
    messages = record.messages if record else (model.messages if model else [])
    shown = _filter(messages, role, tail, compressed)
    health = loaded.health if loaded is not None else "ok"
    normalised = [m.to_json() for m in shown] if json_out else []
    history_json = record.to_json(messages=False) if record else None
    if history_json is not None:  # the record's messages, filtered like the file's, in the same shape
        history_json["messages"] = normalised
    data = SessionsShowResult(
        ref.key if ref else None, ref.rel if ref else None, ref.channel if ref else None,
        ref.user_id if ref else None, record.session_id if record else (ref.session_id if ref else None),
        health, loaded.salvaged if loaded else False, loaded.problems if loaded else [],
        model.summary if model else None, len(messages), [] if record else normalised,
        model.generation if model else None, _scroll_json(model), history_json)
    warnings: list[str] = []
    if ref is not None and loaded is not None and health == "corrupt":  # `loaded` is read from `ref`
        warnings.append(f"{ref.rel} is damaged; showing what can be read ({'; '.join(loaded.problems)})")
    elif loaded is not None and loaded.problems:
        warnings.append("; ".join(loaded.problems[:5]) + (" …" if len(loaded.problems) > 5 else ""))
    return CommandResult(data, status_for(health == "corrupt"), warnings=warnings, exit_code=ExitCode.OK,
                         warnings_first=True,
                         render=lambda: _render(ref, model, record, shown, len(messages), full, thinking))


def _scroll_json(model: Session | None) -> dict[str, Any] | None:
    if model is None or model.scroll is None:
        return None
    return {"continuation_summary": model.scroll.continuation_summary, "index": model.scroll.index,
            "summary_update_failed": model.scroll.summary_update_failed,
            "synthetic_ids": model.scroll.synthetic_ids}


def _record(ws: Workspace, ref: SessionRef | None, loaded: LoadedSession | None, model: Session | None,
            query: str) -> HistoryRecord:
    from qwenmem.core.errors import WorkspaceError
    from qwenmem.core.history import HistoryError
    from qwenmem.core.history.keys import rows_key_in
    from qwenmem.core.history.record import full_record
    from qwenmem.core.settings2 import load_gen2_settings

    # the store's path, which load_gen2_settings always sets (history_db_file raises TypeError, not a user error,
    # should it ever not); a store that is not there is HistoryError `missing` below, like any unreadable one
    db_path = load_gen2_settings(ws).history_db_file()
    if ref is None:
        session_id = query
    else:  # the rows rule of list, repair and compact (never agent.state.session_id)
        doc = loaded.gen2_doc if loaded is not None else None
        key = rows_key_in(ref, doc, db_path if db_path.is_file() else None).session_id or ref.session_id
        if key is None:  # not met: a file's ref always has a session id (its name's, at least)
            raise WorkspaceError(f"{ref.rel}: no session id to look its rows up by in history.db")
        session_id = key
    try:
        return full_record(db_path, session_id, model)
    except HistoryError as exc:
        raise WorkspaceError(f"history.db: {exc.detail} ({exc.path})") from None


def _render(ref: SessionRef | None, model: Session | None, record: HistoryRecord | None, shown: list[Message],
            total: int, full: bool, thinking: bool) -> None:
    from rich.panel import Panel

    con = output.out()
    esc = output.escape
    if ref is not None:
        output.para(f"[bold]{esc(ref.key)}[/bold]  channel {esc(ref.channel or '(flat)')}, user {esc(ref.user_id or '?')}, "
                  f"session {esc((record.session_id if record else ref.session_id) or '?')}  "
                  f"({model.generation if model else '?'}, {total} messages)", "  ", width=con.width)
    else:
        assert record is not None  # no session file: show() runs for --history only
        con.print(f"[bold]{esc(record.session_id)}[/bold]  (only in history.db, {total} messages)")
    if record:  # rows and messages differ: a tool call's result rows belong to its message
        placeholders = sum(1 for m in record.messages if m.synthetic)
        output.para(f"[dim]{total} messages from {record.rows:,} history.db rows (a tool call's result rows join its "
                  f"message): {record.evicted_count} evicted, {record.live_count} in the live tail"
                  + (f", {placeholders} scroll placeholder(s)" if placeholders else "") + "[/dim]", "  ",
                    width=con.width)
    if model and model.summary:
        con.print(Panel(panel_body(con, model.summary), title=f"summary ({model.summary_kind})", title_align="left",
                        border_style="cyan"))
    if model and model.scroll and model.scroll.continuation_summary:
        cs = model.scroll.continuation_summary
        lo_hi = model.scroll.covered_seq
        body = "\n".join([f"active task: {cs.get('active_task', '')}  (status {cs.get('status', '?')})"]
                         + [f"- {i.get('text', '')}" for i in cs.get("current_state", []) if isinstance(i, dict)])
        con.print(Panel(panel_body(con, body), title=f"continuation summary (covers seq {lo_hi[0]}–{lo_hi[1]})" if lo_hi else
                        "continuation summary", title_align="left", border_style="cyan"))
    if len(shown) < total:
        con.print(f"[dim]… showing {len(shown)} of {total} messages[/dim]")
    spans = list(record.evictions) if record else []
    in_tail = False
    lines: list[Line] = []
    for m in shown:
        while spans and m.seq is not None and m.seq >= spans[0][0]:
            lo, hi = spans.pop(0)
            lines += [[], [(f"▼ evicted from the live window: seq {lo}–{hi} (kept in history.db)", "bold yellow")]]
        if record and m.live and not in_tail:
            in_tail = True
            lines += [[], [("▼ live tail (in the session file)", "bold yellow")]]
        colour = ROLE_COLOUR.get(m.role or "", "red")
        seq = "" if m.seq is None else (f" seq {m.seq}" + (f"–{m.seq_hi}" if m.seq_hi and m.seq_hi != m.seq else ""))
        tag = " (scroll placeholder, not transcript)" if m.synthetic else ""
        tag += " [compressed]" if m.compressed else ""
        tag += " (not yet in history.db)" if record and m.seq is None else ""
        lines += [[], [(f"#{m.index} {m.role or '?'}", f"bold {colour}"),
                       (f" {m.name or ''}  {output.timestamp(m.created_at)}{seq}{tag}", "dim")]]
        if m.synthetic and not full:
            lines.append([(f"({len(m.text):,} characters of eviction index and summary; --full shows them)", "dim")])
            continue
        lines.extend(render_blocks(m.blocks, full, thinking))
    _emit(con, lines)


def _emit(con: Console, lines: list[Line]) -> None:
    """Plain text straight to a pipe or file (a 20,000-message record renders in well under a second); styled
    Text objects to a terminal."""
    if not con.is_terminal and output.prose_width() is None:
        sys.stdout.write("\n".join("".join(text for text, _ in line) for line in lines) + "\n")
        sys.stdout.flush()
        return
    from rich.text import Text

    from qwenmem.cli.wrap import list_hang, wrap_rich

    for line in lines:
        text = Text.assemble(*[(text, style) if style else text for text, style in line])
        for para in text.split("\n", allow_blank=True):  # CJK by display width, kinsoku, list items hanging
            for piece in wrap_rich(para, max(con.width - 1, 20), hang=list_hang(para.plain)):
                con.print(piece, soft_wrap=True)


def panel_body(con: Console, text: str) -> Text:
    """A summary for a Panel, wrapped here (Rich would move a run of Chinese after `- [x]` to the next line and
    start a line with `。`): the panel's inner width is the console's less its borders and padding."""
    from rich.text import Text

    from qwenmem.cli.wrap import wrap

    return Text("\n".join(wrap(text, max(con.width - 4, 20), lists=True)))


def _shorten(text: str, limit: int, full: bool) -> str:
    if full or len(text) <= limit:
        return text
    return text[:limit].rstrip() + f" … [{len(text) - limit:,} more characters; --full shows all]"


def render_blocks(blocks: Sequence[Block], full: bool, thinking: bool) -> list[Line]:
    lines: list[Line] = []
    for b in blocks:
        if b.type == "text":
            lines.append([(b.text, None)])
        elif b.type == "thinking":
            lines.append([(f"thinking: {b.text}" if thinking
                           else f"(thinking, {len(b.text):,} characters; --thinking shows it)", "dim italic")])
        elif b.type == "hint":
            lines.append([(f"hint: {_shorten(b.text, 400, full)}", "dim")])
        elif b.type == "tool_call":
            lines.append([(f"→ {b.tool_name}", "yellow"), (f"({_shorten(b.tool_input or '', 400, full)}) ", None),
                          (f"id={b.tool_call_id}{' ' + b.tool_state if b.tool_state else ''}", "dim")])
        elif b.type == "tool_result":
            lines.append([(f"← {b.tool_name}", "cyan"), (f" id={b.tool_call_id} {b.tool_state or ''}", "dim")])
            lines.append([(_shorten(b.text, 600, full), None)])
        elif b.type == "data":
            lines.append([(b.text, "dim")])
        else:
            lines.append([(f"<{b.original_type} block>", "dim")])
    return lines
