"""After `qwenmem upgrade`, ReMe 0.4.1.11's own file discovery (tests/fixtures/reme04/reme_discovery_check.py: the
watch rules QwenPaw 2.2.2.post1 configures, walked by ReMe's start-up scan) still finds every 1.x daily log, byte for
byte, and nothing is written under mem_metadata/. ReMe runs from $QWENMEM_REME04_SITE, a site-packages holding
reme-ai==0.4.1.11 (`pip install --no-deps reme-ai==0.4.1.11 loguru psutil zstandard watchfiles "apscheduler<4"` into any venv of
Python 3.11), on the agentscope 2.0.10 + qwenpaw venv; skipped without it (CI does not build it)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers import invoke
from upgrade_support import REAL, copy_tree, corpus_workspaces, recent_workspace
from validators import agentscope_python

DRIVER = Path(__file__).resolve().parents[2] / "fixtures" / "reme04" / "reme_discovery_check.py"
REME_SITE = Path(os.environ.get("QWENMEM_REME04_SITE") or "/tmp/qwenmem-reme04-site")


def _daily_logs(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted((ws / "memory").rglob("*.md"))}


def _discovered(workspaces: list[Path]) -> list[list[str]]:
    python = agentscope_python(qwenpaw=True)
    env = dict(os.environ, PYTHONPATH=str(REME_SITE))
    proc = subprocess.run([str(python), str(DRIVER), *map(str, workspaces)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.needs_shared(REAL)
def test_reme04_still_indexes_every_1x_daily_log_after_the_upgrade(tmp_path):
    if not (REME_SITE / "reme").is_dir():
        reason = f"no reme-ai 0.4.1.11 at QWENMEM_REME04_SITE={REME_SITE} (.ci/run builds it)"
        if os.environ.get("QWENMEM_REQUIRE_VALIDATORS") == "1":
            pytest.fail(f"QWENMEM_REQUIRE_VALIDATORS=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    originals = [ws for ws in corpus_workspaces() if (ws / "memory").is_dir()]
    generated = recent_workspace(tmp_path / "generated")
    (generated / "memory").mkdir()
    (generated / "memory" / "2026-03-01.md").write_text("# 2026-03-01\n\n- Booked the flight to Lisbon\n",
                                                        encoding="utf-8")
    originals.append(generated)
    assert len(originals) >= 3
    upgraded = []
    for n, original in enumerate(originals):
        ws = copy_tree(original, tmp_path / f"w{n}")
        run = invoke("-w", str(ws), "upgrade", "--json")
        assert run.code in (0, 1), run.stderr
        upgraded.append(ws)
    for original, ws, found in zip(originals, upgraded, _discovered(upgraded), strict=True):
        logs = _daily_logs(original)
        assert logs and set(logs) <= set(found), (original.name, sorted(set(logs) - set(found)))
        assert _daily_logs(ws) == logs, original.name
        assert not (ws / "mem_metadata").exists(), original.name
