"""QwenPaw's own history search finds what the upgrade put in history.db: messages 1.x had offloaded to dialog/,
ones it had compressed, and the live ones (issue 28). Judged by QwenPaw 2.2.2.post1's `MemorySpace.search`, the
search behind its recall tool, in the validator venv."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

from helpers import invoke
from upgrade_support import long_workspace
from validators import agentscope_python

DRIVER = Path(__file__).resolve().parents[2] / "fixtures" / "qwenpaw2" / "qwenpaw_history_search.py"
# long_workspace's turns: the first 30 offloaded to dialog/, the next 70 compressed, the last 20 live
TURNS = {"dialog/": 3, "compressed": 45, "live": 110}


def test_qwenpaws_history_search_finds_offloaded_compressed_and_live_messages(tmp_path):
    python = agentscope_python(qwenpaw=True)
    ws = long_workspace(tmp_path / "ws")
    run = invoke("-w", str(ws), "upgrade", "--json")
    assert run.code == 0, run.stderr
    db = ws / "history.db"
    conn = sqlite3.connect(db)
    try:
        wanted = {}
        for where, turn in TURNS.items():
            [(seq,)] = conn.execute("SELECT seq FROM conversation_history WHERE content LIKE ?",
                                    (f"question {turn} about %",)).fetchall()
            wanted[f"question {turn}"] = (where, seq)
    finally:
        conn.close()
    proc = subprocess.run([str(python), str(DRIVER), str(db), *wanted], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    missed = [f"{where} ({query}, seq {seq})" for query, (where, seq) in wanted.items() if seq not in found[query]]
    assert missed == []
