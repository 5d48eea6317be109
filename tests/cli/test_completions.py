"""completions/ holds scripts generated from the app; this fails when they drift (regenerate with the command below).

    for s in bash zsh fish; do python -m qwenmem completions $s > completions/$(...); done

tests/cli/test_completions_shells.py drives the scripts in real bash, zsh and fish.
"""

import shutil
import subprocess
import sys

import pytest

from helpers import FIXTURE_ROOT, REPO, invoke, run_cli
from qwenmem.cli.completion import COMPLETION_FILES
from qwenmem.cli.completion import command_tree as tree_of
from qwenmem.cli.completion import generate as generate_for


def _root():
    import typer.main

    from qwenmem.cli.app import app

    return typer.main.get_command(app)


def generate(shell):
    return generate_for(shell, _root())


def command_tree():
    return tree_of(_root())


@pytest.mark.parametrize("shell", sorted(COMPLETION_FILES))
def test_committed_completion_matches_app(shell):
    committed = (REPO / "completions" / COMPLETION_FILES[shell]).read_text(encoding="utf-8")
    assert committed == generate(shell), f"completions/{COMPLETION_FILES[shell]} is stale: regenerate it"


def test_completion_covers_every_command():
    import typer.main

    from qwenmem.cli.app import app

    visible = {n for n, c in typer.main.get_command(app).commands.items() if not getattr(c, "hidden", False)}
    assert set(command_tree()[""].subs) == visible and "sessions" in visible
    fish = generate("fish")
    for name in sorted(visible):  # one line each, with its description
        assert f"complete -c qwenmem -n '__qwenmem_path_is \"\"' -a '{name}' -d '" in fish, name


def test_every_offered_sort_and_tokenizer_value_is_accepted():
    values = command_tree()["sessions list"].values
    for opt in ("--sort", "--tokenizer"):
        assert len(values[opt]) >= 3
        for value in values[opt]:
            run = invoke("-w", str(FIXTURE_ROOT), "sessions", "list", opt, value, "--json")
            assert run.code == 0, (opt, value, run.stderr)


def test_dynamic_words_for_agents_and_sessions():
    agents = run_cli("__complete", "agents", "-w", str(FIXTURE_ROOT))
    assert agents.code == 0 and agents.stdout.split() == ["coder", "default", "writer"]
    sessions = run_cli("__complete", "sessions", "-w", str(FIXTURE_ROOT), "--agent", "default")
    assert sessions.stdout.split() == ["console/default_1772000000001", "telegram/7700112233_telegram--7700112233"]
    # a missing workspace completes to nothing, quietly
    missing = run_cli("__complete", "sessions", "-w", str(FIXTURE_ROOT / "nope"))
    assert missing.code == 0 and missing.stdout == "" and missing.stderr == ""


def test_dynamic_words_import_nothing_heavy():
    probe = ("import sys; from qwenmem.cli.app import main\n"
             "try:\n    main(['__complete', 'sessions', '-w', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
             "heavy = [m for m in ('torch', 'numpy', 'whoosh', 'openai', 'sentence_transformers', 'rich.table')"
             " if m in sys.modules]\nprint('HEAVY', heavy)")
    proc = subprocess.run([sys.executable, "-c", probe, str(FIXTURE_ROOT)], capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO)})
    assert "HEAVY []" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_bash_function_completes_values_and_subcommands():
    script = REPO / "completions" / COMPLETION_FILES["bash"]
    probe = f"""source {script}
COMP_WORDS=(qwenmem sessions ""); COMP_CWORD=2; _qwenmem; echo "${{COMPREPLY[*]}}"
COMP_WORDS=(qwenmem sessions list --js); COMP_CWORD=3; _qwenmem; echo "${{COMPREPLY[*]}}"
COMP_WORDS=(qwenmem sessions list --sort ""); COMP_CWORD=4; _qwenmem; echo "${{COMPREPLY[*]}}"
COMP_WORDS=(qwenmem completions ""); COMP_CWORD=2; _qwenmem; echo "${{COMPREPLY[*]}}"
"""
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True).stdout.splitlines()
    assert out[0].split() == ["list", "repair", "restore", "show"]
    assert out[1].strip() == "--json"
    assert out[2].split() == ["modified", "name", "size", "messages", "tokens", "health"]
    assert out[3].split() == ["bash", "zsh", "fish"]
