"""The suite's own rules (tests/conftest.py + pyproject.toml): a corpus test skips without ../shared and fails when
QWENMEM_REQUIRE_SHARED=1; an empty parametrisation fails; slow tests run only when asked for."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers import REPO

PROBE = '''
import pytest
from helpers import needs_shared

@needs_shared
def test_corpus():
    pass

@pytest.mark.slow
def test_slow():
    pass

def test_fast():
    pass
'''


def _pytest(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO)]),
                "QWENMEM_SHARED": str(tmp_path / "no-shared"), **env}
    if "QWENMEM_REQUIRE_SHARED" not in env:
        full_env.pop("QWENMEM_REQUIRE_SHARED", None)  # CI sets it for the suite, not for this probe
    full_env.pop("QWENMEM_RUN_SLOW", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"), "--rootdir",
                           str(tmp_path), "-p", "conftest", "-p", "no:cacheprovider", "-rs", *args],
                          cwd=tmp_path, capture_output=True, text=True, env=full_env, timeout=120)


def test_corpus_test_skips_with_its_reason_and_slow_is_left_out(tmp_path):
    (tmp_path / "test_probe.py").write_text(PROBE)
    proc = _pytest(tmp_path, "test_probe.py")
    assert proc.returncode == 0, proc.stdout
    assert "1 passed, 1 skipped, 1 deselected" in proc.stdout and "absent on a fresh clone" in proc.stdout


def test_required_corpus_turns_the_skip_into_a_failure(tmp_path):
    (tmp_path / "test_probe.py").write_text(PROBE)
    proc = _pytest(tmp_path, "test_probe.py", "--run-slow", QWENMEM_REQUIRE_SHARED="1")
    assert proc.returncode == 1 and "QWENMEM_REQUIRE_SHARED=1 but the corpus is missing" in proc.stdout
    assert "2 passed" in proc.stdout  # --run-slow ran the slow one too


def test_an_empty_parametrisation_fails(tmp_path):
    (tmp_path / "test_empty.py").write_text("import pytest\n\n@pytest.mark.parametrize('x', [])\n"
                                            "def test_x(x):\n    pass\n")
    proc = _pytest(tmp_path, "test_empty.py")
    assert proc.returncode != 0 and "skipped" not in proc.stdout.splitlines()[-1], proc.stdout
