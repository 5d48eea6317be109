"""Fixtures and hooks only (what the tests share lives in tests/helpers.py): the hermetic environment, a fresh
copy of the sample workspace, a scripted OpenAI-compatible server; `--run-slow`, the `slow` and `needs_shared` rules.

Tests marked `slow` run with --run-slow (or QWENMEM_RUN_SLOW=1, or any explicit -m expression). A test marked
`needs_shared` skips without the team's corpus at ../shared, or fails when QWENMEM_REQUIRE_SHARED=1 (helpers.py).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from helpers import CORPUS_REAL, SAMPLE, require_shared

# The terminal size comes from the test, never from the one running it: pytest-xdist's workers export COLUMNS=80
# and LINES=24, a user's shell may export others, and qwenmem wraps its output to COLUMNS. Tests of widths set it.
for _size_variable in ("COLUMNS", "LINES"):
    os.environ.pop(_size_variable, None)


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
