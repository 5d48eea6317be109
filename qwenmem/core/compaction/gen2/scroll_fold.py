"""Scroll's pre-fold (step 3 of `ScrollContextManager.compress`, agents/context/scroll/manager.py @2.2.2.post1), on
raw Msg dicts: over the trigger, and unless the compaction is forced (/compact lowers trigger_ratio), QwenPaw first
replaces every eligible completed-turn tool result with a recovery pointer, recounts once, and evicts nothing when
that brings the count to the trigger or below (`compress`: "if tokens <= trigger: return"). When it does not, the
split runs on the folded context.

Eligible (`_tool_result_fold_candidates`, seen_active_only=False):
  * a tool_result block of a live, non-synthetic message (`_live_tool_results`), not one of the 5 newest
    (`_PROTECTED_RECENT_TOOL_RESULTS`), not in the active turn (`_active_turn_tail`), not already a stub
    (`_is_folded_stub`);
  * text-only: more than 200 characters of text (`_PRE_TRIM_MIN_CHARS`, `_tool_result_text_chars`) and a saving
    `len(str(output).encode()) - len(str([TextBlock(stub)]).encode()) > 0` -- str() of AgentScope's pydantic
    blocks, whose repr is emulated here field by field;
  * inline media (a data block with a base64 source): only when its id is in scroll's seen_tool_result_ids and
    persisted_tcids (the file's `agent.scroll`; compress persists every live result first, so persisted is
    assumed).
The stub is `_tool_result_pointer_stub`, or `_recall_page_stub` for recall_history results.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from qwenmem.core.jsonsafe import copy_json
from qwenmem.core.compaction.gen2.tokens import blocks_of

FOLD_MARK = "[scroll folded]"
RECALL_FOLD_MARK = "[scroll recall folded]"
PRE_TRIM_MIN_CHARS = 200
PROTECTED_RECENT_TOOL_RESULTS = 5
# AgentScope's default block id (uuid4().hex) and timestamp (datetime.now().isoformat()) of the replacement
# TextBlock: only their lengths enter the saving
_NEW_ID = "0" * 32
_NEW_STAMP = "2000-01-01T00:00:00.000000"


@dataclass(frozen=True)
class Fold:
    message: int  # index in the context
    block: int  # index in the message's content
    stub: str


def _is_folded_stub(block: dict[str, Any]) -> bool:
    out = block.get("output")
    if isinstance(out, str):
        return out.startswith((FOLD_MARK, RECALL_FOLD_MARK))
    if isinstance(out, list) and out:
        first = out[0]
        text = first.get("text", "") if isinstance(first, dict) else ""
        return str(text or "").startswith((FOLD_MARK, RECALL_FOLD_MARK))
    return False


def _text_chars(block: dict[str, Any]) -> int:
    out = block.get("output")
    if isinstance(out, str):
        return len(out)
    if not isinstance(out, list):
        return 0
    return sum(len(str(item.get("text", "") or "")) for item in out
               if isinstance(item, dict) and item.get("type") == "text")


def _has_inline_media(block: dict[str, Any]) -> bool:
    out = block.get("output")
    if not isinstance(out, list):
        return False
    for item in out:
        if isinstance(item, dict) and item.get("type") == "data":
            source = item.get("source")
            if isinstance(source, dict) and source.get("type") == "base64" and source.get("data"):
                return True
    return False


def pointer_stub(tcid: Any) -> str:
    """`_tool_result_pointer_stub`."""
    where = f'recall_history(op="recall_tool", tool_call_id={tcid!r})' if tcid else \
        'recall_history(op="search", query=...)'
    return f"{FOLD_MARK} old tool result content cleared; recover with {where}"


def recall_page_stub(block: dict[str, Any], call_input: dict[str, Any] | None) -> str:
    """`_recall_page_stub`."""
    metadata = block.get("metadata")
    page = metadata.get("qwenpaw_recall_page", {}) if isinstance(metadata, dict) else {}
    next_cursor = page.get("next_cursor") if isinstance(page, dict) else None
    if next_cursor and call_input:
        continuation = dict(call_input)
        continuation["cursor"] = next_cursor
        arguments = json.dumps(continuation, ensure_ascii=False, sort_keys=True)
        return (f"{RECALL_FOLD_MARK} consumed recall page cleared. Continue from the next page by calling "
                f"recall_history with arguments {arguments}. Do not repeat the previous cursor.")
    return (f"{RECALL_FOLD_MARK} consumed recall page cleared. The exact page must not be repeated; use a narrower "
            "seq range or a more specific keyword search if more evidence is needed.")


def _source_repr(source: Any) -> str:
    if not isinstance(source, dict):
        return repr(source)
    if source.get("type") == "url":  # pydantic prints AnyUrl('…'); a URL it would normalise is approximate here
        return (f"URLSource(type='url', url=AnyUrl({str(source.get('url', ''))!r}), "
                f"media_type={source.get('media_type')!r})")
    return f"Base64Source(type='base64', data={source.get('data')!r}, media_type={source.get('media_type')!r})"


def _item_repr(item: Any) -> str:
    """repr() of the pydantic TextBlock / DataBlock AgentScope builds from this dict (fields in declaration order,
    agentscope/message/_block.py @2.0.10); absent ids and timestamps are AgentScope's defaults, of fixed length."""
    if not isinstance(item, dict):
        return repr(item)
    ident, stamp = item.get("id", _NEW_ID), item.get("created_at", _NEW_STAMP)
    if item.get("type") == "data":
        return (f"DataBlock(type='data', id={ident!r}, source={_source_repr(item.get('source'))}, "
                f"name={item.get('name')!r}, created_at={stamp!r}, finished_at={item.get('finished_at')!r})")
    return (f"TextBlock(type='text', text={item.get('text', '')!r}, id={ident!r}, created_at={stamp!r}, "
            f"finished_at={item.get('finished_at')!r})")


