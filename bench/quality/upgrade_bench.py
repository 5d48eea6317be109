"""`qwenmem upgrade` against QwenPaw 2.2.2.post1's own lazy migration, side by side (issue 28).

    python bench/quality/upgrade_bench.py            # prints the Markdown table of bench/RESULTS.md

Per workspace (copies of every 1.x workspace of ../shared/corpus/real, and a generated long 1.x workspace: 120 turns
90 days old, 30 of them offloaded to dialog/, 70 of the rest marked compressed, a registered chat and an orphan; and
the same shape spread from 45 days ago to today, so QwenPaw's 30-day import window cuts through it):
a real `qwenmem upgrade` run (scroll; the long one also native), then QwenPaw's own code in the agentscope 2.0.10 +
qwenpaw venv (tests/fixtures/qwenpaw2/qwenpaw_upgrade_check.py, $QWENMEM_AS2_VENV):
  * "1.x record": the messages of the session files (compressed ones included) + the dialog/ lines;
  * "QwenPaw import": the rows QwenPaw's startup import (`sync_sessions_to_history`, 30-day retention) writes from the
    1.x originals, which is all of 1.x that reaches its history.db (dialog/ never does);
  * "upgrade rows": HistoryStore's count after the upgrade, every row checked column for column against
    `msg_to_entries` of QwenPaw's own conversion of the 1.x messages;
  * tokens of the first turn's context: QwenPaw's lazy load (compressed messages back in) vs the upgraded file,
    counted by AgentScope's count_tokens (system prompt and tools aside), and whether QwenPaw's check compacts;
  * "loads unchanged": every session loads through QwenPawAgent.load_state_dict and dumps back to the same state,
    a turn's write-through + save loads back unchanged, and a real QwenPawAgent turn (its reply loop on a stand-in
    model with a fixed reply) saves, and QwenPaw's load of that save saves back to the same bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

AS2_VENV = Path(os.environ.get("QWENMEM_AS2_VENV", "/tmp/as2-venv"))
DRIVER = ROOT / "tests" / "fixtures" / "qwenpaw2" / "qwenpaw_upgrade_check.py"


def _record_size(ws: Path) -> tuple[int, int, int]:
    """(session-file messages, of them compressed, dialog/ lines) of a 1.x workspace."""
    msgs = compressed = dialog = 0
    for path in sorted((ws / "sessions").glob("*.json")):
        try:
            content = json.loads(path.read_text(encoding="utf-8"))["agent"]["memory"]["content"]
        except (ValueError, KeyError, TypeError):
            continue
        msgs += len(content)
        compressed += sum(1 for item in content if isinstance(item, list) and "compressed" in (item[1] or []))
    for path in sorted((ws / "dialog").glob("*.jsonl")) if (ws / "dialog").is_dir() else []:
        dialog += sum(1 for line in path.open(encoding="utf-8") if line.strip())
    return msgs, compressed, dialog


def _one(tmp: Path, name: str, original: Path, strategy: str) -> dict:
    from upgrade_support import copy_tree

    ws = copy_tree(original, tmp / name / "ws")
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "qwenmem", "-w", str(ws), "upgrade", "--strategy", strategy,
                           "--json"], capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    result = json.loads(proc.stdout)["result"]
    sessions = [{"file": f"sessions/{s['key']}.json", "session_id": s["session_id"],
                 "user_id": s["key"].split("_", 1)[0] if "_" in s["key"] else None}
                for s in result["sessions"] if s["status"] == "upgraded"]
    case = {"workspace": str(ws), "original": str(original), "db": result["history_db"],
            "agent_id": result["agent_id"], "context_size": 131072, "trigger_ratio": 0.8, "sessions": sessions}
    (tmp / name / "case.json").write_text(json.dumps(case), encoding="utf-8")
    judge = subprocess.run([str(AS2_VENV / "bin" / "python"), str(DRIVER), str(tmp / name / "case.json")],
                           capture_output=True, text=True)
    verdict = json.loads(judge.stdout.strip().splitlines()[-1])[0]
    msgs, compressed, dialog = _record_size(original)
    s = verdict["sessions"]
    dialog_rows = sum(d["rows_to_add"] for d in result["dialog"])
    return {"name": name, "strategy": strategy, "sessions": len(s), "messages": msgs, "compressed": compressed,
            "dialog": dialog, "lazy_rows": verdict["lazy_import_rows"],
            "rows": sum(x["rows"] for x in s) + dialog_rows, "rows_equal": all(x["rows_equal"] for x in s),
            "lazy_tokens": sum(x["lazy_tokens"] for x in s), "tokens": sum(x["tokens"] for x in s),
            "compacts": sum(1 for x in s if x["compacted"]),
            "unchanged": all(x["load_identical"] and x["second_load_identical"] and x.get("turn_replied")
                                 and x.get("turn_reload_identical") for x in s), "seconds": seconds}


def main() -> None:
    from upgrade_support import corpus_workspaces, long_workspace, recent_workspace

    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for n, ws in enumerate(corpus_workspaces()):
            name = ws.name if ws.name != "default" else ws.parent.parent.name + "/default"
            rows.append(_one(tmp, f"w{n}", ws, "scroll") | {"name": name[:48]})
        original = long_workspace(tmp / "long-original")
        for strategy in ("scroll", "native"):
            rows.append(_one(tmp, f"long-{strategy}", original, strategy) | {"name": "generated long 1.x"})
        recent = recent_workspace(tmp / "recent-original")
        rows.append(_one(tmp, "recent", recent, "scroll") | {"name": "generated recent 1.x (45 days → today)"})
    print("| workspace | strategy | sessions | 1.x messages (compressed) | dialog/ lines | QwenPaw import rows | "
          "upgrade rows (= QwenPaw's own rows) | first-turn tokens: lazy → upgrade | first turn compacts | "
          "loads unchanged | upgrade s |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        print(f"| {r['name']} | {r['strategy']} | {r['sessions']} | {r['messages']:,} ({r['compressed']:,}) | "
              f"{r['dialog']:,} | {r['lazy_rows']:,} | {r['rows']:,} ({'yes' if r['rows_equal'] else 'NO'}) | "
              f"{r['lazy_tokens']:,} → {r['tokens']:,} | {r['compacts']} | {'yes' if r['unchanged'] else 'NO'} | "
              f"{r['seconds']:.2f} |")


if __name__ == "__main__":
    main()
