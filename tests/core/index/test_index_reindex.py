"""Incremental, crash-safe reindex against a real Whoosh index and the real packaged MiniLM."""

from __future__ import annotations

import json
import os
import time

import pytest
from search_fixtures import long_daily_log, open_ws, tree_digest

from qwenmem.core.errors import BusyError
from qwenmem.core.fsio import exclusive_lock
from qwenmem.core.index import index_exists, reindex, store
from qwenmem.core.index.embedders import load_embedder
from qwenmem.core.index.search import search


def paths_found(ws, settings, query, **kw):
    return [h.path for h in search(ws, settings, query, auto_reindex=False, max_results=20, **kw).hits]


def test_first_build_then_up_to_date_and_workspace_untouched(sample_ws):
    before = tree_digest(sample_ws)
    ws, settings = open_ws(sample_ws)
    assert not index_exists(ws)
    first = reindex(ws, settings, backend="none")
    assert first.files_added == ["MEMORY.md", "memory/2026-11-26.md", "memory/2026-11-27.md", "memory/2026-11-28.md"]
    assert index_exists(ws)
    second = reindex(ws, settings)
    assert second.up_to_date and second.generation == first.generation
    assert tree_digest(sample_ws) == before
    assert not (sample_ws / "file_store").exists()
    assert (sample_ws / ".qwenmem" / "index" / "CURRENT").read_text().strip() == first.generation


def test_dry_run_writes_nothing(sample_ws):
    ws, settings = open_ws(sample_ws)
    result = reindex(ws, settings, backend="none", dry_run=True)
    assert result.dry_run and len(result.files_added) == 4
    assert not (sample_ws / ".qwenmem" / "index").exists()


def test_changed_deleted_and_new_files(sample_ws):
    ws, settings = open_ws(sample_ws)
    reindex(ws, settings, backend="none")
    (sample_ws / "memory" / "2026-11-27.md").write_text("# 2026-11-27\n- zeppelin maintenance window moved\n")
    (sample_ws / "memory" / "2026-11-28.md").unlink()
    (sample_ws / "memory" / "2026-11-29.md").write_text("- quokka sighting at the office\n")
    result = reindex(ws, settings)
    assert result.files_changed == ["memory/2026-11-27.md"]
    assert result.files_removed == ["memory/2026-11-28.md"]
    assert result.files_added == ["memory/2026-11-29.md"]
    assert paths_found(ws, settings, "zeppelin") == ["memory/2026-11-27.md"]
    assert paths_found(ws, settings, "quokka") == ["memory/2026-11-29.md"]
    assert paths_found(ws, settings, "ECONNREFUSED") == []  # old text of the changed file is gone
    assert paths_found(ws, settings, "max_connections") == []  # the deleted file dropped out
    manifest = json.loads((store.current_generation(ws) / "manifest.json").read_text())
    assert "memory/2026-11-28.md" not in manifest["files"]
    # only one generation is left on disk
    assert [p.name for p in (sample_ws / ".qwenmem" / "index").glob("gen-*")] == [result.generation]


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_appending_to_a_log_embeds_only_the_new_chunks(sample_ws):
    log = sample_ws / "memory" / "2026-11-29.md"
    log.write_text(long_daily_log(80))
    ws, settings = open_ws(sample_ws)
    first = reindex(ws, settings, backend="local", model="all-MiniLM-L6-v2")
    assert first.pieces_embedded > 0 and first.pieces_reused == 0
    rows_before = {(r.start_line, r.end_line) for r in store.load_chunks(store.current_generation(ws))
                   if r.path == "memory/2026-11-29.md"}
    assert len(rows_before) >= 3
    log.write_text(log.read_text() + "- 999 a brand new line about the lighthouse\n")
    second = reindex(ws, settings)
    assert second.files_changed == ["memory/2026-11-29.md"]
    rows_after = [r for r in store.load_chunks(store.current_generation(ws)) if r.path == "memory/2026-11-29.md"]
    unchanged = [r for r in rows_after if (r.start_line, r.end_line) in rows_before]
    changed = [r for r in rows_after if (r.start_line, r.end_line) not in rows_before]
    assert unchanged and changed
    emb = load_embedder(ws, settings, "local", "all-MiniLM-L6-v2").embedder
    # the re-embedded pieces are exactly those of the chunks whose text changed
    from qwenmem.core.index import fulltext

    stored = fulltext.stored_texts(store.current_generation(ws) / "fulltext", [r.id for r in changed])
    expected = sum(len(emb.split(stored[r.id])) for r in changed)
    assert second.pieces_embedded == expected
    assert second.pieces_reused > 0
    assert second.pieces_embedded < first.pieces_embedded
    vectors, owners = store.load_vectors(store.current_generation(ws))
    assert len(vectors) == second.pieces_embedded + second.pieces_reused
    hits = search(ws, settings, "lighthouse", auto_reindex=False).hits
    assert hits[0].path == "memory/2026-11-29.md" and hits[0].end_line == 81


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_model_change_is_detected_and_re_embeds(sample_ws):
    ws, settings = open_ws(sample_ws)
    reindex(ws, settings, backend="none")
    switched = reindex(ws, settings, backend="local", model="all-MiniLM-L6-v2")
    assert any("the index has no vectors yet: adding them with" in n for n in switched.notices)
    assert switched.pieces_embedded > 0 and switched.files_changed == [] and switched.files_added == []
    manifest = store.Manifest.load(store.current_generation(ws))
    assert manifest.embedder["model_id"] == "local:sentence-transformers/all-MiniLM-L6-v2"
    back = reindex(ws, settings, backend="none")
    assert back.embedder is None and store.load_vectors(store.current_generation(ws)) is None


