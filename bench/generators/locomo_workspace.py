"""Turn LoCoMo conversations into QwenPaw workspaces (evaluation only; the data is CC BY-NC 4.0).

Each conversation becomes <dest>/<sample_id>/ with memory/<YYYY-MM-DD>.md daily logs, one per session date
(sessions on the same day share the file). One turn per line, the turn id kept on its line:

    # Session 3 — 1:14 pm on 25 May, 2023
    [D3:1] Caroline: Hey Melanie! ...
    [D3:2] Melanie: ... [shares a photo: a painting of a sunset]

`evidence_lines(ws)` maps every dia_id back to (path, line), so recall can be computed from line ranges.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path

SHARED = Path(os.environ.get("QWENMEM_SHARED", Path(__file__).resolve().parents[3] / "shared"))  # as tests/conftest.py
LOCOMO = SHARED / "corpus" / "benchmarks" / "locomo" / "locomo10.json"
DIA = re.compile(r"D\d+:\d+")


def session_date(text: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08'."""
    day = text.split(" on ", 1)[-1].strip()
    return datetime.strptime(day, "%d %B, %Y").date().isoformat()


def build(conversation: dict, dest: Path) -> Path:
    conv = conversation["conversation"]
    ws = dest / conversation["sample_id"]
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
    files: dict[str, list[str]] = {}
    for n in numbers:
        when = conv.get(f"session_{n}_date_time", "")
        lines = files.setdefault(session_date(when), [])
        if lines:
            lines.append("")
        lines.append(f"# Session {n} — {when}")
        for turn in conv[f"session_{n}"]:
            text = " ".join(str(turn.get("text", "")).split())
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            lines.append(f"[{turn['dia_id']}] {turn['speaker']}: {text}")
    for day, lines in files.items():
        (ws / "memory" / f"{day}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ws


def evidence_lines(ws: Path) -> dict[str, tuple[str, int]]:
    out = {}
    for f in sorted((ws / "memory").glob("*.md")):
        for i, line in enumerate(f.read_text(encoding="utf-8").split("\n"), start=1):
            m = re.match(r"\[(D\d+:\d+)\]", line)
            if m:
                out[m.group(1)] = (f"memory/{f.name}", i)
    return out


def questions(conversation: dict, categories=(1, 2, 3, 4)) -> list[dict]:
    """QA items with at least one evidence id (malformed lists like 'D8:6; D9:17' are split)."""
    out = []
    for qa in conversation["qa"]:
        ids = sorted({m for ev in qa.get("evidence", []) for m in DIA.findall(str(ev))})
        if qa.get("category") in categories and ids:
            out.append({"question": qa["question"], "evidence": ids, "category": qa["category"]})
    return out


def load() -> list[dict]:
    return json.loads(LOCOMO.read_text(encoding="utf-8"))
