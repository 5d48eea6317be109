"""The page reader never opens a special file where a store's -wal should be (opening a FIFO blocks)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from helpers import REPO


def test_a_fifo_at_the_wal_is_left_unread_and_the_main_file_still_read(tmp_path: Path):
    db = tmp_path / "history.db"
    con = sqlite3.connect(db)
    con.execute("create table t (x text)")
    con.executemany("insert into t values (?)", [("row",)] * 20)
    con.commit()
    con.close()
    os.mkfifo(f"{db}-wal")
    code = ("import sys; from pathlib import Path; from qwenmem.core.history.image import FileImage; "
            "img = FileImage(Path(sys.argv[1])); print(img.image is not None)")
    # a child process, so a regression hangs only the child (the timeout) and not the test run
    proc = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr
