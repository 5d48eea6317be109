"""docs/cli.md is generated from the app; this fails when it drifts (regenerate with the command below).

    python -m qwenmem.cli.reference > docs/cli.md
"""

import typer.main

from helpers import REPO
from qwenmem.cli.app import app
from qwenmem.cli.reference import generate


def test_committed_reference_matches_app():
    committed = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert committed == generate(typer.main.get_command(app)), "docs/cli.md is stale: regenerate it"


def test_reference_has_every_command_and_option():
    root = typer.main.get_command(app)
    text = generate(root)
    for name, cmd in root.commands.items():
        assert f"## `qwenmem {name}`" in text
        for sub in (getattr(cmd, "commands", None) or {}):
            assert f"## `qwenmem {name} {sub}`" in text
    assert "--format <table|tsv|json>" in text and "--no-pager" in text