@pytest.mark.slow  # loads a real embedding model or runs long (CI runs it)
def test_full_rebuild_re_embeds_everything(sample_ws):
    ws, settings = open_ws(sample_ws)
    first = reindex(ws, settings, backend="local", model="all-MiniLM-L6-v2")
    full = reindex(ws, settings, full=True)
    assert full.full and full.reason == "--full"
    assert full.pieces_reused == 0 and full.pieces_embedded == first.pieces_embedded


def test_failure_mid_reindex_keeps_previous_index(sample_ws, monkeypatch):
    ws, settings = open_ws(sample_ws)
    first = reindex(ws, settings, backend="none")
    (sample_ws / "memory" / "2026-11-27.md").write_text("- walrus migration\n")

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(store, "write_chunks", boom)
    from qwenmem.core.errors import WorkspaceError

    with pytest.raises((OSError, WorkspaceError)):  # main turns a failed index write into one named line
        reindex(ws, settings)
    monkeypatch.undo()
    assert store.current_generation(ws).name == first.generation
    assert paths_found(ws, settings, "ECONNREFUSED") == ["memory/2026-11-27.md"]  # old content still searchable
    assert [p.name for p in (sample_ws / ".qwenmem" / "index").glob("gen-*")] == [first.generation]


def test_orphan_generation_from_a_killed_run_is_ignored_then_removed(sample_ws):
    ws, settings = open_ws(sample_ws)
    first = reindex(ws, settings, backend="none")
    orphan = sample_ws / ".qwenmem" / "index" / "gen-000999"
    (orphan / "fulltext").mkdir(parents=True)
    (orphan / "chunks.json").write_text("[[\"half-writ")  # what a kill -9 mid-write leaves behind
    assert store.current_generation(ws).name == first.generation
    assert paths_found(ws, settings, "ECONNREFUSED") == ["memory/2026-11-27.md"]
    (sample_ws / "memory" / "2026-11-27.md").write_text("- walrus migration\n")
    second = reindex(ws, settings)
    assert second.generation == "gen-001000"
    assert not orphan.exists()
    assert paths_found(ws, settings, "walrus") == ["memory/2026-11-27.md"]


def test_corrupt_pointer_means_rebuild_not_crash(sample_ws):
    ws, settings = open_ws(sample_ws)
    reindex(ws, settings, backend="none")
    (sample_ws / ".qwenmem" / "index" / "CURRENT").write_text("../../etc\n")
    assert not index_exists(ws)
    result = reindex(ws, settings, backend="none")
    assert result.files_added and index_exists(ws)


def test_second_writer_is_kept_out(sample_ws):
    ws, settings = open_ws(sample_ws)
    with exclusive_lock(store.lock_path(ws), "index"):
        with pytest.raises(BusyError):
            reindex(ws, settings, backend="none")
    assert not index_exists(ws)


