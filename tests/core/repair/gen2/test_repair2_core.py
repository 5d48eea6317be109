"""`sessions repair` on QwenPaw 2.x files: AgentState rules, misplaced blocks, byte damage, scroll bookkeeping."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import invoke
from qwenpaw2_support import builder, copy_corpus, needs_gen2_corpus
from validators import agentscope_python
from qwenmem.core.repair.diagnose import diagnose
from qwenmem.core.repair.gen2.diagnose import validation_problems


def _session(ws: Path, rel: str, doc: dict) -> Path:
    path = ws / "sessions" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(builder.dumps(doc).encode("utf-8"))
    return path


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "sessions").mkdir(parents=True)
    (ws / "sessions" / ".synced.json").write_text("{}")  # a 2.x marker
    return ws


def _healthy(turns: int = 6) -> dict:
    clock = builder.Clock()
    return builder.document(builder.state("s1", builder.conversation(turns, clock)))


def _misplaced_result(doc: dict) -> tuple[dict, str]:
    """Move the first tool_result out of its assistant message into a user message after it (1.x style)."""
    ctx = doc["agent"]["state"]["context"]
    for i, m in enumerate(ctx):
        results = [b for b in m["content"] if b["type"] == "tool_result"]
        if results:
            m["content"].remove(results[0])
            user = {"name": "user", "content": [results[0]], "role": "user", "id": "u-moved", "metadata": {},
                    "created_at": m["created_at"]}
            ctx.insert(i + 1, user)
            return doc, results[0]["id"]
    raise AssertionError("no tool turn")


def _repair(ws: Path, *args: str):
    return invoke("-w", str(ws), "sessions", "repair", *args, "--json")


def test_check_names_every_rejected_rule_and_writes_nothing(tmp_path):
    ws = _workspace(tmp_path)
    doc, _ = _misplaced_result(_healthy())
    ctx = doc["agent"]["state"]["context"]
    clock = builder.Clock()
    ctx.append(builder.msg("user", [{"type": "data", "source": {"type": "url", "url": "https://x.test/a.png"}}], clock))
    ctx.append(builder.msg("system", [{"type": "data", "source": {"type": "url", "url": "https://x.test/b.png",
                                                                   "media_type": "image/png"}}, builder.text_block("s", clock)], clock))
    call = builder.tool_call_block("c9", "t", {}, clock)
    call["input"], call["state"] = {"a": 1}, "done"
    ctx.append(builder.msg("assistant", [call], clock))
    ctx.append(dict(builder.msg("user", [], clock), content="plain"))
    path = _session(ws, "console/a.json", doc)
    before = path.read_bytes()
    run = _repair(ws, "--check")
    assert run.code == 1
    f = run.json()["result"]["files"][0]
    rules = " ".join(f["violations"])
    for rule in ("user-holds-tool_result", "data-media_type-missing", "system-holds-data",
                 "tool_call-input-not-string", "tool_call-state-unknown", "content-not-list"):
        assert rule in rules, rule
    assert "schema_invalid" in f["classes"] and "misplaced_blocks" in f["classes"]
    assert f["generation"] == "2.x"
    assert path.read_bytes() == before


def test_repair_moves_a_tool_result_next_to_its_call(tmp_path):
    ws = _workspace(tmp_path)
    doc, call_id = _misplaced_result(_healthy())
    n = len(doc["agent"]["state"]["context"])
    path = _session(ws, "console/a.json", doc)
    original = path.read_bytes()
    run = _repair(ws, "--all")
    assert run.code == 0, run.err
    repaired = json.loads(path.read_bytes())
    ctx = repaired["agent"]["state"]["context"]
    assert len(ctx) == n - 1 and all(m["id"] != "u-moved" for m in ctx)
    holder = next(m for m in ctx if any(b.get("id") == call_id and b["type"] == "tool_call" for b in m["content"]))
    kinds = [b["type"] for b in holder["content"]]
    assert kinds.index("tool_result") == kinds.index("tool_call") + 1
    assert validation_problems(path.read_bytes()) == []
    f = run.json()["result"]["files"][0]
    assert (ws / f["quarantined"]).read_bytes() == original


def test_invalid_blocks_go_to_the_quarantine_record_not_silently(tmp_path):
    ws = _workspace(tmp_path)
    doc = _healthy()
    clock = builder.Clock()
    bad = {"type": "data", "name": "x"}  # no source at all: nothing to keep
    doc["agent"]["state"]["context"].append(builder.msg("user", [builder.text_block("see", clock), bad], clock))
    path = _session(ws, "console/a.json", doc)
    run = _repair(ws, "--all")
    assert run.code == 0, run.err
    assert validation_problems(path.read_bytes()) == []
    last = json.loads(path.read_bytes())["agent"]["state"]["context"][-1]
    assert [b["type"] for b in last["content"]] == ["text"]
    texts = [p.read_text(errors="replace") for p in (ws / ".qwenmem" / "quarantine").rglob("*") if p.is_file()]
    assert any('"name": "x"' in t or '"name":"x"' in t for t in texts), "removed block not kept"


def test_truncated_2x_keeps_every_complete_message(tmp_path):
    ws = _workspace(tmp_path)
    doc = _healthy(8)
    text = builder.dumps(doc)
    ctx = doc["agent"]["state"]["context"]
    cut = text.index(json.dumps(ctx[-1]["id"])) + 5  # inside the last message
    path = ws / "sessions" / "console" / "t.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(text[:cut].encode())
    d = diagnose(path.read_bytes())
    assert "truncated" in d.classes and d.messages_lost == 1
    assert validation_problems(d.new_bytes) == []
    kept = json.loads(d.new_bytes)["agent"]["state"]["context"]
    assert [m["id"] for m in kept] == [m["id"] for m in ctx[:-1]]


def test_trailing_garbage_and_concatenation(tmp_path):
    doc = _healthy(4)
    one = builder.dumps(doc).encode()
    d = diagnose(one + b"\n}garbage")
    assert "trailing_garbage" in d.classes and d.new_bytes == one
    old = _healthy(2)
    d2 = diagnose(builder.dumps(old).encode() + one)
    assert "concatenated" in d2.classes and d2.new_bytes == one and len(d2.alternatives) == 1


def test_healthy_2x_file_is_left_byte_identical(tmp_path):
    ws = _workspace(tmp_path)
    path = _session(ws, "console/a.json", _healthy())
    before = path.read_bytes()
    run = _repair(ws, "--all")
    assert run.code == 0 and path.read_bytes() == before
    assert run.json()["result"]["files"][0]["status"] == "ok"


def test_removed_message_ids_leave_the_scroll_bookkeeping(tmp_path):
    clock = builder.Clock()
    live = builder.conversation(3, clock)
    live[1]["content"] = 7  # an assistant message AgentScope cannot load and qwenmem cannot rebuild
    live[1]["role"] = "nobody"
    seq = {m["id"]: (i, i) for i, m in enumerate(live)}
    scroll = builder.scroll_state("s1", live, seq, None, [])
    doc = builder.document(builder.state("s1", live), scroll)
    gone = live[1]["id"]
    d = diagnose(builder.dumps(doc).encode())
    new = json.loads(d.new_bytes)["agent"]
    assert gone not in new["scroll"]["persisted_ids"] and gone not in new["scroll"]["seq_by_id"]
    assert all(m["id"] != gone for m in new["state"]["context"])
    assert d.messages_removed == 1 and d.removed[0].item["id"] == gone


def test_gen1_file_in_a_2x_workspace_is_reported_and_left_alone(tmp_path):
    ws = _workspace(tmp_path)
    path = builder.gen1_session(ws, "discord/old.json", ["2026-11-01 10:00:00.000", "2026-11-01 10:01:00.000"])
    doc = json.loads(path.read_bytes())
    doc["agent"]["memory"]["content"][0][1] = ["compressed"]
    path.write_text(builder.dumps(doc))
    before = path.read_bytes()
    run = _repair(ws, "--all")
    f = run.json()["result"]["files"][0]
    assert f["classes"] == ["gen1_in_gen2_workspace"] and f["status"] == "warning"
    assert "1 message(s) marked compressed come back into the live context" in " ".join(f["notes"])
    assert path.read_bytes() == before and run.code == 0


@needs_gen2_corpus
def test_corpus_files_check_and_repair(tmp_path):
    ws = copy_corpus(tmp_path)
    run = _repair(ws, "--check")
    files = {f["key"]: f for f in run.json()["result"]["files"]}
    assert files["console/carol_console--carol"]["classes"] == ["trailing_garbage"]
    assert files["console/alice_console--alice"]["status"] == "ok"
    alice = ws / "sessions" / "console" / "alice_console--alice.json"
    doc, _ = _misplaced_result(json.loads(alice.read_bytes()))
    alice.write_text(json.dumps(doc, ensure_ascii=False))
    run = _repair(ws, "--all")
    assert run.code == 0, run.err
    for p in (ws / "sessions" / "console").glob("*.json"):
        assert validation_problems(p.read_bytes()) == [], p


_BASE = builder.dumps(_misplaced_result(_healthy(3))[0]).encode()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(_BASE) - 1), st.integers(0, 255)), min_size=1, max_size=6),
       st.integers(0, len(_BASE)))
def test_random_byte_damage_never_crashes_and_repairs_validate(edits, cut):
    data = bytearray(_BASE[:max(cut, 1)])
    for pos, value in edits:
        if pos < len(data):
            data[pos] = value
    d = diagnose(bytes(data))
    if d.new_bytes is not None and d.generation == "2.x":
        assert validation_problems(d.new_bytes) == []


def test_check_never_writes_under_damage(tmp_path):
    ws = _workspace(tmp_path)
    path = ws / "sessions" / "console" / "x.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(_BASE[: len(_BASE) // 2] + b"\xff\xfe")
    before = path.read_bytes()
    run = _repair(ws, "--check")
    assert run.code == 1 and path.read_bytes() == before
    assert not (ws / ".qwenmem" / "quarantine").exists()


def test_a_bare_state_or_message_list_is_rebuilt_into_a_session():
    doc = _healthy(3)
    state = doc["agent"]["state"]
    for value in (state, {"state": state, "mode_state": {}}, state["context"]):
        d = diagnose(json.dumps(value, ensure_ascii=False).encode())
        assert "not_a_session" in d.classes and d.generation == "2.x", value
        rebuilt = json.loads(d.new_bytes)["agent"]["state"]["context"]
        assert [m["id"] for m in rebuilt] == [m["id"] for m in state["context"]]
        assert validation_problems(d.new_bytes) == []
    synced = diagnose(b'{"version": 1, "files": {"console/a.json": {"mtime": 1}}}')
    assert synced.generation == "1.x" and synced.new_bytes is None


def test_restore_puts_a_repaired_2x_file_back(tmp_path):
    ws = _workspace(tmp_path)
    doc, _ = _misplaced_result(_healthy())
    path = _session(ws, "console/a.json", doc)
    original = path.read_bytes()
    run = _repair(ws, "--all").json()["result"]
    assert path.read_bytes() != original
    back = invoke("-w", str(ws), "sessions", "restore", run["run"])
    assert back.code == 0, back.err
    assert path.read_bytes() == original


def test_a_fix_without_removals_is_still_written():
    """Regression: a file whose only fault was fixed in place (an unknown tool state) was judged unchanged."""
    doc = _healthy(3)
    result = next(b for m in doc["agent"]["state"]["context"] for b in m["content"] if b["type"] == "tool_result")
    result["state"] = "done"
    d = diagnose(builder.dumps(doc).encode())
    assert d.new_bytes is not None and validation_problems(d.new_bytes) == []
    assert any("unknown tool_result state 'done' dropped" in a for a in d.actions)


def test_a_message_with_a_broken_id_keeps_its_content():
    doc = _healthy(3)
    msg = doc["agent"]["state"]["context"][1]
    msg["id"] = [1]
    d = diagnose(builder.dumps(doc).encode())
    kept = json.loads(d.new_bytes)["agent"]["state"]["context"]
    assert len(kept) == 6 and "id" not in kept[1] and kept[1]["content"] == msg["content"]
    assert any(r.item == {"id": [1]} for r in d.removed)


def test_a_null_session_id_is_dropped_not_replaced_by_an_object():
    """Regression: a broken session_id was reset to {} and the repair then refused to write."""
    doc = _healthy(2)
    doc["agent"]["state"]["session_id"] = None
    d = diagnose(builder.dumps(doc).encode())
    assert d.new_bytes is not None and "session_id" not in json.loads(d.new_bytes)["agent"]["state"]


def test_repaired_files_pass_agentscopes_own_validation(tmp_path):
    import subprocess

    as2_python = agentscope_python()
    ws = _workspace(tmp_path)
    doc, _ = _misplaced_result(_healthy())
    doc["agent"]["state"]["context"][0]["content"].append({"type": "data", "source": {"type": "url",
                                                                                       "url": "https://x.test/a.png"}})
    path = _session(ws, "console/a.json", doc)
    script = Path(__file__).resolve().parents[4] / "bench" / "peer" / "agentscope2_validate.py"
    before = subprocess.run([str(as2_python), str(script), str(path)], capture_output=True, text=True)
    assert before.returncode == 1 and not json.loads(before.stdout)["files"][0]["ok"]
    assert _repair(ws, "--all").code == 0
    after = subprocess.run([str(as2_python), str(script), str(path)], capture_output=True, text=True)
    assert after.returncode == 0, after.stdout


def test_damage_in_the_middle_keeps_the_messages_after_it():
    clock = builder.Clock()
    live = builder.conversation(6, clock)
    seq = {m["id"]: (i, i) for i, m in enumerate(live)}
    doc = builder.document(builder.state("s1", live), builder.scroll_state("s1", live, seq, None, []))
    text = builder.dumps(doc)
    start = text.index(json.dumps(live[4]["id"]))
    torn = text[:start] + "\x00" * 40 + text[start + 40:]
    d = diagnose(torn.encode())
    assert "damaged_json" in d.classes and d.messages_lost == 1
    kept = json.loads(d.new_bytes)["agent"]
    assert [m["id"] for m in kept["state"]["context"]] == [m["id"] for i, m in enumerate(live) if i != 4]
    # the scroll tail survived the damage; the lost message left its bookkeeping
    assert kept["scroll"]["persisted_ids"] == sorted(m["id"] for i, m in enumerate(live) if i != 4)
    assert live[4]["id"] not in kept["scroll"]["seq_by_id"] and len(kept["scroll"]["seq_by_id"]) == 11
    assert validation_problems(d.new_bytes) == []


def test_a_truncated_save_followed_by_a_complete_one_keeps_the_complete_one():
    old, new = _healthy(3), _healthy(5)
    first = builder.dumps(old)[:-200]
    d = diagnose((first + builder.dumps(new)).encode())
    assert "concatenated" in d.classes and d.new_bytes == builder.dumps(new).encode()


def test_unhashable_roles_types_and_ids_do_not_crash():
    """Regression: a dict role, a list block type or a list id raised TypeError (unhashable) in the diagnosis."""
    doc = _healthy(3)
    ctx = doc["agent"]["state"]["context"]
    ctx[0]["role"] = {"r": 1}
    ctx[1]["content"].append({"type": ["text"], "text": "x"})
    ctx[2]["id"] = ["a"]
    doc["agent"]["scroll"] = {"persisted_ids": [["a"], ctx[0]["id"]], "synthetic_ids": [{"x": 1}]}
    d = diagnose(builder.dumps(doc).encode())
    assert d.new_bytes is not None and validation_problems(d.new_bytes) == []


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                     max_leaves=6)
_FIELDS = ["name", "content", "role", "id", "metadata", "created_at", "usage", "finished_at", "finished_reason"]
_BLOCK_FIELDS = ["type", "text", "id", "input", "output", "state", "name", "source", "created_at"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 30), st.booleans(), st.integers(0, 8), st.sampled_from(_BLOCK_FIELDS),
                          _JSON), min_size=1, max_size=4))
def test_random_json_values_in_messages_never_crash_and_repairs_validate(edits):
    doc = json.loads(_BASE)
    ctx = doc["agent"]["state"]["context"]
    for msg_i, in_block, field_i, block_field, value in edits:
        msg = ctx[msg_i % len(ctx)]
        if not isinstance(msg, dict):
            continue
        blocks = msg.get("content")
        if in_block and isinstance(blocks, list) and blocks and isinstance(blocks[field_i % len(blocks)], dict):
            blocks[field_i % len(blocks)][block_field] = value
        else:
            msg[_FIELDS[field_i]] = value
    try:
        data = json.dumps(doc, ensure_ascii=False).encode()
    except (UnicodeEncodeError, ValueError):
        return
    d = diagnose(data)
    assert d.generation == "2.x"
    if d.new_bytes is not None:
        assert validation_problems(d.new_bytes) == []


@needs_gen2_corpus
def test_persisted_ids_without_history_rows_are_dropped(tmp_path):
    """A history.db replaced by an empty one (spec §8.7): QwenPaw would evict those messages with no copy left."""
    import sqlite3

    ws = copy_corpus(tmp_path)
    alice = ws / "sessions" / "console" / "alice_console--alice.json"
    doc = json.loads(alice.read_bytes())
    sid, persisted = doc["agent"]["state"]["session_id"], doc["agent"]["scroll"]["persisted_ids"]
    assert persisted and _repair(ws, "--check").json()["result"]["files"][1]["status"] == "ok"
    with sqlite3.connect(ws / "history.db") as conn:
        conn.execute("DELETE FROM conversation_history WHERE session_id = ? AND dedup_key = ?", (sid, persisted[0]))
    run = _repair(ws, "console/alice_console--alice", "--json")
    f = run.json()["result"]["files"][0]
    assert "persisted_without_rows" in f["classes"] and f["status"] == "repaired", f
    after = json.loads(alice.read_bytes())["agent"]["scroll"]
    assert after["persisted_ids"] == persisted[1:] and persisted[0] not in after["seq_by_id"]
    assert validation_problems(alice.read_bytes()) == []


def test_repair_keeps_the_file_mode_and_the_quarantine_copy_is_private(tmp_path):
    ws = _workspace(tmp_path)
    doc, _ = _misplaced_result(_healthy())
    path = _session(ws, "console/a.json", doc)
    path.chmod(0o600)  # what QwenPaw's write_text_atomic gives a new session file
    f = _repair(ws, "--all").json()["result"]["files"][0]
    assert f["status"] == "repaired"
    assert path.stat().st_mode & 0o777 == 0o600
    assert (ws / f["quarantined"]).stat().st_mode & 0o077 == 0


def test_a_2x_file_saved_by_qwenpaw_during_the_repair_is_left_as_qwenpaw_wrote_it(tmp_path):
    import os

    from qwenmem.core.repair.run import REPAIR, run_repair
    from qwenmem.core.sessions import iter_session_refs
    from qwenmem.core.workspace import discover_workspace

    ws_path = _workspace(tmp_path)
    doc, _ = _misplaced_result(_healthy())
    path = _session(ws_path, "console/a.json", doc)
    os.utime(path, (1, 1))  # not a save in progress
    theirs = builder.dumps(_healthy(7)).encode()
    ws = discover_workspace(ws_path)
    result = run_repair(ws, list(iter_session_refs(ws)), REPAIR, before_write=lambda p: p.write_bytes(theirs))
    assert result.files[0].status == "changed" and result.changed_underneath
    assert path.read_bytes() == theirs
    cli = invoke("-w", str(ws_path), "sessions", "repair", "--all")  # the file is healthy now: nothing to do
    assert cli.code == 0 and path.read_bytes() == theirs


def test_a_damaged_bare_message_list_stays_a_2x_session():
    """Regression: a truncated bare list of 2.x messages was rewrapped as a 1.x session (agent.memory)."""
    doc = _healthy(4)
    text = json.dumps(doc["agent"]["state"]["context"], ensure_ascii=False)
    d = diagnose(text[:-40].encode())
    assert d.generation == "2.x" and "truncated" in d.classes and d.messages_lost == 1
    new = json.loads(d.new_bytes)
    assert "state" in new["agent"] and len(new["agent"]["state"]["context"]) == 7
    assert validation_problems(d.new_bytes) == []


def test_a_block_without_type_is_read_as_agentscope_reads_it():
    """Regression: AgentScope's Msg.content is a plain union, so a block that lost its "type" key still loads as the
    block it validates as (agentscope 2.0.10 accepts a tool_call without "type"); the repair quarantined it as an
    unknown block, leaving its tool_result without a call."""
    doc = _healthy(3)
    ctx = doc["agent"]["state"]["context"]
    tool_msg = next(m for m in ctx if any(b["type"] == "tool_call" for b in m["content"]))
    call = next(b for b in tool_msg["content"] if b["type"] == "tool_call")
    del call["type"]
    data = builder.dumps(doc).encode()
    assert validation_problems(data) == []  # what AgentScope says (bench/quality/repair2_bench.py checks the agreement)
    d = diagnose(data)
    assert d.classes == ["ok"] and d.new_bytes is None  # a valid file is left byte-identical
    ctx[0]["content"] = "a plain string"  # now something forces a rewrite: the block survives, its type explicit
    d = diagnose(builder.dumps(doc).encode())
    written = json.loads(d.new_bytes)["agent"]["state"]["context"]
    kept = next(m for m in written if m["id"] == tool_msg["id"])
    assert {"type": "tool_call", **call} in kept["content"]
    untyped_in_user = {"text": "hello"}
    ctx[0]["content"] = [untyped_in_user]  # read as a text block: allowed in a user message
    assert validation_problems(builder.dumps(doc).encode()) == []
    ctx[0]["content"] = [{"id": "x", "name": "y", "output": "z"}]  # read as a tool_result: not in a user message
    assert any("user-holds-tool_result" in p for p in validation_problems(builder.dumps(doc).encode()))


def test_legacy_blocks_in_a_2x_file_are_converted_as_qwenpaws_msg_from_dict_does(tmp_path):
    """Regression: a 1.x tool_use took raw_input before input (QwenPaw takes input first), a local image path stayed
    a path (an invalid URL: the whole file was then left unrepaired), and a 1.x file block was quarantined (QwenPaw
    turns it into a text block naming the file)."""
    doc = _healthy(2)
    ctx = doc["agent"]["state"]["context"]
    image = tmp_path / "photo.png"
    ctx[0]["content"].append({"type": "image", "source": {"type": "url", "url": str(image)}})
    ctx[0]["content"].append({"type": "file", "filename": "report.pdf", "source": {"type": "url",
                                                                                  "url": "/srv/files/report.pdf"}})
    ctx[1]["content"].append({"type": "tool_use", "id": "call_9", "name": "search", "input": {"q": "Berlin"},
                              "raw_input": "{\"q\": \"Ber"})
    d = diagnose(builder.dumps(doc).encode())
    assert d.new_bytes is not None and validation_problems(d.new_bytes) == []
    new = json.loads(d.new_bytes)["agent"]["state"]["context"]
    assert new[0]["content"][-2] == {"type": "data", "source": {"type": "url", "url": f"file://{image}",
                                                                "media_type": "image/png"}}
    assert new[0]["content"][-1] == {"type": "text", "text": "File 'report.pdf' is available at: /srv/files/report.pdf"}
    assert new[1]["content"][-1] == {"type": "tool_call", "id": "call_9", "name": "search", "input": '{"q": "Berlin"}'}
