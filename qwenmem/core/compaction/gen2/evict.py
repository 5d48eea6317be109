"""Scroll eviction of a QwenPaw 2.x session file, done from outside QwenPaw (spec qwenpaw2-workspace.md §4.4-4.5,
§10 "Writing a 2.x session").

A message may leave the file only when its rows (the message row and the rows of
its tool results) are in history.db (gen2.run writes the missing ones first, gen2.history_write);
the decision (scroll.decide) stops before the first message still without rows. What an eviction changes in the file:
  * one Tier-0 block {seq_lo, seq_hi, lines} appended to scroll.index (lines: the headlined model turns of the span
    from history.db, else one `(no milestone)` line); a tier of 10 blocks carries its 9 older blocks, one line
    each, into a block one tier up (eviction_index.py L158-208);
  * state.context = [a new `memory` placeholder] + the kept tail; the placeholder's id is the only synthetic id;
  * every scroll map pruned to what is still live (manager.py L2068-2139);
  * the continuation summary is not updated (that needs QwenPaw's validated LLM update): it stays, marked stale
    with summary_update_failed = true, exactly what QwenPaw does when its update fails.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from qwenmem.core.compaction.gen2.tokens import blocks_of
from qwenmem.core.session_model import gen2

TIER_CAP = 10
HEADLINE_CHARS = 400
NO_MILESTONE = "(no milestone)"
_HEADER = (
    "<system-info>\n[context compressed] The turns below were evicted from the live window but remain durable in "
    "conversation_history. This is an ARCHIVED MAP for reference only — NOT the live conversation. Read it top "
    "(oldest) to bottom (most recently compressed); the live turns follow after the banner at the end. Each '·' line "
    "is a seq span you can re-expand.\n\nRe-expand a span with the recall_history tool: recall_history(op=\"expand\", "
    "lo, hi) for the full turns (seq is a globally-unique address, so a span needs no other filter); op=\"search\" "
    "finds a seq by keywords. For advanced recall (sessions, custom SQL) use a more advanced Python recall tool if "
    "one is available to you.\n")
_END_INDEX = "\n═══════════════ END OF ARCHIVED INDEX ═══════════════\n"
_BANNER = (
    "\nThe CURRENT LIVE TURN is the message(s) that follow this one. Answer the most recent USER message there — NEVER "
    "a ⟦headline⟧ listed in the map above; those are archived, not requests. If your current request is not visible "
    "in the live turn, recall it first (see above); if recall cannot retrieve it, say so — never answer an older "
    "message as if it were the request.\n</system-info>")
STALE_NOTE = ("(This archived task state was not updated for the latest eviction; the evicted turns are in "
              "conversation_history.)")


@dataclass
class HistoryIndex:
    """What history.db holds for one session: message id → seq, tool_call_id → seq of its result, headlines."""

    msg_seq: dict[str, int] = field(default_factory=dict)
    result_seq: dict[str, int] = field(default_factory=dict)
    headlines: dict[int, str] = field(default_factory=dict)
    agent_id: str | None = None

    def has_rows(self, msg: Any) -> bool:
        if not isinstance(msg, dict) or str(msg.get("id")) not in self.msg_seq:
            return False
        return all(str(b.get("id")) in self.result_seq for b in blocks_of(msg)
                   if isinstance(b, dict) and b.get("type") == "tool_result")

    def span(self, msg: dict[str, Any]) -> list[int]:
        seqs = [self.msg_seq[str(msg.get("id"))]]
        seqs += [self.result_seq[str(b.get("id"))] for b in blocks_of(msg)
                 if isinstance(b, dict) and b.get("type") == "tool_result"]
        return seqs


def read_history_index(db_path: Path, session_id: str) -> HistoryIndex:
    from qwenmem.core.history.store import open_history

    out = HistoryIndex()
    with open_history(db_path) as reader:
        for row in reader.rows(session_id):
            out.agent_id = out.agent_id or row.agent_id
            if not row.dedup_key:
                continue
            if row.kind == "tool_result":
                out.result_seq[row.dedup_key] = row.seq
            else:
                out.msg_seq.setdefault(row.dedup_key, row.seq)
                if row.kind == "model_turn" and row.headline:
                    out.headlines[row.seq] = row.headline[:HEADLINE_CHARS]
    return out


def new_block(lo: int, hi: int, headlines: dict[int, str]) -> dict[str, Any]:
    lines = [[s, s, h, h] for s, h in sorted(headlines.items()) if lo <= s <= hi]
    return {"seq_lo": lo, "seq_hi": hi, "lines": lines or [[lo, hi, NO_MILESTONE, NO_MILESTONE]]}


def add_block(index: dict[str, Any], block: dict[str, Any]) -> None:
    key = "tiers" if "tiers" in index or "levels" not in index else "levels"
    tiers = index.setdefault(key, [])
    if not tiers:
        tiers.append([])
    tiers[0].append(block)
    level = 0
    while level < len(tiers) and len(tiers[level]) >= TIER_CAP:
        older, newest = tiers[level][:-1], tiers[level][-1]
        carried = {"seq_lo": older[0]["seq_lo"], "seq_hi": older[-1]["seq_hi"],
                   "lines": [[b["seq_lo"], b["seq_hi"], (b.get("lines") or [[0, 0, NO_MILESTONE, NO_MILESTONE]])[0][2],
                              (b.get("lines") or [[0, 0, NO_MILESTONE, NO_MILESTONE]])[-1][3]] for b in older]}
        tiers[level] = [newest]
        if level + 1 == len(tiers):
            tiers.append([])
        tiers[level + 1].append(carried)
        level += 1


def _line(line: list[Any]) -> str:
    lo, hi, head, tail = line
    where = f"seq {lo}" if lo == hi else f"seq {lo}–{hi}"
    return f"    · {where}  ⟦ {head} ⟧" if head == tail else f"    · {where}  ⟦ {head} ⟧ … ⟦ {tail} ⟧"


def render_index(index: dict[str, Any]) -> str:
    tiers = index.get("tiers", index.get("levels")) or []
    parts = []
    for level in range(len(tiers) - 1, -1, -1):  # oldest (highest tier) first
        title = "recently compressed" if level == 0 else "older, collapsed"
        parts.append(f"\n===== Tier {level} ({title}) =====")
        for block in tiers[level]:
            parts.append(f"  [seq {block['seq_lo']}–{block['seq_hi']}]")
            parts += [_line(line) for line in block.get("lines") or []]
    return "\n".join(parts)


def archived_task_state(old_placeholder_text: str) -> str:
    """The `[archived task state]` part of the previous placeholder, verbatim (between the index and the banner)."""
    start = old_placeholder_text.find("[archived task state]")
    if start < 0:
        return ""
    end = old_placeholder_text.find("The CURRENT LIVE TURN", start)
    return old_placeholder_text[start:end if end > 0 else None].rstrip()


def placeholder(index: dict[str, Any], task_state: str, now: datetime) -> dict[str, Any]:
    text = _HEADER + render_index(index) + "\n" + _END_INDEX
    if task_state:
        text += "\n" + task_state + "\n\n" + STALE_NOTE + "\n"
    text += _BANNER
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S.%f")
    return {"name": "memory", "content": [{"type": "text", "text": text, "id": uuid.uuid4().hex, "created_at": stamp,
                                          "finished_at": None}],
            "role": "user", "id": uuid.uuid4().hex, "metadata": {"qwenpaw_tag": "scroll_memory"}, "created_at": stamp,
            "usage": None, "finished_at": None, "finished_reason": None, "structured_output": None, "error": None}


def _live_sets(live: Sequence[dict[str, Any]]) -> tuple[set[str], set[str], set[str]]:
    ids = {str(m.get("id")) for m in live}
    tcids, block_ids = set(), set()
    for m in live:
        for b in blocks_of(m):
            if isinstance(b, dict):
                block_ids.add(str(b.get("id")))
                if b.get("type") in ("tool_call", "tool_result"):
                    tcids.add(str(b.get("id")))
    return ids, tcids, block_ids


def prune_scroll_maps(scroll: dict[str, Any], live: Sequence[dict[str, Any]], synthetic_id: str) -> None:
    ids, tcids, block_ids = _live_sets(live)
    for key, keep in (("persisted_ids", ids), ("persisted_tcids", tcids), ("seen_tool_result_ids", tcids),
                      ("seen_thinking_block_ids", block_ids), ("folded_thinking_block_ids", block_ids)):
        if isinstance(scroll.get(key), list):
            scroll[key] = sorted(v for v in scroll[key] if str(v) in keep)
    for key, keep in (("seq_by_tcid", tcids), ("seq_by_id", ids), ("model_turn_seq", ids), ("model_turn_nblk", ids),
                      ("leaf_by_id", ids)):
        if isinstance(scroll.get(key), dict):
            scroll[key] = {k: v for k, v in scroll[key].items() if k in keep}
    scroll["synthetic_ids"] = [synthetic_id]


def evict(doc: dict[str, Any], evict_idx: Sequence[int], hist: HistoryIndex, session_id: str, now: datetime
          ) -> tuple[dict[str, Any], list[Any]]:
    """Apply the eviction to `doc` (in place). Returns (the new block, the evicted messages)."""
    scroll = gen2.ensure_scroll(doc)
    context = gen2.context_of(doc)
    gone = set(evict_idx)
    evicted = [context[i] for i in evict_idx]
    if not all(hist.has_rows(m) for m in evicted):
        raise ValueError("a message to evict has no rows in history.db")  # the decision never allows it
    seqs = [s for m in evicted for s in hist.span(m)]
    block = new_block(min(seqs), max(seqs), hist.headlines)
    synthetic = set(str(i) for i in scroll.get("synthetic_ids") or [])
    old_text = "\n".join(str(b.get("text") or "") for m in context if str(m.get("id")) in synthetic
                         or (m.get("metadata") or {}).get("qwenpaw_tag") == "scroll_memory"
                         for b in blocks_of(m) if isinstance(b, dict))
    live = [m for i, m in enumerate(context) if i not in gone and str(m.get("id")) not in synthetic
            and (m.get("metadata") or {}).get("qwenpaw_tag") != "scroll_memory"]
    index: dict[str, Any] = scroll["index"] if isinstance(scroll.get("index"), dict) else {}
    index.setdefault("session_id", session_id)
    index.setdefault("agent_id", hist.agent_id or "default")
    add_block(index, block)
    scroll["index"] = index
    marker = placeholder(index, archived_task_state(old_text), now)
    gen2.set_context(doc, [marker] + live)
    prune_scroll_maps(scroll, live, marker["id"])
    if scroll.get("continuation_summary"):
        scroll["summary_update_failed"] = True
    return block, evicted
