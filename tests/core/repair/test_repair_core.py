"""`run_repair`/`diagnose` on real files and real corruptions: classes, recovery, quarantine, refusal, restore."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.generators.corruption import Case, generate
from helpers import corpus_params, real_session_files
from qwenmem.core.errors import AmbiguousError, NotFoundError
from qwenmem.core.repair import CHECK, DRY_RUN, REPAIR, diagnose, run_repair
from qwenmem.core.repair.fixes import LOST_RESULT_TEXT
from qwenmem.core.repair.restore import restore
from qwenmem.core.sessions import iter_session_refs
from qwenmem.core.workspace import discover_workspace
from repair_fixtures import DIALOG, OLDER_SHAPES, TELEGRAM, TINY, TRUNCATED_BACKUP, WIKI, copy_real, make_workspace, \
    qwenpaw_strict_load, tree_state


def _refs(root: Path):
    ws = discover_workspace(root)
    return ws, list(iter_session_refs(ws))


@pytest.mark.parametrize("path", [TINY, WIKI, *OLDER_SHAPES], ids=lambda p: p.name[:30])
def test_healthy_fixture_files_are_ok_and_would_not_be_rewritten(path):
    d = diagnose(path.read_bytes(), fix_tool_pairs=True)
    assert d.classes == ["ok"] and d.new_bytes is None


@pytest.mark.parametrize("path", corpus_params([p for p in real_session_files() if p.name not in (
    "main_main.json.backup_20260316_203609", "8301437789_telegram--8301437789.json")], ids=lambda p: p.name[:30]))
def test_healthy_real_files_are_ok_and_would_not_be_rewritten(path):
    d = diagnose(path.read_bytes(), fix_tool_pairs=True)
    assert d.classes == ["ok"] and d.new_bytes is None


def test_real_telegram_file_has_one_call_without_result():
    d = diagnose(TELEGRAM.read_bytes())
    assert d.classes == ["orphan_tool_pairs"] and d.new_bytes is None and d.pending  # 8 uses, 7 results
    fixed = diagnose(TELEGRAM.read_bytes(), fix_tool_pairs=True)
    items = qwenpaw_strict_load(fixed.new_bytes)
    assert len(items) == 23 and fixed.messages_added == 1
    original = json.loads(TELEGRAM.read_bytes())["agent"]["memory"]["content"]
    added = [i for i, (m, _) in enumerate(items) if m["content"] and isinstance(m["content"], list)
             and any(b.get("output") == [{"type": "text", "text": LOST_RESULT_TEXT}] for b in m["content"])]
    assert len(added) == 1
    lost = items[added[0]][0]
    assert lost["role"] == "system" and lost["name"] == "system" and len(lost["id"]) == 22
    call_id = lost["content"][0]["id"]
    caller = next(i for i, (m, _) in enumerate(items) if isinstance(m["content"], list)
                  and any(b.get("type") == "tool_use" and b.get("id") == call_id for b in m["content"]))
    assert caller < added[0]
    assert [i for i in items if i[0] is not lost] == original  # nothing else changed


CASES = [c for c in generate(seed=3, truncations=5, paths=[WIKI]) if c.source.endswith(WIKI.stem)]
EXPECTED_CLASS = {"truncated+nul_tail": "truncated"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name.split(".", 1)[1])
def test_each_corruption_class_is_named_and_every_recoverable_message_kept(case: Case):
    d = diagnose(case.data, case.fix_tool_pairs)
    if case.cls == "damaged_json" and set(d.classes) <= {"ok", "invalid_utf8"}:
        # junk that landed inside strings only (its first byte may split a character): still a valid session
        json.loads(case.data.decode("utf-8", "replace"))
        return
    assert EXPECTED_CLASS.get(case.cls, case.cls) in d.classes
    items = qwenpaw_strict_load(d.new_bytes)
    remaining = list(items)
    for item in case.expected:
        assert item in remaining
        remaining.remove(item)
    if case.expected_summary is not None:
        assert json.loads(d.new_bytes)["agent"]["memory"]["_compressed_summary"] == case.expected_summary


def test_concatenation_keeps_the_newest_most_complete_document_either_way():
    data = WIKI.read_bytes()
    doc = json.loads(data)
    older = json.loads(data)
    older["agent"]["memory"]["content"] = doc["agent"]["memory"]["content"][:10]
    older_bytes = json.dumps(older, ensure_ascii=False).encode()
    for blob in (older_bytes + data, data + older_bytes):
        d = diagnose(blob)
        assert d.classes == ["concatenated"]
        assert json.loads(d.new_bytes) == doc
        assert [(a.kind, a.messages) for a in d.alternatives] == [("document", 10)]


def test_broken_messages_move_to_the_record_with_their_reason():
    doc = json.loads(TINY.read_bytes())
    content = doc["agent"]["memory"]["content"]
    content[1][0]["role"] = "tool"
    content[2].append("extra")
    d = diagnose(json.dumps(doc, ensure_ascii=False).encode())
    assert d.classes == ["broken_messages"] and d.messages_removed == 2
    assert [r.index for r in d.removed] == [1, 2]
    assert "role 'tool'" in d.removed[0].reason and "3 element" in d.removed[1].reason
    assert qwenpaw_strict_load(d.new_bytes) == [content[0], content[3]]


def test_exact_duplicates_go_and_conflicting_ids_are_only_reported():
    doc = json.loads(TINY.read_bytes())
    content = doc["agent"]["memory"]["content"]
    conflicting = json.loads(json.dumps(content[1]))
    conflicting[0]["content"] = "different"
    content += [json.loads(json.dumps(content[0])), conflicting]
    d = diagnose(json.dumps(doc, ensure_ascii=False).encode())
    assert d.classes == ["duplicate_ids"]
    assert len(qwenpaw_strict_load(d.new_bytes)) == 5 and d.messages_removed == 1
    assert any("different content" in n for n in d.notes)


def test_orphan_result_without_call_is_dropped_only_with_the_flag():
    doc = json.loads(WIKI.read_bytes())
    content = doc["agent"]["memory"]["content"]
    caller = next(i for i, (m, _) in enumerate(content) if isinstance(m["content"], list)
                  and [b["type"] for b in m["content"]].count("tool_use") == 1)
    del content[caller]
    blob = json.dumps(doc, ensure_ascii=False).encode()
    assert diagnose(blob).new_bytes is None
    d = diagnose(blob, fix_tool_pairs=True)
    assert d.messages_removed == 1 and d.removed[0].reason == "tool_result answers no tool_use"
    assert len(qwenpaw_strict_load(d.new_bytes)) == len(content) - 1


def test_real_run_quarantines_original_writes_loadable_result_and_leaves_healthy_files_alone(tmp_path):
    damaged = WIKI.read_bytes()[:40000]
    root = make_workspace(tmp_path / "ws", {"console/cut.json": damaged, "console/noise.json": b"\x00" * 64})
    healthy = copy_real(root, TINY, TELEGRAM)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in healthy.values()}
    ws, refs = _refs(root)
    result = run_repair(ws, refs, REPAIR)
    by_key = {f.key: f for f in result.files}
    cut = by_key["console/cut"]
    assert cut.status == "repaired" and cut.classes[0] == "truncated"
    kept = root / cut.quarantined
    assert kept.read_bytes() == damaged and kept.is_relative_to(root / ".qwenmem" / "quarantine" / result.run_id)
    items = qwenpaw_strict_load((root / "sessions/console/cut.json").read_bytes())
    assert len(items) == cut.messages_intact > 0
    assert by_key["console/noise"].status == "unrecoverable"
    assert (root / "sessions/console/noise.json").read_bytes() == b"\x00" * 64
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in healthy.values()} == before
    manifest = json.loads((root / ".qwenmem/quarantine" / result.run_id / "manifest.json").read_text())
    [entry] = manifest["files"]
    assert entry["path"] == "sessions/console/cut.json" and entry["classes"] == cut.classes
    assert entry["original_sha256"] == cut.original_sha256 and entry["status"] == "repaired"
    assert entry["messages"]["kept"] == len(items) and entry["messages"]["lost"] == 1


def test_removed_messages_and_alternatives_are_in_quarantine(tmp_path):
    doc = json.loads(TINY.read_bytes())
    broken = doc["agent"]["memory"]["content"][1]
    broken[0]["content"] = 7
    blob = json.dumps(doc, ensure_ascii=False).encode() + b"QQ"
    root = make_workspace(tmp_path / "ws", {"a.json": blob})
    ws, refs = _refs(root)
    result = run_repair(ws, refs, REPAIR)
    run_dir = root / ".qwenmem/quarantine" / result.run_id
    entry = json.loads((run_dir / "manifest.json").read_text())["files"][0]
    assert entry["removed"][0]["item"] == broken
    [alt] = entry["alternatives"]
    assert alt["kind"] == "garbage" and (run_dir / alt["file"]).read_text() == "QQ"


@pytest.mark.parametrize("mode", [CHECK, DRY_RUN])
def test_check_and_dry_run_write_nothing(tmp_path, mode):
    root = make_workspace(tmp_path / "ws", {"a.json": WIKI.read_bytes()[:5000], "b.json": b"", "c.json": b"\xef\xbb\xbf{}"})
    before = tree_state(root)
    ws, refs = _refs(root)
    result = run_repair(ws, refs, mode, fix_tool_pairs=True, from_backup=True)
    assert {f.status for f in result.files} >= {"needs_repair" if mode == CHECK else "would_repair", "unrecoverable"}
    assert tree_state(root) == before


def test_file_changed_between_read_and_write_is_left_as_the_other_writer_made_it(tmp_path):
    root = make_workspace(tmp_path / "ws", {"a.json": WIKI.read_bytes()[:30000]})
    ws, refs = _refs(root)
    theirs = WIKI.read_bytes()

    def assistant_saves(path: Path) -> None:
        path.write_bytes(theirs)

    result = run_repair(ws, refs, REPAIR, before_write=assistant_saves)
    assert result.files[0].status == "changed" and result.changed_underneath
    assert (root / "sessions/a.json").read_bytes() == theirs


def test_empty_file_is_rebuilt_from_a_backup_sibling_only_when_asked(tmp_path):
    root = make_workspace(tmp_path / "ws", {"main_main.json": b"",
                                            "main_main.json.backup_20260316_203609": TRUNCATED_BACKUP.read_bytes()})
    ws, refs = _refs(root)
    plain = run_repair(ws, refs, REPAIR)
    [rep] = plain.files
    assert rep.status == "unrecoverable" and (root / "sessions/main_main.json").read_bytes() == b""
    assert [(e.kind, e.messages, e.usable) for e in rep.evidence] == [("backup", 183, True)]
    assert any("--from-backup" in p for p in rep.pending)
    restored = run_repair(ws, refs, REPAIR, from_backup=True)
    assert restored.files[0].status == "repaired"
    assert len(qwenpaw_strict_load((root / "sessions/main_main.json").read_bytes())) == 183
    assert (root / "sessions/main_main.json.backup_20260316_203609").read_bytes() == TRUNCATED_BACKUP.read_bytes()


def test_restore_round_trip_and_restore_is_itself_undoable(tmp_path):
    damaged = WIKI.read_bytes()[:50000]
    root = make_workspace(tmp_path / "ws", {"console/s.json": damaged})
    ws, refs = _refs(root)
    run = run_repair(ws, refs, REPAIR)
    target = root / "sessions/console/s.json"
    repaired = target.read_bytes()
    assert repaired != damaged
    dry = restore(ws, run.run_id, dry_run=True)
    assert [f.status for f in dry.files] == ["would_restore"] and target.read_bytes() == repaired
    back = restore(ws, "console/s")
    assert back.from_run == run.run_id and target.read_bytes() == damaged
    assert restore(ws, back.backup_run).files[0].status == "restored"
    assert target.read_bytes() == repaired
    assert restore(ws, run.run_id).files[0].status == "restored" and target.read_bytes() == damaged
    assert restore(ws, run.run_id).files[0].status == "unchanged"


def test_restore_refuses_a_file_that_changes_meanwhile_and_unknown_targets(tmp_path):
    root = make_workspace(tmp_path / "ws", {"s.json": WIKI.read_bytes()[:20000]})
    ws, refs = _refs(root)
    run = run_repair(ws, refs, REPAIR)
    target = root / "sessions/s.json"
    result = restore(ws, run.run_id, before_write=lambda p: p.write_bytes(b"new turn"))
    assert result.files[0].status == "changed" and target.read_bytes() == b"new turn"
    with pytest.raises(NotFoundError):
        restore(ws, "nothing-like-this")
    restore(ws, "s")  # a session name finds the newest run that holds it
    with pytest.raises(AmbiguousError):
        restore(ws, "2")  # every run id starts with the year


def test_a_named_dialog_offload_can_rebuild_an_empty_session(tmp_path):
    dialog = DIALOG
    root = make_workspace(tmp_path / "ws", {"console/s.json": b""})
    (root / "dialog").mkdir()
    shutil.copy2(dialog, root / "dialog" / dialog.name)
    ws, refs = _refs(root)
    result = run_repair(ws, refs, REPAIR, from_file=root / "dialog" / dialog.name)
    assert result.files[0].status == "repaired"
    items = qwenpaw_strict_load((root / "sessions/console/s.json").read_bytes())
    lines = [json.loads(line) for line in dialog.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert [m for m, _ in items] == lines and len(lines) == 19


def test_dialog_evidence_streams_a_large_offload_log(tmp_path):
    """A dialog log grows without bound; counting its messages must not load it whole (peak well under its size)."""
    import os
    import time
    import tracemalloc

    from qwenmem.core.repair.evidence import dialog_evidence

    root = make_workspace(tmp_path / "ws", {"a.json": b""})
    (root / "dialog").mkdir()
    day = time.strftime("%Y-%m-%d", time.localtime(os.stat(root / "sessions/a.json").st_mtime))
    line = json.dumps({"role": "user", "content": "x" * 900}).encode() + b"\n"
    with open(root / "dialog" / f"{day}.jsonl", "wb") as fh:
        for _ in range(24_000):  # ~22 MB
            fh.write(line)
        fh.write(b"\n   \n")
    ws = discover_workspace(root)
    tracemalloc.start()
    [found] = dialog_evidence(ws, root / "sessions/a.json")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert found.kind == "dialog" and found.messages == 24_000
    assert peak < 2 * 1024 * 1024


def test_restore_finds_an_original_kept_by_a_run_killed_before_its_manifest_entry(tmp_path, monkeypatch):
    """Crash injection at the named step between 'original copied aside + file replaced' and 'manifest entry'."""
    from qwenmem.core.repair.quarantine import QuarantineRun

    first, second = WIKI.read_bytes()[:30000], WIKI.read_bytes()[:40000]
    root = make_workspace(tmp_path / "ws", {"a.json": first, "b.json": second})
    ws, refs = _refs(root)
    real_record, calls = QuarantineRun.record, []

    def killed_on_second_entry(self, entry):
        calls.append(entry["path"])
        if len(calls) == 2:
            raise KeyboardInterrupt("killed")
        real_record(self, entry)

    monkeypatch.setattr(QuarantineRun, "record", killed_on_second_entry)
    with pytest.raises(KeyboardInterrupt):
        run_repair(ws, refs, REPAIR)
    monkeypatch.setattr(QuarantineRun, "record", real_record)
    unrecorded = calls[1]
    assert (root / unrecorded).read_bytes() not in (first, second)  # it was replaced before the "crash"
    back = restore(ws, unrecorded.removeprefix("sessions/").removesuffix(".json"))
    assert back.files[0].status == "restored"
    assert (root / unrecorded).read_bytes() == {"sessions/a.json": first, "sessions/b.json": second}[unrecorded]
