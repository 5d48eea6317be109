"""The 2.x session document an upgraded 1.x session becomes, per strategy (spec §2.2, §4.3-4.5).

Both strategies keep the live context 1.x had: the messages 1.x marked `compressed` (hidden from its model) stay
out of `state.context`, where QwenPaw's own load would put them back (§2.6, §8.5).
  * scroll: they are evicted rows (history.db), named by one Tier-0 block of `scroll.index`; `state.context` is
    the `memory` placeholder + the live tail, and 1.x's summary is the continuation summary covering their seqs
    (gen1_summary). With nothing evicted, the summary stays in `state.summary`, where QwenPaw's migration puts it.
  * native: 1.x's summary is `state.summary` (AgentScope renders it before the context, §4.3); the compressed
    messages are offloaded to dialog/ in the 2.0 shape, as AgentScope's compression does.
The state is a full `AgentState` dump (QwenPaw's keys and defaults, §2.2) whose generated values are stable: its
`session_id` is the chat's, its `reply_id` derived from it, so a later load and save by QwenPaw changes nothing
that this document fixed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from qwenmem.core.compaction.gen2.evict import _BANNER, _END_INDEX, _HEADER, add_block, new_block
from qwenmem.core.compaction.gen2.evict import render_index
from qwenmem.core.session_model import gen2
from qwenmem.core.upgrade import gen1_summary
from qwenmem.core.upgrade.pairing import paired
from qwenmem.core.upgrade.stable import convert_stable, stable_hex

Strategy = Literal["scroll", "native"]  # the 2.x context strategy an upgrade shapes the live context for
SummaryPlace = Literal["continuation_summary", "state.summary", ""]
SCROLL: Final = "scroll"
NATIVE: Final = "native"
SCROLL_TAG = "scroll_memory"


@dataclass
class Converted:
    messages: list[dict[str, Any]]  # every message of the file, converted, in file order
    compressed: list[bool]

    @property
    def live(self) -> list[dict[str, Any]]:
        """The live context: not compressed, tool-paired as QwenPaw's load leaves it (pairing)."""
        return paired([m for m, c in zip(self.messages, self.compressed) if not c])

    @property
    def hidden(self) -> list[dict[str, Any]]:
        return [m for m, c in zip(self.messages, self.compressed) if c]


@dataclass
class Shaped:
    doc: dict[str, Any]
    evicted: int = 0
    summary_in: SummaryPlace = ""  # where 1.x's summary went ("": it had none)
    dialog_messages: list[dict[str, Any]] = field(default_factory=list)  # native: to offload to dialog/


def convert_items(items: list[Any], scope: str, fallback_stamp: str) -> Converted:
    msgs, marks = [], []
    previous = fallback_stamp
    for pos, item in enumerate(items):
        msg = convert_stable(item.payload, scope, pos, previous)
        previous = str(msg.get("created_at") or previous)
        msgs.append(msg)
        marks.append(item.compressed)
    return Converted(msgs, marks)


def agent_state(session_id: str, summary: Any, context: list[dict[str, Any]]) -> dict[str, Any]:
    """A full AgentState with this session's values; its reply id is derived from the session, so a rerun writes
    the same bytes."""
    return gen2.full_state(session_id, summary, context, stable_hex("reply", session_id))


def placeholder_text(index: dict[str, Any], continuation: dict[str, Any] | None) -> str:
    """`ScrollContextManager._rebuild_context`'s memory text (manager.py L2026-2066)."""
    body = _HEADER + render_index(index) + "\n" + _END_INDEX
    if continuation is None:
        return body + _BANNER
    return body.rstrip("\n") + "\n\n" + gen1_summary.render_background(continuation) + "\n" + _BANNER


def placeholder(session_id: str, text: str, stamp: str) -> dict[str, Any]:
    pid = stable_hex("placeholder", session_id)
    return {"name": "memory", "content": [{"type": "text", "text": text, "id": stable_hex("placeholder-text", pid),
                                          "created_at": stamp, "finished_at": None}],
            "role": "user", "id": pid, "metadata": {"qwenpaw_tag": SCROLL_TAG}, "created_at": stamp, "usage": None,
            "finished_at": None, "finished_reason": None, "structured_output": None, "error": None}


