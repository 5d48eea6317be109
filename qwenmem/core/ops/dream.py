"""`dream`: consolidate MEMORY.md with the day's log (dedupe, replace, merge, promote), safe for cron.

`dream --restore` and `dream --list-backups` are operations of their own (dream_restore.py, dream_list_backups.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from qwenmem.core.errors import UsageError
from qwenmem.core.events import recording
from qwenmem.core.ops.outcome import Outcome
from qwenmem.core.workspace import Workspace

if TYPE_CHECKING:
    from qwenmem.core.dream.run import DreamResult
    from qwenmem.core.llm import LLMConfig
    from qwenmem.core.settings import Settings

Mode = Literal["auto", "llm", "deterministic"]
Promote = Literal["facts", "all", "none"]  # qwenmem.core.dream.promote.PROMOTE_MODES
#: fields of DreamResult that are not in the document: its warnings are the outcome's
OMITTED_FIELDS = frozenset({"warnings"})


def validate(backup: str | None, restore: bool) -> None:
    """The rule of `qwenmem dream`'s one argument, for the CLI and fleet."""
    if backup and not restore:
        raise UsageError(f"unexpected argument {backup!r}: a backup name is only taken with --restore")


@dataclass(frozen=True)
class Options:
    """Every flag of `qwenmem dream` that bears on a dream (not --restore, --list-backups, --log-file or the
    output's), with the CLI's defaults."""

    date: str | None = None  # memory/YYYY-MM-DD.md: a date, today or yesterday; None: today in the user's timezone
    mode: Mode = "auto"
    promote: Promote = "facts"
    embeddings: bool = True
    similarity: float = 0.9
    max_shrink: float = 0.5
    allow_shrink: bool = False
    keep: int | None = None
    dry_run: bool = False
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_timeout: float | None = None
    llm_retries: int | None = None


def run(ws: Workspace, options: Options) -> Outcome[DreamResult]:
    from qwenmem.core.dream.run import DreamOptions, dream
    from qwenmem.core.settings import load_settings

    with recording() as log:
        settings = load_settings(ws)
        result = dream(ws, settings, DreamOptions(
            date=options.date, dry_run=options.dry_run, promote=options.promote, use_embeddings=options.embeddings,
            similarity=options.similarity, max_shrink=options.max_shrink, allow_shrink=options.allow_shrink,
            keep=options.keep, llm=_llm_config(ws, settings, options)))
    return Outcome("ok", result, tuple(result.warnings), events=log.events)


def _llm_config(ws: Workspace, settings: Settings, o: Options) -> LLMConfig | None:
    from qwenmem.core.llm import resolve_llm_config

    if o.mode == "deterministic":
        return None
    config = resolve_llm_config(ws, settings, o.llm_base_url, o.llm_model, o.llm_api_key, o.llm_timeout,
                                retries=o.llm_retries)
    if config is None and o.mode == "llm":
        raise UsageError("--mode llm: no LLM configured (use --llm-base-url/--llm-model or $QWENMEM_LLM_BASE_URL)")
    return config
