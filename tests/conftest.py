"""Shared fixtures: real corpus files, a fresh copy of the sample workspace, a scripted OpenAI-compatible server."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("QWENMEM_SHARED", REPO.parent / "shared"))
CORPUS_REAL = SHARED / "corpus" / "real"
BENCHMARKS = SHARED / "corpus" / "benchmarks"
SAMPLE = REPO / "qwenmem" / "sample" / "workspace"

sys.path.insert(0, str(Path(__file__).resolve().parent))


def real_session_files() -> list[Path]:
    """Every real session file in the corpus (including the truncated backup)."""
    return sorted(p for p in CORPUS_REAL.rglob("sessions/*") if p.is_file())


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch, tmp_path_factory):
    """Never read the developer's real ~/.qwenpaw or LLM settings."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var in ("QWENMEM_WORKSPACE", "QWENPAW_WORKING_DIR", "COPAW_WORKING_DIR", "QWENMEM_LLM_BASE_URL",
                "QWENMEM_LLM_MODEL", "QWENMEM_LLM_API_KEY", "OPENAI_API_KEY", "EMBEDDING_BASE_URL",
                "EMBEDDING_MODEL_NAME", "EMBEDDING_API_KEY", "QWENPAW_SECRET_DIR", "COPAW_SECRET_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def sample_ws(tmp_path) -> Path:
    dest = tmp_path / "ws"
    shutil.copytree(SAMPLE, dest)
    return dest


@pytest.fixture
def llm_server():
    from llm_server import ScriptedLLMServer

    with ScriptedLLMServer() as server:
        yield server


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self):
        import json

        return json.loads(self.stdout)


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 120) -> Run:
    """Run qwenmem in a real subprocess (fresh interpreter, real exit code, separate stdout/stderr)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "qwenmem", *args], capture_output=True, text=True, env=full_env,
                          cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def invoke(*args: str) -> Run:
    """Run qwenmem in-process through the real entry point (same error mapping and exit codes), capturing output."""
    from qwenmem.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return Run(code, out.getvalue(), err.getvalue())