def _results(msg: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in msg.get("content") or [] if isinstance(b, dict) and b.get("type") == "tool_result"]


def _result_key(msg: dict[str, Any], n: int, b: dict[str, Any]) -> str:
    return str(b.get("id") or f"{msg.get('id')}#anon{n}")


def message_seqs(msg: dict[str, Any], seqs: dict[str, int]) -> list[int]:
    """The seqs of one message's rows (its own row, if any, and its results')."""
    out = [seqs[str(msg.get("id"))]] if str(msg.get("id")) in seqs else []
    out += [seqs[_result_key(msg, n, b)] for n, b in enumerate(_results(msg)) if _result_key(msg, n, b) in seqs]
    return out


def scroll_state(live: list[dict[str, Any]], seqs: dict[str, int], headlines: dict[int, str]) -> dict[str, Any]:
    """`ScrollContextManager.to_dict()` after `_persist_new` of every live message (manager.py L2181-2217)."""
    seq_by_id, turn_seq, nblk, leaves, tcids, seq_by_tcid = {}, {}, {}, {}, [], {}
    for msg in live:
        mid = str(msg.get("id"))
        span = message_seqs(msg, seqs)
        if not span:
            continue
        seq_by_id[mid] = [min(span), max(span)]
        if mid in seqs:
            turn_seq[mid] = seqs[mid]
            nblk[mid] = sum(1 for b in msg.get("content") or [] if isinstance(b, dict)
                            and b.get("type") != "tool_result")
            if seqs[mid] in headlines:
                leaves[mid] = [seqs[mid], headlines[seqs[mid]]]
        for n, b in enumerate(_results(msg)):
            key = _result_key(msg, n, b)
            if key in seqs:
                tcids.append(key)
                seq_by_tcid[key] = seqs[key]
    return {"persisted_ids": sorted(seq_by_id), "persisted_tcids": sorted(tcids), "seen_tool_result_ids": [],
            "seen_thinking_block_ids": [], "folded_thinking_block_ids": [], "seq_by_tcid": seq_by_tcid,
            "synthetic_ids": [], "seq_by_id": seq_by_id, "model_turn_seq": turn_seq, "model_turn_nblk": nblk,
            "leaf_by_id": leaves, "index": None, "continuation_summary": None, "summary_update_failed": False}


def shape_scroll(conv: Converted, summary: str, session_id: str, agent_id: str, seqs: dict[str, int],
                 headlines: dict[int, str]) -> Shaped:
    live, hidden = conv.live, conv.hidden
    scroll = scroll_state(live, seqs, headlines)
    evicted_seqs = [s for m in hidden for s in message_seqs(m, seqs)]
    if not evicted_seqs:
        scroll["index"] = {"session_id": session_id, "agent_id": agent_id, "tiers": []}
        return Shaped(gen2.new_document(agent_state(session_id, summary, live), scroll), 0,
                      "state.summary" if summary else "")
    lo, hi = min(evicted_seqs), max(evicted_seqs)
    index: dict[str, Any] = {"session_id": session_id, "agent_id": agent_id, "tiers": []}
    add_block(index, new_block(lo, hi, headlines))
    continuation = gen1_summary.continuation_summary(summary, (lo, hi))
    stamp = str(hidden[-1].get("created_at") or "")
    marker = placeholder(session_id, placeholder_text(index, continuation), stamp)
    scroll.update(index=index, continuation_summary=continuation, synthetic_ids=[marker["id"]])
    return Shaped(gen2.new_document(agent_state(session_id, "", [marker] + live), scroll), len(hidden),
                  "continuation_summary" if continuation else "")


def shape_native(conv: Converted, summary: str, session_id: str) -> Shaped:
    return Shaped(gen2.new_document(agent_state(session_id, summary, conv.live)),
                  len(conv.hidden), "state.summary" if summary else "", dialog_messages=conv.hidden)
