"""`qwenmem snapshot` core: content-addressed, deduplicated backups of memory/, digest/ and MEMORY.md whose
restore is itself undoable. Real files, real renames, real flock."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from snapshot_fixtures import apparent_bytes, build_memory_tree, bytes_on_disk, picture

from qwenmem.core import snapshot as S
from qwenmem.core.errors import AmbiguousError, BusyError, ChangedUnderneathError, NotFoundError, UsageError, \
    WorkspaceError
from qwenmem.core.fsio import exclusive_lock
from qwenmem.core.workspace import discover_workspace


def open_ws(path):
    return discover_workspace(path, env={})


@pytest.fixture
def thousand(tmp_path):
    build_memory_tree(tmp_path / "ws", 1000)
    return open_ws(tmp_path / "ws")


def mutate(root):
    """What a bad night looks like: notes rewritten, deleted, added; a digest emptied; MEMORY.md gone."""
    for n in range(0, 50, 5):
        note = next((root / "memory").glob(f"*/topic-{n}.md"))
        note.write_text("rewritten by a confused dream\n")
    for n in range(100, 110):
        next((root / "memory").glob(f"*/topic-{n}.md")).unlink()
    (root / "memory" / "2027-01-01").mkdir()
    for n in range(5):
        (root / "memory" / "2027-01-01" / f"new-{n}.md").write_text(f"new note {n}\n")
    (root / "digest" / "personal" / "tea.md").write_text("")
    (root / "MEMORY.md").unlink()


def test_round_trip_of_a_thousand_notes_and_undo(thousand):
    root = thousand.path
    original = picture(root)
    first = S.create(thousand)
    in_scope = [k for k in original if not k.endswith("/") and not k.startswith("mem_metadata")]
    assert first.snapshot.files == len(in_scope) == 1000 + 84 + 1 + 1  # notes, day indexes, digest, MEMORY.md
    mutate(root)
    mutated = picture(root)
    assert mutated != original
    result = S.restore(thousand, first.snapshot.id, exact=True)
    assert result.status == "restored"
    assert len(result.replaced) == 11 and len(result.created) == 11  # 10 notes + digest; 10 notes + MEMORY.md
    assert sorted(result.removed) == sorted([f"memory/2027-01-01/new-{n}.md" for n in range(5)] + ["memory/2027-01-01/"])
    assert picture(root) == original  # bytes, modes and mtimes; mem_metadata/ untouched
    undo = S.restore(thousand, result.undo_snapshot, exact=True)
    assert picture(root) == mutated
    assert undo.undo_snapshot and undo.undo_snapshot != result.undo_snapshot


def test_second_snapshot_of_an_unchanged_tree_adds_almost_nothing(thousand):
    store = S.snapshots_dir(thousand)
    first = S.create(thousand)
    tree_bytes = sum(v for v in [apparent_bytes(thousand.path / "memory"), apparent_bytes(thousand.path / "digest")])
    first_disk, first_bytes = bytes_on_disk(store), apparent_bytes(store)
    assert first_bytes > tree_bytes  # the first one really holds a copy of everything
    second = S.create(thousand)
    added_disk, added_bytes = bytes_on_disk(store) - first_disk, apparent_bytes(store) - first_bytes
    assert second.snapshot.added_bytes == 0 and second.same_as is not None
    assert added_bytes < 1024, added_bytes  # one manifest
    assert added_disk <= 8192, added_disk  # one block (plus, at worst, the directory growing by one)
    assert added_disk < first_disk / 100
    # one changed note costs that note and the listings above it, not the tree
    next((thousand.path / "memory").glob("*/topic-7.md")).write_text("changed\n")
    third = S.create(thousand)
    assert 0 < third.snapshot.added_bytes < first.snapshot.added_bytes / 20, third.snapshot.added_bytes
    assert third.same_as is None


def test_dry_run_writes_nothing(thousand):
    before = picture(thousand.path)
    result = S.create(thousand, dry_run=True)
    assert result.status == "dry-run" and result.snapshot.files == 1086
    assert result.snapshot.added_bytes > 0
    assert not (thousand.path / ".qwenmem").exists()
    first = S.create(thousand)
    mutate(thousand.path)
    mutated = picture(thousand.path)
    plan = S.restore(thousand, first.snapshot.id, dry_run=True, exact=True)
    assert plan.status == "dry-run" and plan.undo_snapshot is None and len(plan.removed) == 5
    assert picture(thousand.path) == mutated and len(S.list_snapshots(thousand)[0]) == 1
    assert before != mutated


def test_keep_prunes_manifests_and_unreferenced_objects(tmp_path):
    build_memory_tree(tmp_path / "ws", 20)
    ws = open_ws(tmp_path / "ws")
    note = next((ws.path / "memory").glob("*/topic-3.md"))
    ids = []
    for n in range(4):
        note.write_text(f"version {n}\n")
        ids.append(S.create(ws).snapshot.id)
    store = S._store(ws)
    before = set(store.all_digests())
    result = S.create(ws, keep=2)  # the new one and ids[-1]
    assert result.pruned == ids[:3]
    assert [s.id for s in S.list_snapshots(ws)[0]] == [ids[3], result.snapshot.id]
    after = set(store.all_digests())
    assert result.objects_removed == len(before - after) > 0
    gone = {store.path_of(d) for d in before - after}
    assert all(not p.exists() for p in gone)
    live = S._reachable(store, result.snapshot.root) | S._reachable(store, S.resolve_snapshot(ws, ids[3]).root)
    assert after == live  # nothing unreferenced left, nothing referenced lost
    note.write_text("broken\n")
    S.restore(ws, ids[3])
    assert note.read_text() == "version 3\n"


def test_a_damaged_manifest_stops_object_collection(tmp_path):
    build_memory_tree(tmp_path / "ws", 5)
    ws = open_ws(tmp_path / "ws")
    old = S.create(ws)
    (ws.path / "MEMORY.md").write_text("other\n")
    S.create(ws)
    bad = S.snapshots_dir(ws) / "20200101T000000000000Z.json"
    bad.write_text("{ truncated")
    objects_before = set(S._store(ws).all_digests())
    result = S.create(ws, keep=1)
    assert old.snapshot.id in result.pruned
    assert any("no stored object was deleted" in w for w in result.warnings)
    assert set(S._store(ws).all_digests()) >= objects_before
    assert S.list_snapshots(ws)[1] and bad.exists()  # reported, never deleted


def test_a_damaged_object_is_never_restored(tmp_path):
    build_memory_tree(tmp_path / "ws", 5)
    ws = open_ws(tmp_path / "ws")
    snap = S.create(ws)
    files, _ = S.flatten(ws, snap.snapshot.root)
    digest = files["digest/personal/tea.md"].sha256
    obj = S._store(ws).path_of(digest)
    os.chmod(obj, 0o644)
    obj.write_bytes(b"bit rot")
    (ws.path / "digest" / "personal" / "tea.md").write_text("current\n")
    (ws.path / "MEMORY.md").write_text("current memory\n")
    with pytest.raises(WorkspaceError, match="damaged"):
        S.restore(ws, snap.snapshot.id)
    assert (ws.path / "MEMORY.md").read_text() == "current memory\n"  # nothing at all was written
    assert len(S.list_snapshots(ws)[0]) == 1  # not even the undo snapshot


def test_restore_refuses_a_file_that_changes_after_the_undo_snapshot(tmp_path, monkeypatch):
    build_memory_tree(tmp_path / "ws", 5)
    ws = open_ws(tmp_path / "ws")
    snap = S.create(ws)
    target = ws.path / "digest" / "personal" / "tea.md"
    target.write_text("tonight's digest\n")
    real = S.create_locked

    def undo_then_concurrent_write(*args, **kwargs):
        done = real(*args, **kwargs)
        target.write_text("QwenPaw wrote this meanwhile\n")
        return done

    monkeypatch.setattr(S, "create_locked", undo_then_concurrent_write)
    with pytest.raises(ChangedUnderneathError, match="snapshot restore"):
        S.restore(ws, snap.snapshot.id)
    assert target.read_text() == "QwenPaw wrote this meanwhile\n"


def test_the_workspace_lock_is_taken(thousand):
    with exclusive_lock(thousand.lock_path):
        with pytest.raises(BusyError):
            S.create(thousand)
    assert not (S.snapshots_dir(thousand)).exists()


def test_restore_path_and_default_leaves_new_files(tmp_path):
    build_memory_tree(tmp_path / "ws", 120)
    ws = open_ws(tmp_path / "ws")
    snap = S.create(ws)
    mutate(ws.path)
    result = S.restore(ws, snap.snapshot.id, paths=["digest"])
    assert result.replaced == ["digest/personal/tea.md"] and not result.created
    assert (ws.path / "digest" / "personal" / "tea.md").read_text().startswith("---\nname: tea")
    assert not (ws.path / "MEMORY.md").exists()  # outside --path
    result = S.restore(ws, snap.snapshot.id)
    assert (ws.path / "MEMORY.md").exists()
    assert sorted(result.extra) == [f"memory/2027-01-01/new-{n}.md" for n in range(5)]
    assert (ws.path / "memory" / "2027-01-01" / "new-0.md").exists()
    with pytest.raises(UsageError):
        S.restore(ws, snap.snapshot.id, paths=["../etc"])
    with pytest.raises(UsageError):
        S.restore(ws, snap.snapshot.id, paths=["sessions"])


def test_ids_prefixes_and_unknown(tmp_path):
    build_memory_tree(tmp_path / "ws", 3)
    ws = open_ws(tmp_path / "ws")
    a, b = S.create(ws).snapshot.id, S.create(ws).snapshot.id
    assert S.resolve_snapshot(ws, None).id == b and S.resolve_snapshot(ws, "latest").id == b
    assert S.resolve_snapshot(ws, a).id == a
    with pytest.raises(AmbiguousError):
        S.resolve_snapshot(ws, a[:8])
    with pytest.raises(NotFoundError):
        S.resolve_snapshot(ws, "1999")


def test_odd_names_empty_dirs_symlinks_and_scope(tmp_path):
    ws_path = tmp_path / "ws"
    build_memory_tree(ws_path, 3)
    odd = os.fsencode(ws_path / "memory") + b"/caf\xe9-latin1.md"
    with open(odd, "wb") as fh:
        fh.write("天气 note\n".encode())
    (ws_path / "memory" / "链接.md").symlink_to(ws_path / "MEMORY.md")
    (ws_path / "sessions").mkdir()
    (ws_path / "sessions" / "s.json").write_text("{}")
    ws = open_ws(ws_path)
    snap = S.create(ws)
    assert any("链接.md: symlink" in w for w in snap.warnings)
    files, dirs = S.flatten(ws, snap.snapshot.root)
    assert not any(f.startswith(("sessions", "mem_metadata")) for f in files)
    assert "digest/wiki" in dirs
    shutil.rmtree(ws_path / "memory")
    shutil.rmtree(ws_path / "digest")
    S.restore(ws, snap.snapshot.id)
    with open(odd, "rb") as fh:
        assert fh.read() == "天气 note\n".encode()
    assert (ws_path / "digest" / "wiki").is_dir()  # empty directories come back too
    assert not (ws_path / "memory" / "链接.md").exists()  # a skipped link is not invented


def test_manifest_is_versioned_json(tmp_path):
    build_memory_tree(tmp_path / "ws", 2)
    ws = open_ws(tmp_path / "ws")
    snap = S.create(ws, reason="before nightly dream")
    doc = json.loads((S.snapshots_dir(ws) / f"{snap.snapshot.id}.json").read_text())
    assert doc["qwenmem_snapshot"] == 1 and doc["reason"] == "before nightly dream" and doc["id"] == snap.snapshot.id
    assert set(doc) == {"qwenmem_snapshot", "id", "created", "reason", "root", "files", "dirs", "bytes",
                        "added_bytes", "skipped", "scope"}


def test_a_crash_mid_snapshot_leaves_no_named_object_and_no_manifest(tmp_path, monkeypatch):
    build_memory_tree(tmp_path / "ws", 40)
    ws = open_ws(tmp_path / "ws")
    real, seen = S._Walk._file, []

    def dies_on_the_30th(self, path, rel):
        seen.append(rel)
        if len(seen) == 30:
            raise KeyboardInterrupt
        return real(self, path, rel)

    monkeypatch.setattr(S._Walk, "_file", dies_on_the_30th)
    with pytest.raises(KeyboardInterrupt):
        S.create(ws)
    objects = S.snapshots_dir(ws) / "objects"
    assert [p for p in objects.rglob("*") if p.is_file()] == []  # 29 files were copied; none got its name
    assert S.list_snapshots(ws) == ([], [])
    monkeypatch.undo()
    assert S.create(ws).snapshot.files == 40 + len({p.parent for p in (ws.path / "memory").glob("*/*.md")}) + 2


@pytest.mark.parametrize("damage", [b"", b"torn half of a no", b"bit rot of the same len"])
def test_a_torn_object_is_written_again_not_reused(tmp_path, damage):
    """Objects are deduplicated by name: the next snapshot of the same bytes must not trust one a power cut (or an
    older version without fsync) left empty or torn; it writes it again, so the new snapshot restores (issue 24 §4)."""
    build_memory_tree(tmp_path / "ws", 5)
    ws = open_ws(tmp_path / "ws")
    first = S.create(ws)
    files, _ = S.flatten(ws, first.snapshot.root)
    digest = files["digest/personal/tea.md"].sha256
    obj = S._store(ws).path_of(digest)
    original = obj.read_bytes()
    os.chmod(obj, 0o644)
    obj.write_bytes(damage[: len(original)] if len(damage) > len(original) else damage)
    second = S.create(ws)  # the same tree: every object already stored by name
    assert S._store(ws).read_verified(digest) == original
    (ws.path / "digest" / "personal" / "tea.md").write_text("changed\n")
    S.restore(ws, second.snapshot.id)
    assert (ws.path / "digest" / "personal" / "tea.md").read_bytes() == original
