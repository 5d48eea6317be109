"""What the tests share (imported as `from helpers import …`; tests/ is on sys.path through pyproject's pytest
`pythonpath`): the repository's paths, the team's corpus at ../shared (optional), and two ways to run qwenmem.

Corpus tests carry `@needs_shared` (or use `corpus_params`): they skip with one reason when it is absent, and fail
instead when QWENMEM_REQUIRE_SHARED=1 (.ci/run sets it); tests/conftest.py's hook applies the marker.
"""

from __future__ import annotations

import contextlib
import io
import os
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
FIXTURES = REPO / "tests" / "fixtures"
FIXTURE_SESSIONS = FIXTURES / "sessions"
FIXTURE_ROOT = FIXTURES / "root"  # a QwenPaw root with three agents (default, coder, writer)

SHARED_PRESENT = CORPUS_REAL.is_dir()
REQUIRE_SHARED = os.environ.get("QWENMEM_REQUIRE_SHARED") == "1"
needs_shared = pytest.mark.needs_shared


def real_session_files() -> list[Path]:
    """Every real session file in the corpus (including the truncated backup); [] without the corpus."""
    return sorted(p for p in CORPUS_REAL.rglob("sessions/*") if p.is_file()) if SHARED_PRESENT else []


def fixture_session_files() -> list[Path]:
    """Every session file in tests/fixtures/sessions (healthy and damaged)."""
    return sorted(p for p in FIXTURE_SESSIONS.iterdir() if p.is_file())


def corpus_params(values: list, ids=None, needs: Path = CORPUS_REAL) -> list:
    """Parameters drawn from the corpus: without it, one placeholder that skips (or fails, when required) with the
    reason; with it, the values themselves, so an empty list fails at collection (empty_parameter_set_mark)."""
    mark = pytest.mark.needs_shared(needs)
    if not Path(needs).exists():
        return [pytest.param(None, marks=mark, id="no-shared-corpus")]
    return [pytest.param(v, marks=mark, id=ids(v) if ids else None) for v in values]


def shared_reason(path: Path = CORPUS_REAL) -> str:
    return f"needs the team's corpus at {path} (absent on a fresh clone)"


def require_shared(path: Path = CORPUS_REAL) -> None:
    """Inside a test: skip when `path` (in ../shared) is absent, or fail when QWENMEM_REQUIRE_SHARED=1."""
    if not Path(path).exists():
        if REQUIRE_SHARED:
            pytest.fail(f"QWENMEM_REQUIRE_SHARED=1 but the corpus is missing: {shared_reason(path)}", pytrace=False)
        pytest.skip(shared_reason(path))


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
