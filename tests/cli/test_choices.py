"""Option values are enums (qwenmem/cli/choices.py): the same values the library checks against, validated by the
parser (exit 2, with the JSON error envelope under --json), and listed by --help and the completion scripts."""

from __future__ import annotations

import pytest

from helpers import invoke
from qwenmem.cli import choices as C

LIBRARY_VALUES = {
    C.SortKey: "qwenmem.core.listing:SORT_KEYS",
    C.Tokenizer: "qwenmem.core.tokens:TOKENIZERS",
    C.SearchMode: "qwenmem.core.index.search:MODES",
    C.Fusion: "qwenmem.core.index.search:FUSIONS",
    C.Promote: "qwenmem.core.dream.promote:PROMOTE_MODES",
    C.Embedder: "qwenmem.core.index.embedders:BACKENDS",
    C.Shell: "qwenmem.cli.completion:SHELLS",
}


@pytest.mark.parametrize("enum", sorted(LIBRARY_VALUES, key=lambda e: e.__name__), ids=lambda e: e.__name__)
def test_each_enum_has_exactly_the_values_the_library_accepts(enum):
    import importlib

    module, _, name = LIBRARY_VALUES[enum].partition(":")
    assert tuple(e.value for e in enum) == tuple(getattr(importlib.import_module(module), name))


# (command line before the option, option, a value it takes, the values --help lists)
OPTIONS = [
    (["sessions", "list"], "--sort", "tokens", C.SortKey),
    (["sessions", "list"], "--tokenizer", "o200k", C.Tokenizer),
    (["compact", "--all", "--check"], "--tokenizer", "cl100k", C.Tokenizer),
    (["compact", "--all", "--check"], "--summarizer", "extractive", C.Summarizer),
    (["search", "x"], "--mode", "text", C.SearchMode),
    (["search", "x"], "--fusion", "rrf", C.Fusion),
    (["search", "x"], "--format", "reme", C.SearchFormat),
    (["dream", "--dry-run"], "--mode", "deterministic", C.DreamMode),
    (["dream", "--dry-run"], "--promote", "all", C.Promote),
    (["reindex", "--dry-run"], "--embedder", "none", C.Embedder),
]


@pytest.mark.parametrize("before,option,good,enum", OPTIONS, ids=lambda v: v if isinstance(v, str) else None)
def test_a_value_outside_the_set_is_a_usage_error_with_the_json_envelope(sample_ws, before, option, good, enum):
    bad = invoke("-w", str(sample_ws), *before, option, "bogus", "--json")
    assert bad.code == 2
    doc = bad.json()
    assert doc["status"] == "error" and doc["errors"][0]["code"] == "usage"
    assert all(e.value in doc["errors"][0]["message"] for e in enum)


@pytest.mark.parametrize("before,option,good,enum", OPTIONS, ids=lambda v: v if isinstance(v, str) else None)
def test_help_lists_the_values(before, option, good, enum):
    path = [w for w in before if not w.startswith("-") and w != "x"]
    shown = invoke(*path, "--help")
    assert shown.code == 0
    assert "<" + "|".join(e.value for e in enum) + ">" in shown.stdout.replace("\n", "").replace(" ", "")


def test_fleet_engine_and_completions_shell_are_checked_by_the_parser(tmp_path):
    assert invoke("fleet", str(tmp_path), "--engine", "slurm", "--", "doctor").code == 2
    bad = invoke("completions", "tcsh")
    assert bad.code == 2 and "bash" in bad.stderr
    assert invoke("completions", "fish").code == 0


def test_completion_offers_the_choices_of_every_enum_option():
    from qwenmem.cli.app import app
    from qwenmem.cli.completion import command_tree
    import typer

    tree = command_tree(typer.main.get_command(app))
    assert tree["sessions list"].values["--sort"] == [e.value for e in C.SortKey]
    assert tree["search"].values["--format"] == ["text", "reme"]
    assert tree["fleet"].values["--engine"] == ["local", "dask"]
    assert tree["dream"].values["--mode"] == ["auto", "llm", "deterministic"]
    assert tree["completions"].arg == ["bash", "zsh", "fish"]
    assert tree[""].values["--color"] == ["auto", "always", "never"]
