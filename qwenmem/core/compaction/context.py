"""What one `compact` run (or `compact --check`) builds once and shares across all its sessions.

The token counter, the limits taken from agent.json and the options, the summarizer and its LLM client, and for
QwenPaw 2.x files the 2.x settings and the parts of the model input a 2.x file does not store. Parts that can fail
(a directory in agent.json that leaves the workspace, a ratio out of range) are built on first use and kept, so a
run that never needs one never fails on it, and the error is the session's, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from qwenmem.core.compaction.options import (Gen2CheckOptions, CompactOptions, check_summarizer_choice,
                                             effective_numbers, prune_limits, settings_dir, summary_budget)
from qwenmem.core.compaction.gen1.prune import PruneLimits
from qwenmem.core.compaction.gen1.summarize import ExtractiveSummarizer, LLMSummarizer
from qwenmem.core.fsio import timestamp_slug
from qwenmem.core.settings import Settings, user_tz
from qwenmem.core.tokens import TokenCounter, get_counter
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.compaction.gen2.prompt import FixedPart, RequestValues
    from qwenmem.core.compaction.gen2.prune import Limits
    from qwenmem.core.llm import ChatClient
    from qwenmem.core.settings.gen2 import Gen2Settings


#: the LLM's (async: it waits for the endpoint) or the offline one (plain functions)
Summarizer = LLMSummarizer | ExtractiveSummarizer


NO_LLM_NOTICE = "no LLM configured: using the offline extractive summarizer (--summarizer extractive)"


@dataclass
class CompactRun:
    ws: Workspace
    settings: Settings
    opts: CompactOptions
    stamp: str = field(default_factory=timestamp_slug)
    counter: TokenCounter = field(init=False)
    _gen2_limits: dict[tuple[bool, bool], Limits] = field(init=False, default_factory=dict, repr=False)
    _gen2_fixed: dict[tuple[str, RequestValues], tuple[FixedPart, FixedPart]] = field(init=False,
                                                                                      default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.counter = get_counter(self.opts.tokenizer, self.settings.token_count_estimate_divisor)

    # ----------------------------------------------------------------------------------- both generations

    @cached_property
    def chat_client(self) -> ChatClient | None:
        """The one LLM client of the run (None: the offline summarizers). Raises UsageError for a bad choice."""
        check_summarizer_choice(self.opts)
        if self.opts.summarizer == "extractive" or self.opts.llm is None:
            return None
        from qwenmem.core.llm import ChatClient

        return ChatClient(self.opts.llm)

    def now(self) -> datetime:
        tz = user_tz(self.settings)
        return (self.opts.now or datetime.now(tz=tz)).astimezone(tz)

    # ----------------------------------------------------------------------------------- 1.x

    @cached_property
    def numbers(self) -> tuple[int, float, float]:
        """(M, threshold ratio, reserve ratio)."""
        return effective_numbers(self.settings, self.opts)

    @cached_property
    def prune_limits(self) -> PruneLimits:
        return prune_limits(self.settings, self.opts, self.ws)

    @cached_property
    def dialog_dir(self) -> Path:
        return settings_dir(self.ws, self.settings.dialog_path)

    @cached_property
    def summary_budget(self) -> int:
        return summary_budget(self.settings, self.opts)

    @cached_property
    def summarizer(self) -> Summarizer:
        client = self.chat_client
        if client is None:
            return ExtractiveSummarizer(self.counter)
        return LLMSummarizer(client, self.counter, self.settings.language)

    @property
    def announcement(self) -> str:
        """Why the offline summarizer is used, when it is because no LLM is configured."""
        return NO_LLM_NOTICE if self.opts.summarizer == "auto" and self.chat_client is None else ""

    # ----------------------------------------------------------------------------------- 2.x

    @cached_property
    def gen2_options(self) -> Gen2CheckOptions:
        o = self.opts
        return o.gen2_check or Gen2CheckOptions(o.max_input_length, o.threshold_ratio, o.reserve_ratio, force=o.force)

    @cached_property
    def gen2_settings(self) -> Gen2Settings:
        from qwenmem.core.settings.gen2 import load_gen2_settings

        return load_gen2_settings(self.ws)

    @cached_property
    def gen2_agent_name(self) -> str:
        """The name QwenPaw's AgentBuilder gives the agent (agent.json `name`, else "QwenPaw"): its replies carry it."""
        from qwenmem.core.settings.gen2 import read_agent_json

        name = read_agent_json(self.ws).get("name")
        return name if isinstance(name, str) and name else "QwenPaw"

    def gen2_fixed_parts(self, strategy: str, request: RequestValues | None = None) -> tuple[FixedPart, FixedPart]:
        """(system prompt, tool schemas) QwenPaw sends under `strategy` for this request: not stored in 2.x files,
        rebuilt from the workspace (gen2.prompt), once per strategy and request."""
        from qwenmem.core.compaction.gen2.prompt import RequestValues, system_prompt_part, tool_schemas_part  # noqa: F811
        from qwenmem.core.settings.gen2 import read_agent_json

        request = request or RequestValues()
        key = (strategy, request)
        if key not in self._gen2_fixed:
            o = self.gen2_options
            doc = read_agent_json(self.ws)
            provider = self.gen2_settings.provider
            model = (provider.model_id if provider is not None else None) or ""
            self._gen2_fixed[key] = (system_prompt_part(self.ws, doc, strategy, model, request, o.system_tokens),
                                     tool_schemas_part(doc, strategy, o.tools_tokens))
        return self._gen2_fixed[key]

    def gen2_prune_limits(self, scroll_strategy: bool, defaults: bool = False) -> Limits:
        """2.x pruning limits for a strategy; `defaults`: agent.json's alone, without the command's overrides (what
        a 2.x `--check` counts)."""
        key = (scroll_strategy, defaults)
        if key not in self._gen2_limits:
            from qwenmem.core.compaction.gen2.prune import prune_limits_gen2

            opts = CompactOptions() if defaults else self.opts
            self._gen2_limits[key] = prune_limits_gen2(self.ws, self.settings, opts, scroll_strategy)
        return self._gen2_limits[key]
