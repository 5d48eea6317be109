"""What the upgrade will do to one workspace, computed without writing anything (the dry run is this plan)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from qwenmem.core.compaction.gen2.history_write import rows_for_message
from qwenmem.core.compaction.gen2.tokens import ZERO, Size, count_tokens
from qwenmem.core.history.keys import CHATS_JSON, ref_candidates
from qwenmem.core.history.rows import parse_timestamp
from qwenmem.core.session_model import gen2
from qwenmem.core.upgrade import shape, store
from qwenmem.core.upgrade.source import GEN1, DialogSource, SessionSource
from qwenmem.core.upgrade.stable import convert_stable

QWENPAW_IMPORT_DAYS = 30  # QwenPaw's import skips messages older than history_retention_days (default 30)


@dataclass
class SessionPlan:
    """One session file: its record and what the upgrade makes of it."""

    source: SessionSource
    session_id: str
    registered: bool  # chats.json names it (QwenPaw's own import only reads registered files)
    conv: shape.Converted
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    rows_there: set[str] = field(default_factory=set)
    shaped: shape.Shaped | None = None
    data: bytes = b""
    tokens_before: int = 0  # QwenPaw's own migration: every message back in the context, plus the summary
    tokens_after: int = 0
    trigger: float = 0.0
    qwenpaw_keeps: int = 0  # rows QwenPaw's lazy import would write for this file

    @property
    def rows_to_add(self) -> int:
        return sum(1 for r in self.rows if r[-1] not in self.rows_there)

    @property
    def would_compact(self) -> bool:
        return self.tokens_after > self.trigger if self.trigger else False


@dataclass
class DialogPlan:
    source: DialogSource
    rows: list[tuple[Any, ...]]
    rows_there: set[str] = field(default_factory=set)

    @property
    def rows_to_add(self) -> int:
        return sum(1 for r in self.rows if r[-1] not in self.rows_there)


def session_id_of(src: SessionSource) -> tuple[str, bool]:
    """The chat's session id (chats.json), else the request id the file name comes from (an orphan's)."""
    ref = src.ref
    if ref.source == CHATS_JSON and ref.session_id:
        return ref.session_id, True
    candidates = ref_candidates(ref)
    return (candidates[0] if candidates else ref.key), False


def _stamp_of(path: Path) -> str:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime).isoformat()
    except OSError:
        return datetime.now().isoformat()


def lazy_import_keeps(messages: list[dict[str, Any]], registered: bool, now: datetime) -> int:
    """How many of these messages' rows QwenPaw's startup import writes: none of an unregistered file, and none of
    a message older than 30 days (one without a parsable created_at is kept), spec §3.7."""
    if not registered:
        return 0
    cutoff = now - timedelta(days=QWENPAW_IMPORT_DAYS)
    kept = 0
    for m in messages:
        when = parse_timestamp(m.get("created_at"))
        if when is None or when.replace(tzinfo=None) >= cutoff:
            kept += 1
    return kept


def plan_session(src: SessionSource, agent_id: str, db: Path) -> SessionPlan:
    assert src.kind == GEN1
    sid, registered = session_id_of(src)
    conv = shape.convert_items(src.items, src.ref.rel, _stamp_of(src.ref.path))
    rows = [row for m in conv.messages for row in rows_for_message(m, sid, agent_id)]
    return SessionPlan(src, sid, registered, conv, rows, store.existing_keys(db, sid))


def plan_dialog(src: DialogSource, agent_id: str, db: Path, exclude: set[str]) -> DialogPlan:
    """`exclude`: dedup keys a session already has (a native upgrade's offloads of that session's messages)."""
    rel = "dialog/" + src.path.name
    msgs, previous = [], ""
    for pos, payload in enumerate(src.messages):
        msg = convert_stable(payload, rel, pos, previous)
        previous = str(msg.get("created_at") or previous)
        msgs.append(msg)
    rows = [row for m in msgs for row in rows_for_message(m, src.session_id, agent_id) if str(row[-1]) not in exclude]
    return DialogPlan(src, rows, store.existing_keys(db, src.session_id))


def predicted_seqs(plan: SessionPlan, start: int) -> dict[str, int]:
    """Seqs a dry run shows: the rows there keep theirs (unknown here: numbered on), new ones follow `start`."""
    out, nxt = {}, start
    for row in plan.rows:
        out[str(row[-1])] = nxt
        nxt += 1
    return out


def headlines_of(plan: SessionPlan, seqs: dict[str, int]) -> dict[int, str]:
    return {seqs[str(r[-1])]: str(r[9])[:400] for r in plan.rows if r[2] == "model_turn" and r[9]
            and str(r[-1]) in seqs}


def finish(plan: SessionPlan, strategy: str, agent_id: str, seqs: dict[str, int], fixed: Size, trigger: float,
           now: datetime) -> None:
    """The 2.x document for these seqs, its bytes and its token figures."""
    summary = plan.source.summary
    if strategy == shape.NATIVE:
        plan.shaped = shape.shape_native(plan.conv, summary, plan.session_id)
    else:
        plan.shaped = shape.shape_scroll(plan.conv, summary, plan.session_id, agent_id, seqs,
                                         headlines_of(plan, seqs))
    plan.data = gen2.encode(plan.shaped.doc)
    state = gen2.state_of(plan.shaped.doc)
    plan.tokens_before = count_tokens(plan.conv.messages, fixed, summary)
    plan.tokens_after = count_tokens(gen2.context_in(state), fixed, gen2.summary_in(state))
    plan.trigger = trigger
    plan.qwenpaw_keeps = lazy_import_keeps(plan.conv.messages, plan.registered, now)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


__all__ = ["ZERO", "DialogPlan", "SessionPlan", "finish", "plan_dialog", "plan_session", "predicted_seqs", "sha256"]