def test_recursive_and_extra_sources(sample_ws):
    from repair_fixtures import DIALOG as dialog

    (sample_ws / "memory" / "projects").mkdir()
    (sample_ws / "memory" / "projects" / "alpha.md").write_text("- capybara project kickoff\n")
    (sample_ws / "dialog").mkdir()
    (sample_ws / "dialog" / "2026-04-09.jsonl").write_bytes(dialog.read_bytes())
    ws, settings = open_ws(sample_ws)
    reindex(ws, settings, backend="none")
    assert paths_found(ws, settings, "capybara") == []
    result = reindex(ws, settings, recursive=True, sources="memory,dialog,sessions")
    assert "memory/projects/alpha.md" in result.files_added
    assert "dialog/2026-04-09.jsonl" in result.files_added
    assert any(p.startswith("sessions/") for p in result.files_added)
    assert paths_found(ws, settings, "capybara") == ["memory/projects/alpha.md"]
    # dialog lines keep their own line numbers: the hit's range holds the line that has the word
    first_line = json.loads(dialog.read_text(encoding="utf-8").split("\n")[0])
    word = next(b["text"] for b in first_line["content"] if b.get("type") == "text").split()[0][:6]
    hits = search(ws, settings, word, auto_reindex=False, max_results=50).hits
    assert any(h.path == "dialog/2026-04-09.jsonl" and h.start_line == 1 for h in hits)
    # the truncated sample session still contributes what can be salvaged, and nothing crashes
    assert reindex(ws, settings).up_to_date


def test_public_interface_survives_submodule_imports(sample_ws):
    # The interface other commands (dream) rely on; a submodule named like a function would shadow it.
    import qwenmem.core.index as index_pkg
    import qwenmem.core.index.reindexing  # noqa: F401
    import qwenmem.core.index.search  # noqa: F401

    assert callable(index_pkg.reindex) and callable(index_pkg.load_embedder) and callable(index_pkg.index_exists)
    ws, settings = open_ws(sample_ws)
    result = index_pkg.reindex(ws, settings, backend="none")
    assert result.generation and index_pkg.index_exists(ws)


def test_damaged_generation_is_rebuilt_from_the_files(sample_ws):
    ws, settings = open_ws(sample_ws)
    first = reindex(ws, settings, backend="none")
    (store.current_generation(ws) / "chunks.json").write_text("[[\"trunc")
    result = reindex(ws, settings)
    assert result.generation != first.generation and result.reason == "no usable index"
    assert len(result.files_added) == 4
    assert paths_found(ws, settings, "ECONNREFUSED") == ["memory/2026-11-27.md"]


def test_a_new_empty_file_or_a_touched_file_is_recorded_so_the_index_is_not_stale_forever(sample_ws):
    import os

    from qwenmem.core.index.search import stale_files

    ws, settings = open_ws(sample_ws)
    reindex(ws, settings, backend="none")
    (sample_ws / "memory" / "2026-01-01.md").write_bytes(b"")
    log = sample_ws / "memory" / "2026-11-27.md"
    os.utime(log, ns=(log.stat().st_atime_ns, log.stat().st_mtime_ns + 5_000_000_000))
    assert sorted(stale_files(ws, store.Manifest.load(store.current_generation(ws)))) == [
        "memory/2026-01-01.md", "memory/2026-11-27.md"]
    first = reindex(ws, settings)
    assert first.files_added == ["memory/2026-01-01.md"] and first.chunks_new == 0
    assert stale_files(ws, store.Manifest.load(store.current_generation(ws))) == []
    assert reindex(ws, settings).up_to_date


