"""The closed sets of option values, as enums, so that Typer validates them (a bad value is a usage error, exit 2)
and `--help`, docs/cli.md and the completion scripts list them. The values are the core's own
(tests/cli/test_choices.py keeps each enum equal to the tuple the library checks against); commands pass `.value` on."""

from __future__ import annotations

from enum import StrEnum


class SortKey(StrEnum):  # core.listing.SORT_KEYS
    MODIFIED = "modified"
    NAME = "name"
    SIZE = "size"
    MESSAGES = "messages"
    TOKENS = "tokens"
    HEALTH = "health"


class Tokenizer(StrEnum):  # core.tokens.TOKENIZERS
    ESTIMATE = "estimate"
    O200K = "o200k"
    CL100K = "cl100k"


class Summarizer(StrEnum):  # core.compaction.run / compaction.gen2.run
    AUTO = "auto"
    LLM = "llm"
    EXTRACTIVE = "extractive"


class SearchMode(StrEnum):  # core.index.vocabulary.MODES
    HYBRID = "hybrid"
    TEXT = "text"
    VECTOR = "vector"


class Fusion(StrEnum):  # core.index.vocabulary.FUSIONS
    WEIGHTED = "weighted"
    RRF = "rrf"
    REME = "reme"


class SearchFormat(StrEnum):
    TEXT = "text"
    REME = "reme"


class DreamMode(StrEnum):
    AUTO = "auto"
    LLM = "llm"
    DETERMINISTIC = "deterministic"


class Promote(StrEnum):  # core.dream.promote.PROMOTE_MODES
    FACTS = "facts"
    ALL = "all"
    NONE = "none"


class Embedder(StrEnum):  # core.index.embedders.BACKENDS
    AUTO = "auto"
    LOCAL = "local"
    OPENAI = "openai"
    NONE = "none"


class Engine(StrEnum):  # fleet
    LOCAL = "local"
    DASK = "dask"


class Shell(StrEnum):  # completion.SHELLS
    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"


class Job(StrEnum):  # cli/commands/schedule.py JOBS
    DREAM = "dream"
    DOCTOR = "doctor"
    SNAPSHOT = "snapshot"


class Strategy(StrEnum):  # core.ops.upgrade.Strategy
    SCROLL = "scroll"
    NATIVE = "native"
