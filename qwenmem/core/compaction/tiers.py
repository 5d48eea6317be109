"""What each tier of one compaction reports, typed: `TierReport.detail` is one of these dataclasses.

Their fields are the keys of the tier's `detail` object in `compact --json` (pinned by tests/cli/test_compact_cli.py and
the 2.x compaction tests), so a field is renamed only with a `qwenmem_json` bump.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar


@dataclass
class NotReported:
    """A tier that did not get as far as reporting (a skipped or failed session, 2.x pruning switched off)."""


@dataclass
class PruneDetail:
    """Tier 1, both generations: tool outputs cut (new offload files) and re-cut (already marked)."""

    outputs_cut: int = 0
    outputs_recut: int = 0
    bytes_removed: int = 0
    offload_files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


@dataclass
class SummaryDetail:
    """Tier 2 of a 1.x session: the threshold decision, the summary and the dialog/ offload."""

    reason: str
    threshold: int
    reserve: int
    summarizer: str | None
    chunks: int
    llm_calls: int
    summary_tokens_before: int
    summary_tokens_after: int | None
    removed_messages: int
    kept_messages: int
    aligned: bool
    fallback: str
    dialog_files: list[str] = field(default_factory=list)
    dialog_lines: int = 0
    dialog_already_present: int = 0


@dataclass
class Gen2Decision:
    """Tier 2 of a 2.x session that is not compacted (either strategy): why not."""

    reason: str
    strategy: str
    kept_messages: int
    summarizer: str | None = None
    chunks: int = 0
    removed_messages: int = 0
    dialog_files: list[str] = field(default_factory=list)


@dataclass
class NativeDetail:
    """Tier 2 of a compacted 2.x native session: AgentScope's split, the summary and the dialog/ offload."""

    reason: str
    strategy: str
    summarizer: str
    llm_calls: int
    removed_messages: int
    kept_messages: int
    boundary_blocks: list[int]
    reserve_fallback: bool
    dialog_files: list[str]
    dialog_lines: int
    dialog_already_present: int
    chunks: int = 0


@dataclass
class ScrollDetail:
    """Tier 2 of an evicted 2.x scroll session: the Tier-0 block's seq range and the history.db rows written."""

    reason: str
    strategy: str
    summarizer: str
    removed_messages: int
    kept_messages: int
    evicted_seq: list[int]
    placeholder_id: str
    history_rows_written: int
    history_rows_missing_before: int
    chunks: int = 0
    dialog_files: list[str] = field(default_factory=list)


@dataclass
class LongtermDetail:
    """Tier 3: the note in memory/<date>.md."""

    path: str | None = None
    duplicate: bool = False
    written: bool = False
    chars: int = 0


Tier1Detail = PruneDetail | NotReported
Tier2Detail = SummaryDetail | Gen2Decision | NativeDetail | ScrollDetail | NotReported
Tier3Detail = LongtermDetail | NotReported
D = TypeVar("D")


@dataclass
class TierReport(Generic[D]):
    ran: bool
    tokens_before: int
    tokens_after: int
    detail: D


def tier1_not_reported() -> TierReport[Tier1Detail]:
    return TierReport(False, 0, 0, NotReported())


def tier2_not_reported() -> TierReport[Tier2Detail]:
    return TierReport(False, 0, 0, NotReported())


def tier3_not_reported() -> TierReport[Tier3Detail]:
    return TierReport(False, 0, 0, NotReported())
