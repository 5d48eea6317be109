"""QwenPaw's own code as the judge: the separate venv with agentscope==2.0.10 and the qwenpaw 2.2.2.post1 wheel
(installed --no-deps) that the validator tests run in a subprocess (AgentState/Msg validation, QwenPaw's 1.x
converter and loader, compress_context).

One place for every test: the venv is $QWENMEM_AS2_VENV, else /tmp/as2-venv (the bench scripts read the same
variable). Without it the tests skip with one line saying how to build it; with QWENMEM_REQUIRE_VALIDATORS=1 (.ci/run
sets it, with a venv it builds and caches) they fail instead, so CI cannot pass by skipping them.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

import pytest

AGENTSCOPE_VERSION = "2.0.10"
AS2_VENV = Path(os.environ.get("QWENMEM_AS2_VENV") or "/tmp/as2-venv")
AS2_PYTHON = AS2_VENV / "bin" / "python"
REQUIRED = os.environ.get("QWENMEM_REQUIRE_VALIDATORS") == "1"
MAKE_VENV = f"python3 bench/peer/agentscope2_check.py --make-venv {AS2_VENV}"


@functools.cache
def missing(qwenpaw: bool = False) -> str | None:
    """Why the venv cannot judge (None when it can): absent, another agentscope, or no qwenpaw wheel."""
    if not AS2_PYTHON.is_file():
        return f"no AgentScope {AGENTSCOPE_VERSION} venv at {AS2_VENV} (build it: {MAKE_VENV})"
    probe = "import agentscope; print(agentscope.__version__)" + ("; import qwenpaw._compat" if qwenpaw else "")
    proc = subprocess.run([str(AS2_PYTHON), "-c", probe], capture_output=True, text=True, timeout=300)
    if proc.returncode:
        what = "agentscope" if not proc.stdout.strip() else "the qwenpaw 2.2.2.post1 wheel"
        return f"{what} does not import in {AS2_VENV} (rebuild it: {MAKE_VENV})"
    version = proc.stdout.split()[0] if proc.stdout.split() else "?"
    if version != AGENTSCOPE_VERSION:
        return f"{AS2_VENV} has agentscope {version}, not {AGENTSCOPE_VERSION} (rebuild it: {MAKE_VENV})"
    return None


def agentscope_python(qwenpaw: bool = False) -> Path:
    """Inside a test: the venv's interpreter; skip when it is missing, or fail when QWENMEM_REQUIRE_VALIDATORS=1."""
    reason = missing(qwenpaw)
    if reason is not None:
        if REQUIRED:
            pytest.fail(f"QWENMEM_REQUIRE_VALIDATORS=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return AS2_PYTHON


def python_importing(module: str) -> Path:
    """Inside a test: the venv's interpreter when `module` (a part of QwenPaw) imports there; skip, or fail when
    QWENMEM_REQUIRE_VALIDATORS=1, when it does not."""
    python = agentscope_python(qwenpaw=True)
    proc = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True, text=True, timeout=300)
    if proc.returncode:
        reason = f"{module} does not import in {AS2_VENV} ({proc.stderr.strip().splitlines()[-1:]}; rebuild: {MAKE_VENV})"
        if REQUIRED:
            pytest.fail(f"QWENMEM_REQUIRE_VALIDATORS=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return python


def optional_agentscope_python() -> Path | None:
    """For an extra check inside a test that also proves something without the venv: None when the venv is absent
    (and not required)."""
    if missing() is not None and not REQUIRED:
        return None
    return agentscope_python()
