"""The options of one `compact` run and the numbers derived from them and agent.json (both generations)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from qwenmem.core.compaction.gen1.prune import PruneLimits
from qwenmem.core.errors import ConfigError, UnsafePathError, UsageError
from qwenmem.core.settings import Settings
from qwenmem.core.settings.gen1 import LEGACY
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.llm import LLMConfig

SUMMARIZERS = ("auto", "llm", "extractive")


@dataclass
class Gen2CheckOptions:
    """What a 2.x file's check needs beyond agent.json and the provider config."""

    context_size: int | None = None  # --max-input-length: overrides the provider's effective context
    trigger_ratio: float | None = None
    reserve_ratio: float | None = None
    system_tokens: int | None = None
    tools_tokens: int | None = None
    force: bool = False


@dataclass
class CompactOptions:
    max_input_length: int | None = None
    threshold_ratio: float | None = None
    reserve_ratio: float | None = None
    tokenizer: str = "estimate"
    force: bool = False
    dry_run: bool = False
    prune: bool = True
    summarize: bool = True
    longterm: bool | None = None  # None: agent.json summarize_when_compact
    summarizer: str = "auto"  # auto | llm | extractive
    recent_n: int | None = None
    old_max_bytes: int | None = None
    recent_max_bytes: int | None = None
    extra_instruction: str = ""
    llm: LLMConfig | None = None
    now: datetime | None = None
    gen2_check: Gen2CheckOptions | None = None  # 2.x files: C override, system/tools tokens
    llm_concurrency: int = 4  # sessions summarized at once by a remote LLM (writes stay one session at a time)


def effective_numbers(settings: Settings, opts: CompactOptions) -> tuple[int, float, float]:
    m = opts.max_input_length or settings.max_input_length
    t = opts.threshold_ratio if opts.threshold_ratio is not None else settings.compact_threshold_ratio
    r = opts.reserve_ratio if opts.reserve_ratio is not None else settings.reserve_threshold_ratio
    if m <= 0 or not 0 < t <= 1 or not 0 <= r < 1:
        raise UsageError(f"max input length must be > 0 and ratios in (0, 1]: got {m}, {t}, {r}")
    return m, t, r


def settings_dir(ws: Workspace, configured: str) -> Path:
    """A directory named in agent.json (dialog_path, tool_results_cache), refused if it leaves the workspace."""
    try:
        return ws.resolve_inside(configured)
    except UnsafePathError:
        raise ConfigError(ws.path / "agent.json", f"{configured!r} points outside the workspace; "
                          "qwenmem will not write there") from None


def prune_limits(settings: Settings, opts: CompactOptions, ws: Workspace) -> PruneLimits:
    return PruneLimits(
        recent_n=opts.recent_n if opts.recent_n is not None else settings.pruning_recent_n,
        old_max_bytes=opts.old_max_bytes if opts.old_max_bytes is not None else settings.pruning_old_msg_max_bytes,
        recent_max_bytes=(opts.recent_max_bytes if opts.recent_max_bytes is not None
                          else settings.pruning_recent_msg_max_bytes),
        exempt_extensions=tuple(settings.exempt_file_extensions),
        exempt_tools=tuple(settings.exempt_tool_names),
        cache_dir=str(settings_dir(ws, settings.tool_results_cache).relative_to(ws.path.resolve())),
    )


def summary_budget(settings: Settings, opts: CompactOptions) -> int:
    m, t, _ = effective_numbers(settings, opts)
    # Q@HEAD formats the summarizer input within T; ReMe (Q@PRE) within int(M * ratio * 0.95)
    return int(m * t * 0.95) if settings.config_layout == LEGACY else int(m * t)


def check_summarizer_choice(opts: CompactOptions) -> None:
    if opts.summarizer not in SUMMARIZERS:
        raise UsageError(f"unknown summarizer {opts.summarizer!r}; choose auto, llm or extractive")
    if opts.summarizer == "llm" and opts.llm is None:
        raise UsageError("--summarizer llm needs an LLM: pass --llm-base-url/--llm-model or set "
                         "QWENMEM_LLM_BASE_URL and QWENMEM_LLM_MODEL")