def test_huge_binary_and_unreadable_sources_are_skipped_with_a_notice_and_not_rescanned(sample_ws):
    from qwenmem.core.index.search import stale_files

    memory = sample_ws / "memory"
    with open(memory / "huge.md", "wb") as fh:
        fh.truncate(1024 ** 3)  # sparse: 1 GiB without using the disk
    (memory / "blob.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    ws, settings = open_ws(sample_ws)
    result = reindex(ws, settings, backend="none")
    assert sorted(result.files_skipped) == ["memory/blob.md", "memory/huge.md"]
    assert any("huge.md: larger than" in n for n in result.notices)
    assert any("blob.md: looks binary" in n for n in result.notices)
    assert "memory/2026-11-27.md" in paths_found(ws, settings, "pgbouncer", mode="text")
    assert stale_files(ws, store.Manifest.load(store.current_generation(ws))) == []
    again = reindex(ws, settings)
    assert again.up_to_date and sorted(again.files_skipped) == ["memory/blob.md", "memory/huge.md"]
    # a file that was indexed and then became binary drops out of the index
    (memory / "2026-11-27.md").write_bytes(b"\x00" * 64 + b"pgbouncer")
    changed = reindex(ws, settings)
    assert "memory/2026-11-27.md" in changed.files_changed and "memory/2026-11-27.md" in changed.files_skipped
    assert "memory/2026-11-27.md" not in paths_found(ws, settings, "pgbouncer", mode="text")


def test_reindex_cli_with_a_sparse_1gb_memory_file_is_quick(sample_ws):
    from helpers import run_cli

    with open(sample_ws / "memory" / "huge.md", "wb") as fh:
        fh.truncate(1024 ** 3)
    run = run_cli("-w", str(sample_ws), "reindex", "--embedder", "none", "--json", timeout=60)
    assert run.code == 0
    doc = json.loads(run.stdout)
    assert doc["result"]["files_skipped"] == ["memory/huge.md"] and any("huge.md" in w for w in doc["warnings"])


def test_symlinks_leaving_the_workspace_are_named_and_never_read_inside_ones_count_once(sample_ws, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.md").write_text("- zeppelin launch codes\n")
    for i in range(8):
        (outside / f"2026-01-0{i + 1}.md").write_text(f"- zeppelin note {i}\n")
    memory_md = sample_ws / "MEMORY.md"
    memory_md.unlink()
    memory_md.symlink_to(outside / "secret.md")
    (sample_ws / "memory" / "latest.md").symlink_to(sample_ws / "memory" / "2026-11-27.md")
    ws, settings = open_ws(sample_ws)
    result = reindex(ws, settings, backend="none")
    assert result.files_skipped == ["MEMORY.md"]
    assert any(n.startswith("MEMORY.md: not indexed (") and f"{memory_md}: a link to {outside / 'secret.md'}, outside "
               "the workspace" in n for n in result.notices)
    assert paths_found(ws, settings, "zeppelin", mode="text") == []
    assert paths_found(ws, settings, "pgbouncer", mode="text").count("memory/2026-11-27.md") >= 1
    assert "memory/latest.md" not in paths_found(ws, settings, "pgbouncer", mode="text")  # the same inode, once
    # memory/ itself linked away: named once, and not even listed (issue 24 §2)
    (sample_ws / "memory" / "latest.md").unlink()
    (sample_ws / "memory").rename(tmp_path / "old-memory")
    (sample_ws / "memory").symlink_to(outside, target_is_directory=True)
    linked = reindex(ws, settings)
    assert linked.files_skipped == ["MEMORY.md", "memory"]
    skip_notes = [n for n in linked.notices if "outside the workspace" in n or "more files skipped" in n]
    assert len(skip_notes) == 2 and f"{sample_ws / 'memory'}: a link to {outside}, outside" in skip_notes[1]
    assert paths_found(ws, settings, "zeppelin", mode="text") == []
    assert reindex(ws, settings).up_to_date  # skipped links are recorded: the index does not look stale


def _rewrite_keeping_size_and_mtime(path, old: str, new: str) -> None:
    assert len(old.encode()) == len(new.encode())
    st = path.stat()
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_an_edit_that_keeps_size_and_mtime_right_after_indexing_is_seen_racy_rule(sample_ws):
    """issue 18: staleness trusted size + mtime only; an edit that restored the mtime (rsync, some editors) was never
    seen and search kept returning the removed text. A file modified within 2 s of the scan is hashed too."""
    log = sample_ws / "memory" / "2026-11-29.md"
    log.write_text("- the aardvark keeper starts on Monday\n", encoding="utf-8")
    ws, settings = open_ws(sample_ws)
    reindex(ws, settings, backend="none")
    _rewrite_keeping_size_and_mtime(log, "aardvark", "flamingo")
    hits = search(ws, settings, "flamingo", max_results=20).hits  # search refreshes a stale index first
    assert [h.path for h in hits] == ["memory/2026-11-29.md"]
    assert paths_found(ws, settings, "aardvark") == []


def test_reindex_verify_rehashes_files_whose_size_and_old_mtime_look_unchanged(sample_ws):
    log = sample_ws / "memory" / "2026-11-29.md"
    log.write_text("- the aardvark keeper starts on Monday\n", encoding="utf-8")
    an_hour_ago = time.time_ns() - 3600 * 10**9
    os.utime(log, ns=(an_hour_ago, an_hour_ago))  # not racy: size + mtime are trusted for it
    ws, settings = open_ws(sample_ws)
    reindex(ws, settings, backend="none")
    _rewrite_keeping_size_and_mtime(log, "aardvark", "flamingo")
    assert reindex(ws, settings).up_to_date  # the documented limit of size + mtime
    verified = reindex(ws, settings, verify=True)
    assert verified.files_changed == ["memory/2026-11-29.md"]
    assert paths_found(ws, settings, "flamingo") == ["memory/2026-11-29.md"]
    assert paths_found(ws, settings, "aardvark") == []
