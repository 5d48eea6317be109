"""The dream code keeps the layering rules: core never imports the CLI stack, nothing heavy at import time."""

from __future__ import annotations

import subprocess
import sys

from helpers import REPO

HEAVY = ("torch", "sentence_transformers", "openai", "whoosh", "numpy", "typer", "rich")


def _imported_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout
    return set(out.split())


def test_core_dream_imports_no_cli_and_nothing_heavy():
    mods = _imported_after("import qwenmem.core.dream.run, qwenmem.core.dream.llm_rewrite, qwenmem.core.dream.validate")
    assert not {m for m in mods if m.split(".")[0] in HEAVY}


def test_dream_command_module_imports_nothing_heavy():
    mods = _imported_after("import qwenmem.cli.commands.dream")
    assert not {m for m in mods if m.split(".")[0] in HEAVY[:5]}


def test_help_lists_dream_with_examples():
    out = subprocess.run([sys.executable, "-m", "qwenmem", "dream", "--help"], capture_output=True, text=True,
                         cwd=REPO).stdout
    for flag in ("--dry-run", "--restore", "--keep", "--quiet", "--log-file", "--max-shrink", "--allow-shrink",
                 "--date", "--json", "--llm-base-url"):
        assert flag in out, flag
    assert "qwenmem dream --restore" in out
