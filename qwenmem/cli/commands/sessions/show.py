"""`qwenmem sessions show`: one conversation, of either generation, or its full record from history.db
(`--history`), rendered from the generation-neutral messages of qwenmem.core.session_model by one renderer
(the operation is qwenmem/core/ops/sessions_show.py).

A 1.x file without --history keeps the view it always had (its JSON keeps each message as written; people see
its marks and its blocks as written, `→ read_file({…})`), everything else is shown from the normalised blocks.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from qwenmem.cli import output
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import AgentOpt, JsonFlag, WorkspaceOpt
from qwenmem.cli.result import CommandResult

if TYPE_CHECKING:  # core and rich are imported where they are used (start-up time)
    from rich.console import Console
    from rich.text import Text

    from qwenmem.core.ops.sessions_show import ShownSession
    from qwenmem.core.session_model.model import Block, Message

Line = list[tuple[str, str | None]]  # one rendered line: (text, rich style) segments, no markup to parse

ROLE_COLOUR = {"user": "green", "assistant": "blue", "system": "magenta"}


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
    from qwenmem.core.ops import sessions_show

    ws = open_workspace(ctx, workspace, agent)
    options = sessions_show.Options(session, tail, role, full, thinking, compressed, history,
                                    normalized=json_out or _json_wanted(ctx))
    outcome = sessions_show.run(ws, options)
    view = outcome.data
    return CommandResult.of(outcome.with_data(view.result), warnings_first=not outcome.errors,
                            render=None if outcome.errors else lambda: render(view, full, thinking))


def _json_wanted(ctx: Any) -> bool:
    """--json given anywhere the runner learns it (the command's own flag or the group's)."""
    from qwenmem.cli.context import state

    return bool(getattr(state(ctx), "json", False))


def render(view: ShownSession, full: bool, thinking: bool) -> None:
    """The header, the summaries, then each shown message (the record's eviction spans and live tail marked)."""
    from rich.panel import Panel

    con = output.out()
    _header(con, view)
    model, record = view.model, view.record
    if view.as_written and view.result.summary:
        con.print(Panel(panel_body(con, view.result.summary), title="compressed summary", title_align="left",
                        border_style="cyan"))
    elif not view.as_written and model and model.summary:
        con.print(Panel(panel_body(con, model.summary), title=f"summary ({model.summary_kind})", title_align="left",
                        border_style="cyan"))
    if model and model.scroll and model.scroll.continuation_summary:
        cs = model.scroll.continuation_summary
        lo_hi = model.scroll.covered_seq
        body = "\n".join([f"active task: {cs.get('active_task', '')}  (status {cs.get('status', '?')})"]
                         + [f"- {i.get('text', '')}" for i in cs.get("current_state", []) if isinstance(i, dict)])
        con.print(Panel(panel_body(con, body), title=f"continuation summary (covers seq {lo_hi[0]}–{lo_hi[1]})" if lo_hi else
                        "continuation summary", title_align="left", border_style="cyan"))
    if len(view.shown) < view.total:
        con.print(f"[dim]… showing {len(view.shown)} of {view.total} messages[/dim]")
    spans = list(record.evictions) if record else []
    in_tail = False
    lines: list[Line] = []
    for m in view.shown:
        while spans and m.seq is not None and m.seq >= spans[0][0]:
            lo, hi = spans.pop(0)
            lines += [[], [(f"▼ evicted from the live window: seq {lo}–{hi} (kept in history.db)", "bold yellow")]]
        if record and m.live and not in_tail:
            in_tail = True
            lines += [[], [("▼ live tail (in the session file)", "bold yellow")]]
        lines += _as_written_lines(m, full, thinking) if view.as_written else _message_lines(m, record is not None,
                                                                                            full, thinking)
    if lines or not view.as_written:  # (a 2.x view with no message shown has always ended in an empty line)
        _emit(con, lines, through_rich=view.as_written)


def _header(con: Console, view: ShownSession) -> None:
    esc = output.escape
    ref, model, record = view.ref, view.model, view.record
    if ref is None:
        assert record is not None  # no session file: shown for --history only
        con.print(f"[bold]{esc(record.session_id)}[/bold]  (only in history.db, {view.total} messages)")
    else:
        generation = "" if view.as_written else f"{model.generation if model else '?'}, "
        output.para(f"[bold]{esc(ref.key)}[/bold]  channel {esc(ref.channel or '(flat)')}, user {esc(ref.user_id or '?')}, "
                    f"session {esc((record.session_id if record else ref.session_id) or '?')}  "
                    f"({generation}{view.total} messages)", "  ", width=con.width)
    if record:  # rows and messages differ: a tool call's result rows belong to its message
        placeholders = sum(1 for m in record.messages if m.synthetic)
        output.para(f"[dim]{view.total} messages from {record.rows:,} history.db rows (a tool call's result rows join "
                    f"its message): {record.evicted_count} evicted, {record.live_count} in the live tail"
                    + (f", {placeholders} scroll placeholder(s)" if placeholders else "") + "[/dim]", "  ",
                    width=con.width)


def _message_lines(m: Message, from_record: bool, full: bool, thinking: bool) -> list[Line]:
    colour = ROLE_COLOUR.get(m.role or "", "red")
    seq = "" if m.seq is None else (f" seq {m.seq}" + (f"–{m.seq_hi}" if m.seq_hi and m.seq_hi != m.seq else ""))
    tag = " (scroll placeholder, not transcript)" if m.synthetic else ""
    tag += " [compressed]" if m.compressed else ""
    tag += " (not yet in history.db)" if from_record and m.seq is None else ""
    lines: list[Line] = [[], [(f"#{m.index} {m.role or '?'}", f"bold {colour}"),
                              (f" {m.name or ''}  {output.timestamp(m.created_at)}{seq}{tag}", "dim")]]
    if m.synthetic and not full:
        return lines + [[(f"({len(m.text):,} characters of eviction index and summary; --full shows them)", "dim")]]
    return lines + render_blocks(m.blocks, full, thinking)


def _as_written_lines(m: Message, full: bool, thinking: bool) -> list[Line]:
    """A 1.x message as its file holds it: its role, name and timestamp as written, its marks, its blocks."""
    item = m.raw
    raw = item[0] if isinstance(item, list) and len(item) == 2 else item
    msg = raw if isinstance(raw, dict) else {"content": repr(raw)}
    role = msg.get("role", "?")
    colour = ROLE_COLOUR.get(role, "red") if isinstance(role, str) else "red"
    head: Line = [(f"#{m.index} {role}", f"bold {colour}"), (" ", None),
                  (f"{msg.get('name', '')}  {output.timestamp(msg.get('timestamp', ''))}", "dim")]
    if m.marks:
        head += [(" ", None), (f"[{', '.join(map(str, m.marks))}]", "dim")]
    return [[], head, *_written_blocks(msg.get("content"), full, thinking)]


def _emit(con: Console, lines: list[Line], through_rich: bool = False) -> None:
    """Plain text straight to a pipe or file (a 20,000-message record renders in well under a second); styled
    Text objects to a terminal. A 1.x file's view (`through_rich`) has always gone to a pipe through Rich too,
    which expands its tabs."""
    from rich.text import Text

    if not con.is_terminal and output.prose_width() is None:
        if through_rich:
            for line in lines:
                con.print(Text.assemble(*[(text, style) if style else text for text, style in line]), soft_wrap=True)
            return
        sys.stdout.write("\n".join("".join(text for text, _ in line) for line in lines) + "\n")
        sys.stdout.flush()
        return

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
    """Normalised blocks (qwenmem.core.session_model.Block), of either generation."""
    lines: list[Line] = []
    for b in blocks:
        if b.type == "text":
            lines.append([(b.text, None)])
        elif b.type == "thinking":
            lines.append(_thinking(b.text, thinking))
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


def _thinking(text: str, thinking: bool) -> Line:
    return [(f"thinking: {text}" if thinking else f"(thinking, {len(text):,} characters; --thinking shows it)",
             "dim italic")]


def _written_blocks(content: Any, full: bool, thinking: bool) -> list[Line]:
    """A 1.x message's content as written (the arguments as JSON, a tool output's media by type)."""
    if isinstance(content, str):
        return [[(content, None)]]
    if not isinstance(content, list):
        return [[(repr(content), "red")]]
    lines: list[Line] = []
    for block in content:
        if not isinstance(block, dict):
            lines.append([(repr(block), "red")])
            continue
        kind = block.get("type")
        if kind == "text":
            lines.append([(str(block.get("text", "")), None)])
        elif kind == "thinking":
            lines.append(_thinking(str(block.get("thinking", "")), thinking))
        elif kind == "tool_use":
            args = json.dumps(block.get("input", {}), ensure_ascii=False)
            lines.append([(f"→ {block.get('name')}", "yellow"), (f"({_shorten(args, 400, full)}) ", None),
                          (f"id={block.get('id')}", "dim")])
        elif kind == "tool_result":
            lines.append([(f"← {block.get('name')}", "cyan"), (" ", None), (f"id={block.get('id')}", "dim")])
            lines.append([(_shorten(_written_output(block.get("output")), 600, full), None)])
        elif kind in ("image", "audio", "video", "file"):
            src: dict[str, Any] = block["source"] if isinstance(block.get("source"), dict) else {}
            where = src.get("url") or (f"base64 {len(src.get('data') or '')} chars" if src.get("data") else "?")
            lines.append([(f"<{kind}: {block.get('filename') or where}>", "dim")])
        else:
            lines.append([(f"<{kind} block: {_shorten(json.dumps(block, ensure_ascii=False), 200, full)}>", "dim")])
    return lines


def _written_output(out_val: Any) -> str:
    if not isinstance(out_val, list):
        return str(out_val)
    return "\n".join(str(b.get("text", "")) if isinstance(b, dict) and b.get("type") == "text"
                     else f"<{b.get('type') if isinstance(b, dict) else type(b).__name__}>" for b in out_val)
