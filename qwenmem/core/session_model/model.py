"""The generation-neutral session model. Imports nothing from qwenmem.

Every object keeps a reference to the raw dict it was read from (`raw`), so nothing is lost and writers can edit
the original document. The normalised fields are what commands show and what `--json` prints
(`Message.to_json`): the same shape for a 1.x message, a 2.x message and a history.db row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# Block types after normalisation. 1.x `tool_use` is a `tool_call`; 1.x image/audio/video/file are `data`.
TEXT, THINKING, HINT, TOOL_CALL, TOOL_RESULT, DATA, OTHER = (
    "text", "thinking", "hint", "tool_call", "tool_result", "data", "other")


@dataclass
class Block:
    type: str
    text: str = ""  # text, thinking, hint, flattened tool output, or a media reference
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_input: str | None = None  # always the JSON text (2.x stores a string, 1.x a dict: it is encoded)
    tool_state: str | None = None
    original_type: str | None = None  # the type as written, when it differs (tool_use, image, unknown types)
    raw: Any = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "text": self.text}
        if self.type in (TOOL_CALL, TOOL_RESULT):
            out.update(tool_name=self.tool_name, tool_call_id=self.tool_call_id, tool_state=self.tool_state)
            if self.type == TOOL_CALL:
                out["tool_input"] = self.tool_input
        if self.original_type and self.original_type != self.type:
            out["original_type"] = self.original_type
        return out


@dataclass
class Message:
    index: int  # position in the file's message list, or in the history record
    id: str | None
    role: str | None
    name: str | None
    created_at: str | None  # 2.x created_at / 1.x timestamp / history.db created_at, verbatim
    blocks: list[Block] = field(default_factory=list)
    synthetic: bool = False  # the scroll `memory` placeholder: bookkeeping, not transcript (spec §10)
    compressed: bool = False  # 1.x mark: already summarised, hidden from the model
    marks: list[Any] | None = None  # 1.x marks as written (None for bare messages and 2.x)
    metadata: dict[str, Any] = field(default_factory=dict)
    seq: int | None = None  # history.db seq (the first of the message's rows)
    seq_hi: int | None = None
    live: bool | None = None  # history: still in the session file's live tail
    raw: Any = None

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.blocks if b.type == TEXT and b.text)

    def tool_calls(self) -> list[Block]:
        return [b for b in self.blocks if b.type == TOOL_CALL]

    def tool_results(self) -> list[Block]:
        return [b for b in self.blocks if b.type == TOOL_RESULT]

    def to_json(self) -> dict[str, Any]:
        """The normalised message shape shared by session files and history.db (pinned by the JSON contract)."""
        return {"index": self.index, "id": self.id, "role": self.role, "name": self.name,
                "created_at": self.created_at, "synthetic": self.synthetic, "compressed": self.compressed,
                "seq": self.seq, "seq_hi": self.seq_hi, "live": self.live,
                "blocks": [b.to_json() for b in self.blocks]}


@dataclass
class ScrollState:
    """What a scroll-wired 2.x agent keeps next to its state (`agent.scroll`, spec §2.2, §4.4-4.5)."""

    raw: dict[str, Any]
    continuation_summary: dict[str, Any] | None
    index: dict[str, Any] | None
    synthetic_ids: list[str]
    seq_by_id: dict[str, Any]  # as written: each value should be [seq_lo, seq_hi], readers check
    summary_update_failed: bool

    @property
    def covered_seq(self) -> tuple[int, int] | None:
        covered = (self.continuation_summary or {}).get("covered_seq")
        if isinstance(covered, list) and len(covered) == 2 and all(type(v) is int for v in covered):
            return covered[0], covered[1]
        return None

    def eviction_spans(self) -> list[tuple[int, int]]:
        """(seq_lo, seq_hi) of every block of the eviction index, oldest first (the `levels` key of older
        releases is read too, spec §4.5)."""
        index = self.index if isinstance(self.index, dict) else {}
        tiers = index.get("tiers", index.get("levels"))
        spans = []
        for tier in tiers if isinstance(tiers, list) else []:
            for block in tier if isinstance(tier, list) else []:
                if isinstance(block, dict) and type(block.get("seq_lo")) is int and type(block.get("seq_hi")) is int:
                    spans.append((block["seq_lo"], block["seq_hi"]))
        return sorted(spans)


Generation = Literal["1.x", "2.x"]  # the QwenPaw generation whose format a session file is in
SummaryKind = Literal["compressed_summary", "native", ""]  # "": none


@dataclass
class Session:
    """One session document of either generation. `doc` is the whole top-level JSON object, untouched."""

    generation: Generation
    doc: dict[str, Any]
    layout: str  # 1.x: "agent" | "memory" (QwenPaw's unit-test shape); 2.x: "agent"
    messages: list[Message]
    summary: str = ""  # 1.x _compressed_summary, or 2.x native state.summary as text
    summary_kind: SummaryKind = ""
    session_id: str | None = None  # 2.x state.session_id
    scroll: ScrollState | None = None
    mode_state: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)  # shape problems found while reading (never raised)

    def transcript(self) -> list[Message]:
        """The conversation: every message except scroll placeholders."""
        return [m for m in self.messages if not m.synthetic]

    @property
    def message_count(self) -> int:
        return sum(1 for m in self.messages if not m.synthetic)

    @property
    def strategy_hint(self) -> str | None:
        """2.x: `scroll` when the file carries scroll state, else `native` (spec §7.2 rule 5, inferred)."""
        if self.generation != "2.x":
            return None
        return "scroll" if self.scroll is not None else "native"
