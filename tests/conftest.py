"""Shared fixtures: the project's own fixture files, the team's corpus (optional), a fresh copy of the sample
workspace, a scripted OpenAI-compatible server.

Fixtures: tests/fixtures/ is written by scripts/make_fixtures.py (checked in). Tests that read the team's corpus at
../shared carry `@needs_shared` (or use `corpus_params`): they skip with one reason when it is absent, and fail
instead when QWENMEM_REQUIRE_SHARED=1 (.ci/run sets it). Tests marked `slow` run with --run-slow (or
QWENMEM_RUN_SLOW=1, or any explicit -m expression).
"""

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
FIXTURES = REPO / "tests" / "fixtures"
FIXTURE_SESSIONS = FIXTURES / "sessions"
FIXTURE_ROOT = FIXTURES / "root"  # a QwenPaw root with three agents (default, coder, writer)

SHARED_PRESENT = CORPUS_REAL.is_dir()
REQUIRE_SHARED = os.environ.get("QWENMEM_REQUIRE_SHARED") == "1"
needs_shared = pytest.mark.needs_shared

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The terminal size comes from the test, never from the one running it: pytest-xdist's workers export COLUMNS=80
# and LINES=24, a user's shell may export others, and qwenmem wraps its output to COLUMNS. Tests of widths set it.
for _size_variable in ("COLUMNS", "LINES"):
    os.environ.pop(_size_variable, None)


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


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run tests marked slow (CI does; the default run leaves them out)")


def _full_run(config) -> bool:
    return (config.getoption("--run-slow") or os.environ.get("QWENMEM_RUN_SLOW") == "1"
            or bool(config.getoption("markexpr", "")))


def pytest_configure(config):
    import speed  # before the test modules import it: their @settings read it at import

    speed.FULL_RUN = _full_run(config)


def pytest_collection_modifyitems(config, items):
    if _full_run(config):
        return
    kept, slow = [], []
    for item in items:
        (slow if item.get_closest_marker("slow") else kept).append(item)
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = kept


def pytest_runtest_setup(item):
    marker = item.get_closest_marker("needs_shared")  # @needs_shared, or @pytest.mark.needs_shared(path)
    if marker is not None:
        require_shared(Path(marker.args[0]) if marker.args else CORPUS_REAL)


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
