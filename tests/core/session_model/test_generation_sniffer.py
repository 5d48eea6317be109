"""detect.generation_of_file: the one place that tells a session file's generation from its bytes (the generation
count of `info`/`doctor`/`repair` and compaction's 2.x dispatch both use it). It must never block, never follow a
link out of the workspace, never read a huge file whole, and never raise for what is on disk."""

from __future__ import annotations

import json
import os
import threading
import tracemalloc
from pathlib import Path

import pytest

from helpers import FIXTURE_SESSIONS
from qwenpaw2_support import builder
from qwenmem.core.events import recording
from qwenmem.core.compaction.gen2.check import is_gen2_file
from qwenmem.core.session_model.detect import GEN1, GEN2, generation_of_file
from qwenmem.core.sessions import iter_session_refs, load_session
from qwenmem.core.sessions import count_file_generations
from qwenmem.core.workspace import Workspace

GEN1_BYTES = (FIXTURE_SESSIONS / "healthy_small.json").read_bytes()


def _gen2_doc() -> dict:
    clock = builder.Clock()
    return builder.document(builder.state("console:t", builder.conversation(2, clock)))


GEN2_BYTES = json.dumps(_gen2_doc(), ensure_ascii=False).encode()


def _reordered(data: bytes) -> bytes:
    """The same session with a key before `agent` and the agent's first key moved last: the head no longer looks
    usual, so only the full parse can tell."""
    doc = json.loads(data)
    agent = doc["agent"]
    first = next(iter(agent))
    agent[first] = agent.pop(first)
    return json.dumps({"zz_first": 1, **doc}, ensure_ascii=False).encode()


@pytest.fixture
def ws(tmp_path) -> Workspace:
    root = tmp_path / "ws"
    (root / "sessions").mkdir(parents=True)
    yield Workspace(root, root, None, "test")


def _write(ws: Workspace, name: str, data: bytes) -> Path:
    path = ws.sessions_dir / name
    path.write_bytes(data)
    return path


def test_the_usual_heads_of_both_generations(ws):
    assert generation_of_file(_write(ws, "a.json", GEN1_BYTES)) == GEN1
    assert generation_of_file(_write(ws, "b.json", GEN2_BYTES)) == GEN2


def test_unusual_heads_are_parsed_whole(ws):
    one, two = _reordered(GEN1_BYTES), _reordered(GEN2_BYTES)
    assert not one.startswith(b'{"agent"') and not two.startswith(b'{"agent"')
    assert generation_of_file(_write(ws, "a.json", one)) == GEN1
    assert generation_of_file(_write(ws, "b.json", two)) == GEN2
    # more whitespace than the head holds before the document
    assert generation_of_file(_write(ws, "c.json", b" " * 1000 + GEN2_BYTES)) == GEN2


def test_invalid_utf8_does_not_hide_the_generation(ws):
    """The loader reads bad bytes as U+FFFD (sessions.decode_text), so the sniffer agrees with it."""
    data = _reordered(GEN2_BYTES).replace(b'"zz_first": 1', b'"zz_first": "\xff\xfe"')
    path = _write(ws, "bad.json", data)
    assert generation_of_file(path) == GEN2
    ref = next(r for r in iter_session_refs(ws) if r.path.name == "bad.json")
    assert load_session(ref).generation == GEN2


@pytest.mark.parametrize("data", [b"", b"\x00" * 4096, b"\xef\xbb\xbf" + GEN1_BYTES, b"not json at all",
                                  b"[1, 2, 3]", b'{"agent": {"other": 1}}', b'{"chats": []}', os.urandom(2048),
                                  b"   \n\t  ", b'{"zz": 1, "agent": {"memory": '],
                         ids=["empty", "nul", "bom", "text", "list", "no-state", "chats", "random", "blank",
                              "truncated-unusual"])
def test_garbage_is_no_generation(ws, data):
    assert generation_of_file(_write(ws, "g.json", data)) is None


def test_deep_nesting_is_no_generation_and_does_not_raise(ws):
    deep = b'{"zz": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    assert generation_of_file(_write(ws, "deep.json", deep)) is None
    # a usual head is decided by the head: the nesting below it is the loader's to report
    usual = b'{"agent": {"state": ' + b"[" * 200_000 + b"]" * 200_000 + b"}}"
    assert generation_of_file(_write(ws, "deep2.json", usual)) == GEN2