def output_str(output: Any) -> str:
    """str(ToolResultBlock.output) as QwenPaw's saving estimate sees it."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "[" + ", ".join(_item_repr(item) for item in output) + "]"
    return str(output)


def replacement_str(stub: str) -> str:
    return output_str([{"type": "text", "text": stub, "id": _NEW_ID, "created_at": _NEW_STAMP, "finished_at": None}])


def _recall_inputs(context: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """`_tool_call_inputs`: the parsed input of every recall_history call of the context."""
    calls: dict[str, dict[str, Any]] = {}
    for msg in context:
        for block in blocks_of(msg):
            if not isinstance(block, dict) or block.get("type") != "tool_call" or \
                    block.get("name") != "recall_history":
                continue
            raw = block.get("input")
            if isinstance(raw, str):
                try:
                    raw = json.loads(raw)
                except ValueError:
                    raw = {}
            if isinstance(raw, dict):
                calls[str(block.get("id", ""))] = raw
    return calls


def _ids(state: Any, key: str) -> set[str]:
    values = state.get(key) if isinstance(state, dict) else None
    return {str(v) for v in values} if isinstance(values, list) else set()


def fold_candidates(context: Sequence[Any], synthetic: Sequence[bool], active_start: int | None,
                    scroll_state: Any = None) -> list[Fold]:
    """What `_batch_fold_completed_tool_results` would fold now (all of them, in context order)."""
    results = [(i, j, b) for i, msg in enumerate(context) if not synthetic[i] and isinstance(msg, dict)
               and isinstance(msg.get("content"), list)
               for j, b in enumerate(msg["content"]) if isinstance(b, dict) and b.get("type") == "tool_result"]
    protected = {(i, j) for i, j, _ in results[-PROTECTED_RECENT_TOOL_RESULTS:]} if results else set()
    seen = _ids(scroll_state, "seen_tool_result_ids")
    recall = _recall_inputs([m for m, s in zip(context, synthetic) if not s])
    folds = []
    for i, j, block in results:
        if (i, j) in protected or _is_folded_stub(block):
            continue
        if active_start is not None and i >= active_start:
            continue
        media = _has_inline_media(block)
        if not media and _text_chars(block) <= PRE_TRIM_MIN_CHARS:
            continue
        tcid = str(block.get("id") or "")
        if media and tcid not in seen:
            continue
        stub = (recall_page_stub(block, recall.get(tcid)) if block.get("name") == "recall_history" and not media
                else pointer_stub(block.get("id")))
        saving = len(output_str(block.get("output")).encode("utf-8", "surrogatepass")) - \
            len(replacement_str(stub).encode("utf-8", "surrogatepass"))
        if not media and saving <= 0:
            continue
        folds.append(Fold(i, j, stub))
    return folds


def folded(context: Sequence[Any], folds: Sequence[Fold]) -> list[Any]:
    """A copy of the context with each fold's output replaced by its stub (`_replace_tool_result_with_pointer`)."""
    out = list(context)
    by_msg: dict[int, list[Fold]] = {}
    for f in folds:
        by_msg.setdefault(f.message, []).append(f)
    for i, fs in by_msg.items():
        msg = copy_json(context[i])
        for f in fs:
            msg["content"][f.block]["output"] = [{"type": "text", "text": f.stub}]
        out[i] = msg
    return out
