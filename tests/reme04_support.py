"""The self-written ReMe 0.4 workspace of tests/fixtures/reme04/, copied where a test may write."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURE_WS = Path(__file__).resolve().parent / "fixtures" / "reme04" / "workspace"


def copy_fixture(dest: Path) -> Path:
    ws = dest / "ws"
    shutil.copytree(FIXTURE_WS, ws)
    (ws / "digest" / "procedure").mkdir(exist_ok=True)  # as in a real workspace (git keeps no empty folders)
    return ws
