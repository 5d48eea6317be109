"""completions/ holds scripts generated from the app; this fails when they drift (regenerate with the command below).

    for s in bash zsh fish; do python -m qwenmem completions $s > completions/$(...); done
"""

import shutil
import subprocess

import pytest

from conftest import REPO
from qwenmem.cli.completion import COMPLETION_FILES
from qwenmem.cli.completion import generate as generate_for


def generate(shell):
    import typer.main

    from qwenmem.cli.app import app

    return generate_for(shell, typer.main.get_command(app))


@pytest.mark.parametrize("shell", sorted(COMPLETION_FILES))
def test_committed_completion_matches_app(shell):
    committed = (REPO / "completions" / COMPLETION_FILES[shell]).read_text(encoding="utf-8")
    assert committed == generate(shell), f"completions/{COMPLETION_FILES[shell]} is stale: regenerate it"


def test_completion_covers_every_command():
    import typer.main

    from qwenmem.cli.app import app

    script = generate("fish")
    for name in typer.main.get_command(app).commands:
        assert f"-a {name}" in script


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_bash_completion_completes_subcommands():
    script = REPO / "completions" / COMPLETION_FILES["bash"]
    probe = f"""source {script}
COMP_WORDS=(qwenmem sessions ""); COMP_CWORD=2; _qwenmem; echo "${{COMPREPLY[@]}}"
COMP_WORDS=(qwenmem sessions list --js); COMP_CWORD=3; _qwenmem; echo "${{COMPREPLY[@]}}"
"""
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True).stdout.splitlines()
    assert "list" in out[0].split() and "show" in out[0].split()
    assert out[1].strip() == "--json"
