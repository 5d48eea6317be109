"""The validator tests (QwenPaw's own code in the AgentScope 2.0.10 venv) find their venv through one helper
(tests/validators.py): they skip with one line without it, and fail when QWENMEM_REQUIRE_VALIDATORS=1, as in CI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from helpers import REPO

# one real validator test of each kind: agentscope only, and agentscope + the qwenpaw wheel
VALIDATOR_TESTS = ["tests/core/repair/gen2/test_repair2_core.py::test_repaired_files_pass_agentscopes_own_validation",
                   "tests/core/repair/gen2/test_repair2_convert.py::test_the_conversion_equals_qwenpaws_own"]


def _pytest(tmp_path, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "QWENMEM_AS2_VENV": str(tmp_path / "no-venv"), **env}
    if "QWENMEM_REQUIRE_VALIDATORS" not in env:
        full_env.pop("QWENMEM_REQUIRE_VALIDATORS", None)  # CI sets it for the suite, not for this probe
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q", *VALIDATOR_TESTS],
                          cwd=REPO, capture_output=True, text=True, env=full_env, timeout=300)


def test_without_the_venv_the_validator_tests_skip_with_one_line_saying_how_to_build_it(tmp_path):
    proc = _pytest(tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "2 skipped" in proc.stdout
    reasons = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(reasons) == 1 and reasons[0].startswith("SKIPPED [2] "), proc.stdout  # one reason, both tests
    assert f"no AgentScope 2.0.10 venv at {tmp_path / 'no-venv'}" in reasons[0]
    assert f"bench/peer/agentscope2_check.py --make-venv {tmp_path / 'no-venv'}" in reasons[0]


def test_required_validators_turn_the_skip_into_a_failure(tmp_path):
    proc = _pytest(tmp_path, QWENMEM_REQUIRE_VALIDATORS="1")
    assert proc.returncode == 1, proc.stdout
    assert "2 failed" in proc.stdout
    assert "QWENMEM_REQUIRE_VALIDATORS=1 but no AgentScope 2.0.10 venv at" in proc.stdout


def test_a_venv_without_the_qwenpaw_wheel_is_named_as_such(tmp_path):
    """A venv whose agentscope imports but qwenpaw does not (a --make-venv cut short) is not taken as complete."""
    venv = tmp_path / "half-venv"
    (venv / "bin").mkdir(parents=True)
    fake = venv / "bin" / "python"
    fake.write_text("#!/bin/sh\ncase \"$2\" in *qwenpaw*) echo 2.0.10; exit 1;; *) echo 2.0.10;; esac\n")
    fake.chmod(0o755)
    proc = _pytest(tmp_path, QWENMEM_AS2_VENV=str(venv), QWENMEM_REQUIRE_VALIDATORS="1")
    assert "the qwenpaw 2.2.2.post1 wheel does not import in" in proc.stdout, proc.stdout


def test_ci_builds_the_venv_and_requires_the_validators():
    ci = (REPO / ".ci" / "run").read_text()
    assert re.search(r"^export QWENMEM_REQUIRE_VALIDATORS=1$", ci, re.M)
    assert re.search(r"^export QWENMEM_AS2_VENV=", ci, re.M)
    assert "bench/peer/agentscope2_check.py --make-venv" in ci


def test_no_test_looks_for_the_venv_on_its_own():
    """Every validator test goes through tests/validators.py, so CI's venv is the one they use."""
    tests = [p for p in sorted((REPO / "tests").rglob("*.py")) if "fixtures" not in p.relative_to(REPO / "tests").parts]
    own = [p.name for p in tests if p.name not in ("validators.py", Path(__file__).name)
           and re.search(r"/tmp/as2-venv|QWENMEM_AS2_PYTHON|\bAS2_PYTHON\b", p.read_text())]
    assert own == []
