"""The report of compacting one session, either generation (its `check` is that generation's `--check` report: 1.x
in qwenmem.core.compaction.gen1.check, 2.x in qwenmem.core.compaction.gen2.check)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Literal

from qwenmem.core.compaction.tiers import (Tier1Detail, Tier2Detail, Tier3Detail, TierReport, tier1_not_reported,
                                           tier2_not_reported, tier3_not_reported)

if TYPE_CHECKING:
    from qwenmem.core.compaction.gen1.check import CheckReport
    from qwenmem.core.compaction.gen2.check import Gen2CheckReport

__all__ = ["PARTIAL", "Commit", "CompactReport", "CompactStatus"]


PARTIAL = "partial"  # error_kind of a session that was written although part of the work could not be done


CompactStatus = Literal["compacted", "pruned", "unchanged", "dry-run", "skipped", "failed"]


@dataclass
class CompactReport:
    key: str
    path: str
    status: CompactStatus
    check: CheckReport | Gen2CheckReport | None = None
    tier1: TierReport[Tier1Detail] = field(default_factory=tier1_not_reported)
    tier2: TierReport[Tier2Detail] = field(default_factory=tier2_not_reported)
    tier3: TierReport[Tier3Detail] = field(default_factory=tier3_not_reported)
    kept_ids: list[str] = field(default_factory=list)
    removed_ids: list[str] = field(default_factory=list)
    context_tokens_before: int = 0
    context_tokens_after: int = 0
    backup: str = ""
    warnings: list[str] = field(default_factory=list)
    error: str = ""
    error_kind: str = ""


Commit = Callable[[], CompactReport]  # the writing step a generation's prepare returns (see compaction.run)
