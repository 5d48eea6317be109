"""Shared by tests/core/upgrade/: a generated long 1.x workspace (compressed marks, a summary in 1.x's sections,
dialog/ offloads, tool turns, a registered chat and an orphan, an agent.json with a 1.x-only key) and corpus copies."""

from __future__ import annotations

import json
import shutil
import stat
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from helpers import SHARED

REAL = SHARED / "corpus" / "real"
SUMMARY_GEN1 = ("## Goal\n- Plan the Lisbon trip in May\n\n## Constraints & Preferences\n- Budget under 2000 EUR\n\n"
              "## Progress\n### Done\n- [x] Booked the flight\n\n### In Progress\n- [ ] Choose a hotel\n\n"
              "### Blocked\n- (none)\n\n## Key Decisions\n- **Alfama district**: close to the old town\n\n"
              "## Next Steps\n1. Compare three hotels\n\n## Critical Context\n- The user prefers trains")


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def _turn(i: int, t: datetime) -> list[dict[str, Any]]:
    user = {"id": f"u{i:04d}", "name": "user", "role": "user", "content": [
        {"type": "text", "text": f"question {i} about tram {i % 7} pastel de nata"}], "metadata": {},
        "timestamp": _stamp(t)}
    call = {"id": f"a{i:04d}", "name": "Friday", "role": "assistant", "content": [
        {"type": "tool_use", "id": f"call{i:04d}", "name": "read_file", "input": {"path": f"notes/{i}.md"},
         "raw_input": json.dumps({"path": f"notes/{i}.md"})}], "metadata": {},
        "timestamp": _stamp(t + timedelta(seconds=2))}
    result = {"id": f"r{i:04d}", "name": "system", "role": "system", "content": [
        {"type": "tool_result", "id": f"call{i:04d}", "name": "read_file",
         "output": [{"type": "text", "text": f"notes {i}: " + "azulejo " * 40}]}], "metadata": None,
        "timestamp": _stamp(t + timedelta(seconds=3))}
    answer = {"id": f"b{i:04d}", "name": "Friday", "role": "assistant", "content": [
        {"type": "text", "text": f"answer {i}: take tram {i % 7}"}], "metadata": {},
        "timestamp": _stamp(t + timedelta(seconds=5))}
    return [user, call, result, answer]


def long_workspace(dest: Path, turns: int = 120, compressed_turns: int = 70, dialog_turns: int = 30) -> Path:
    """A 1.x workspace: dialog/ holds the first `dialog_turns` turns (1.x removed them from the file), the session
    file the rest, of which the first `compressed_turns` are marked compressed; 90 days old."""
    start = datetime.combine(datetime.now().date(), datetime.min.time()) - timedelta(days=90)  # same all day
    return _workspace(dest, [start + timedelta(minutes=i) for i in range(turns)], compressed_turns, dialog_turns)


def recent_workspace(dest: Path, turns: int = 120, compressed_turns: int = 70, dialog_turns: int = 30) -> Path:
    """long_workspace's shape, its turns spread from 45 days ago to today: half older than 32 days, half younger
    than 28, so QwenPaw's 30-day import window falls between them whatever the timezone (its cutoff is UTC, 1.x
    timestamps are naive local time)."""
    now = datetime.now().replace(microsecond=0) - timedelta(minutes=10)
    old, young = turns // 2, turns - turns // 2
    offsets = [45 - 13 * i / max(old - 1, 1) for i in range(old)] + [28 - 28 * i / max(young - 1, 1)
                                                                      for i in range(young)]
    return _workspace(dest, [now - timedelta(days=d) for d in offsets], compressed_turns, dialog_turns)


def session_timestamps(ws: Path, name: str = "alice_console--alice.json") -> list[datetime]:
    """The 1.x timestamps of every message of a session file, compressed ones included."""
    content = json.loads((ws / "sessions" / name).read_text(encoding="utf-8"))["agent"]["memory"]["content"]
    return [datetime.strptime(m["timestamp"], "%Y-%m-%d %H:%M:%S.%f") for m, _marks in content]


def _workspace(ws: Path, turn_times: list[datetime], compressed_turns: int, dialog_turns: int) -> Path:
    (ws / "sessions").mkdir(parents=True)
    (ws / "dialog").mkdir()
    start = turn_times[0]
    msgs = [m for i, t in enumerate(turn_times) for m in _turn(i, t)]
    offloaded, kept = msgs[:4 * dialog_turns], msgs[4 * dialog_turns:]
    for m in offloaded:
        day = m["timestamp"].split()[0]
        with open(ws / "dialog" / f"{day}.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(m, ensure_ascii=False) + "\n")
    content = [[m, ["compressed"] if n < 4 * compressed_turns else []] for n, m in enumerate(kept)]
    doc = {"agent": {"memory": {"content": content, "_compressed_summary": SUMMARY_GEN1},
                     "toolkit": {"active_groups": []}, "name": "Friday", "_sys_prompt": "You are Friday."}}
    (ws / "sessions" / "alice_console--alice.json").write_text(json.dumps(doc, ensure_ascii=False),
                                                               encoding="utf-8")
    orphan = {"agent": {"memory": {"content": [[m, []] for m in _turn(999, start)], "_compressed_summary": ""}}}
    (ws / "sessions" / "default_1775000000000.json").write_text(json.dumps(orphan), encoding="utf-8")
    chats = {"version": 1, "chats": [{"id": "c1", "name": "alice", "session_id": "console:alice",
                                      "user_id": "alice", "channel": "console", "meta": {}}]}
    (ws / "chats.json").write_text(json.dumps(chats), encoding="utf-8")
    agent = {"id": "default", "name": "Friday", "running": {"light_context_config": {"dialog_path": "dialog"},
                                                            "summarize_when_compact": True}, "custom_key": [1, 2]}
    (ws / "agent.json").write_text(json.dumps(agent, indent=2), encoding="utf-8")
    return ws


def corpus_workspaces() -> list[Path]:
    """Every 1.x workspace of the real corpus that holds session files."""
    if not REAL.is_dir():
        return []
    found = sorted({p.parent.parent for p in REAL.rglob("sessions/*.json")})
    return found


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    for p in [dest, *dest.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return dest


def tree_bytes(ws: Path, skip_private: bool = True) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("*"))
            if p.is_file() and not (skip_private and ".qwenmem" in p.relative_to(ws).parts)}
