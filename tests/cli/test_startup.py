"""`qwenmem --help` and the model-free commands must not import heavy libraries (principle 5)."""

import json
import os
import subprocess
import sys

import pytest

from helpers import REPO

HEAVY = ("torch", "sentence_transformers", "openai", "whoosh", "transformers", "numpy", "tiktoken", "onnxruntime", "onnx")

PROBE = """
import json, sys
from qwenmem.cli.app import run
code = run(sys.argv[1:])
heavy = sorted({m.split('.')[0] for m in sys.modules} & set(%r))
sys.stderr.write('\\nHEAVY=' + json.dumps(heavy) + '\\n')
""" % (HEAVY,)


def loaded_heavy_modules(*argv: str) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env, timeout=60)
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY=")]
    assert line, proc.stderr
    return json.loads(line[-1][len("HEAVY="):])


@pytest.mark.parametrize("argv", [
    ["--help"],
    ["sessions", "--help"],
    ["sessions", "list", "--help"],
    ["--version"],
])
def test_help_imports_nothing_heavy(argv):
    assert loaded_heavy_modules(*argv) == []


def test_sessions_list_and_show_import_nothing_heavy(sample_ws):
    assert loaded_heavy_modules("-w", str(sample_ws), "sessions", "list") == []
    assert loaded_heavy_modules("-w", str(sample_ws), "sessions", "show", "console/default_1764235442381") == []
    assert loaded_heavy_modules("-w", str(sample_ws), "info", "--json") == []


def test_every_command_help_imports_nothing_heavy():
    from qwenmem.cli.app import app
    import typer.main

    root = typer.main.get_command(app)
    paths = []
    for name, cmd in root.commands.items():
        paths.append([name, "--help"])
        for sub in getattr(cmd, "commands", {}) or {}:
            paths.append([name, sub, "--help"])
    for argv in paths:
        assert loaded_heavy_modules(*argv) == [], argv