def test_a_fifo_is_never_opened(ws, monkeypatch):
    fifo = ws.sessions_dir / "pipe.json"
    os.mkfifo(fifo)
    opened: list[str] = []
    real_open = os.open

    def spy(path, flags, *args, **kwargs):
        opened.append(os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(generation_of_file(fifo)), daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # release the blocked open so the test process can end, then fail
        os.close(real_open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("generation_of_file blocked on a FIFO")
    assert result == [None]
    assert "pipe.json" not in opened
    assert is_gen2_file(fifo) is False


def test_a_directory_or_a_missing_file_is_no_generation(ws):
    (ws.sessions_dir / "adir.json").mkdir()
    assert generation_of_file(ws.sessions_dir / "adir.json") is None
    assert generation_of_file(ws.sessions_dir / "missing.json") is None
    assert generation_of_file(ws.sessions_dir / "missing" / "x.json") is None


def test_a_link_leaving_the_workspace_is_not_followed(ws, tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_bytes(GEN2_BYTES)
    (ws.sessions_dir / "evil.json").symlink_to(outside)
    (ws.sessions_dir / "evil_dir").symlink_to(tmp_path, target_is_directory=True)
    with recording() as log:
        assert generation_of_file(ws.sessions_dir / "evil.json") is None
        assert generation_of_file(ws.sessions_dir / "evil_dir" / "outside.json") is None
    assert len(log.refused_links) == 2 and all("outside the workspace" in r for r in log.refused_links)
    assert is_gen2_file(ws.sessions_dir / "evil.json") is False


def test_a_link_inside_the_workspace_is_followed(ws):
    (ws.path / "kept").mkdir()
    (ws.path / "kept" / "real.json").write_bytes(GEN2_BYTES)
    (ws.sessions_dir / "inside.json").symlink_to("../kept/real.json")
    with recording() as log:
        assert generation_of_file(ws.sessions_dir / "inside.json") == GEN2
    assert log.refused_links == []


def test_a_path_under_no_workspace_is_read_normally(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "real.json").write_bytes(GEN1_BYTES)
    (plain / "link.json").symlink_to(plain / "real.json")
    os.mkfifo(plain / "pipe.json")
    assert generation_of_file(plain / "link.json") == GEN1
    assert generation_of_file(str(plain / "real.json")) == GEN1
    assert generation_of_file(plain / "pipe.json") is None


def test_a_file_over_the_cap_is_not_parsed(ws):
    data = _reordered(GEN1_BYTES)
    path = _write(ws, "big.json", data)
    assert generation_of_file(path, max_bytes=len(data)) == GEN1
    assert generation_of_file(path, max_bytes=len(data) - 1) is None
    # the cap does not apply to a usual head: the first bytes decide
    assert generation_of_file(_write(ws, "usual.json", GEN1_BYTES), max_bytes=10) == GEN1


def test_a_huge_file_is_never_read_whole(ws):
    """A 300 MiB sparse file with an unusual head: over the default cap, so at most the head is read."""
    path = ws.sessions_dir / "huge.json"
    with open(path, "wb") as fh:
        fh.write(b'{"zz": 1, "agent": {"memory": {"content": []}}}')
        fh.truncate(300 << 20)
    tracemalloc.start()
    try:
        assert generation_of_file(path) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"{peak} bytes allocated to sniff a 300 MiB file"


def test_both_callers_count_and_dispatch_the_same_way(ws, tmp_path):
    _write(ws, "one.json", GEN1_BYTES)
    _write(ws, "one_unusual.json", _reordered(GEN1_BYTES))
    _write(ws, "two.json", GEN2_BYTES)
    _write(ws, "garbage.json", b"\x00garbage")
    _write(ws, ".synced.json", GEN2_BYTES)  # a dot-file is QwenPaw's bookkeeping, never a session
    os.mkfifo(ws.sessions_dir / "pipe.json")
    (tmp_path / "out.json").write_bytes(GEN2_BYTES)
    (ws.sessions_dir / "out.json").symlink_to(tmp_path / "out.json")
    assert count_file_generations(ws) == (2, 1)
    assert [p.name for p in sorted(ws.sessions_dir.iterdir()) if is_gen2_file(p)] == [".synced.json", "two.json"]
