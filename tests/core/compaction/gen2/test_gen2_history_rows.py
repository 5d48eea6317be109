"""The history.db rows qwenmem writes for a 2.x message (compact's evictions, the upgrade) are the rows QwenPaw's
own `msg_to_entries` and its import's dedup keys make, column for column: on every message of the sessions QwenPaw
2.2.2.post1 wrote (the corpus) and on the shapes where an earlier writer of ours differed (a message of tool
results only, a result without an id, an empty block list, media by URL and inline)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from qwenmem.core.compaction.gen2.history_write import rows_for_message
from qwenpaw2_support import GEN2_CORPUS, needs_gen2_corpus
from validators import agentscope_python

pytestmark = needs_gen2_corpus
DRIVER = Path(__file__).resolve().parents[3] / "fixtures" / "qwenpaw2" / "qwenpaw_msg_entries.py"
COLUMNS = ("kind", "role", "name", "content", "tool_call_id", "tool_input", "tool_state", "headline", "metadata",
           "created_at", "dedup_key")
AT = "2026-11-30T10:00:00.000000+00:00"


def _edge_cases() -> list[dict]:
    image = {"type": "data", "id": "d1", "name": "map.png", "created_at": AT,
             "source": {"type": "url", "url": "https://example.org/map.png", "media_type": "image/png"}}
    inline = {"type": "data", "id": "d2", "created_at": AT,
              "source": {"type": "base64", "data": "aGVsbG8=", "media_type": "image/jpeg"}}
    call = {"type": "tool_call", "id": "call_1", "name": "read_file", "input": "{\"path\": \"a.md\"}",
            "state": "finished", "created_at": AT}
    result = {"type": "tool_result", "id": "call_1", "name": "read_file", "state": "success", "created_at": AT,
              "output": [{"type": "text", "text": "42"}, image]}
    no_id = {"type": "tool_result", "id": "", "name": "shell", "state": "error", "created_at": AT, "output": []}
    return [
        {"id": "m1", "name": "Friday", "role": "assistant", "created_at": AT, "metadata": {},
         "content": [{"type": "text", "text": "⟦ plan the trip ⟧ on it"}, call, result]},  # no headline: not alone
        {"id": "m5", "name": "Friday", "role": "assistant", "created_at": AT, "metadata": {},
         "content": [{"type": "text", "text": "Booked.\n<!-- ⟦ flight to Lisbon, 3 May ⟧ -->"}]},
        {"id": "m2", "name": "Friday", "role": "assistant", "created_at": AT, "metadata": {}, "content": [result, no_id]},
        {"id": "m3", "name": "user", "role": "user", "created_at": AT, "metadata": {},
         "content": [{"type": "text", "text": "look"}, image, inline]},
        {"id": "m4", "name": "user", "role": "user", "created_at": AT, "metadata": {}, "content": []},
    ]


def _corpus_messages() -> list[dict]:
    messages = []
    for path in sorted((GEN2_CORPUS / "root" / "workspaces" / "default" / "sessions").rglob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue  # the corpus's file with bytes after its document
        state = doc.get("agent", {}).get("state") if isinstance(doc, dict) else None
        if isinstance(state, dict):
            messages += [m for m in state.get("context") or [] if isinstance(m, dict)]
    return messages


def test_our_rows_are_qwenpaws_rows(tmp_path):
    python = agentscope_python(qwenpaw=True)
    messages = _corpus_messages() + _edge_cases()
    assert len(messages) > len(_edge_cases())
    (tmp_path / "messages.json").write_text(json.dumps(messages), encoding="utf-8")
    proc = subprocess.run([str(python), str(DRIVER), str(tmp_path / "messages.json")], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    differ = []
    for msg, want in zip(messages, theirs, strict=True):
        # the INSERT's columns but the session, agent and blocks (block ids are drawn afresh by AgentScope)
        ours = [dict(zip(COLUMNS, row[2:10] + row[11:], strict=True)) for row in rows_for_message(msg, "s", None)]
        if ours != want:
            differ.append((msg.get("id"), ours, want))
    assert differ == []
