"""Characterisation of every production path that writes a session file: the exact bytes each one writes.

Pinned before issue 25's refactoring routed these writes through the session model's one encoder per generation
(session_model.gen1.encode / gen2.encode), so a refactoring that changes a single byte (key order, a key added at
another place, ensure_ascii, separators) fails here. Each scenario runs the real command in a subprocess on a copy
of a fixture or corpus workspace with fixed timestamps, then hashes every session file it left.

The digests are the program's output, not an independent oracle: when a behaviour change is intended, append the
new ones to a file with `QWENMEM_PRINT_DIGESTS=/tmp/digests` and update DIGESTS in the same commit as the change, saying why. The
independent half: every written file is also QwenPaw's own serialisation of its content (json.dumps,
ensure_ascii=False, default separators; spec qwenpaw2-workspace.md §2.2)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from helpers import FIXTURE_SESSIONS, require_shared, run_cli
from repair_fixtures import DIALOG
from qwenpaw2_support import GEN2_CORPUS, copy_corpus
from upgrade_support import _workspace

pytestmark = pytest.mark.needs_shared(GEN2_CORPUS)

SCROLL_ROW_GONE = "id-whose-row-is-gone"


def _gen1_workspace(root: Path) -> Path:
    """The upgrade tests' long 1.x workspace, on fixed dates so the bytes do not depend on today."""
    start = datetime(2026, 3, 1, 9, 0, 0)
    return _workspace(root, [start + timedelta(minutes=i) for i in range(40)], compressed_turns=20, dialog_turns=6)


def _gen1_fixtures(root: Path) -> Path:
    (root / "sessions").mkdir(parents=True)
    for path in sorted(FIXTURE_SESSIONS.iterdir()):
        if path.is_file() and path.suffix == ".json":
            shutil.copy(path, root / "sessions" / path.name)
    return root


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _save(path: Path, doc: dict) -> None:
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


def _damage_gen2(ws: Path) -> None:
    """One damage per 2.x repair path: mode_state missing, an unanswered tool call and a non-ASCII text, a persisted
    id with no history.db row, and a 1.x file in the 2.x workspace (converted by repair)."""
    sessions = ws / "sessions"
    alice = sessions / "console" / "alice_console--alice.json"
    doc = _load(alice)
    del doc["agent"]["mode_state"]
    context = doc["agent"]["state"]["context"]
    context.append({"id": "m-unanswered", "name": "QwenPaw", "role": "assistant", "created_at": "2026-12-01 10:00:00.000",
                    "content": [{"type": "text", "text": "Grüße — 你好 ✓"},
                                {"type": "tool_call", "id": "call-x", "name": "read_file", "input": "{}"}],
                    "metadata": {}})
    _save(alice, doc)
    bob = sessions / "console" / "bob_console--bob.json"
    doc = _load(bob)
    scroll = doc["agent"].setdefault("scroll", {})
    scroll["persisted_ids"] = list(scroll.get("persisted_ids") or []) + [SCROLL_ROW_GONE]
    _save(bob, doc)
    shutil.copy(FIXTURE_SESSIONS / "healthy_small.json", sessions / "console" / "dave_console--dave.json")


def _gen1_with_dialog(tmp: Path) -> Path:
    ws = _gen1_fixtures(tmp / "ws")
    (ws / "dialog").mkdir()
    shutil.copy(DIALOG, ws / "dialog" / "day.jsonl")
    return ws


def _gen2_damaged(tmp: Path) -> Path:
    ws = copy_corpus(tmp)
    _damage_gen2(ws)
    return ws


REPAIR = ("sessions", "repair", "--all", "--fix-tool-pairs")
COMPACT = ("compact", "--all", "--force", "--summarizer", "extractive", "--max-input-length", "2000")
# name -> (build the workspace under tmp, the command that writes its session files; "{ws}" is the workspace)
SCENARIOS = {
    "gen2-repair": (_gen2_damaged, (*REPAIR, "--convert-1x")),
    "gen2-compact": (copy_corpus, COMPACT),
    "gen1-repair": (lambda tmp: _gen1_fixtures(tmp / "ws"), REPAIR),
    "gen1-compact": (lambda tmp: _gen1_workspace(tmp / "ws"), COMPACT),
    "upgrade-scroll": (lambda tmp: _gen1_workspace(tmp / "ws"), ("upgrade", "--strategy", "scroll")),
    "upgrade-native": (lambda tmp: _gen1_workspace(tmp / "ws"), ("upgrade", "--strategy", "native")),
    "gen1-from-dialog": (_gen1_with_dialog, ("sessions", "repair", "healthy_small", "--from", "{ws}/dialog/day.jsonl")),
}


def _session_files(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted((ws / "sessions").rglob("*.json"))
            if not p.name.startswith(".")}


# what a run makes up afresh: ids (uuid4 hex, 1.x's shortuuid), `created_at` of now, the temporary directory
_FRESH = [(re.compile(rb"[0-9a-f]{32}"), b"<uuid>"),
          (re.compile(rb'"id": "[2-9A-HJ-NP-Za-km-z]{22}"'), b'"id": "<shortuuid>"'),
          (re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}"), b"<now>")]


def _digests(files: dict[str, bytes], tmp: Path) -> dict[str, str]:
    out = {}
    for name, data in files.items():
        data = data.replace(str(tmp).encode(), b"<tmp>")
        for pattern, stand_in in _FRESH:
            data = pattern.sub(stand_in, data)
        out[name] = hashlib.sha256(data).hexdigest()[:16]
    return out


DIGESTS: dict[str, dict[str, str]] = {  # pinned from main at e5b28f5, before the refactoring
    'gen1-from-dialog': {
        'sessions/7700112233_telegram--7700112233.json': 'c5ea1c00e629bcbd',
        'sessions/default_1775000000047.json': '33ce13498d4c0875',
        'sessions/healthy_small.json': '08b2cdc7003e0da6',
        'sessions/legacy_bare_items.json': '5649c2726c8e88c3',
        'sessions/legacy_compressed_marks.json': 'd12559640792bee7',
        'sessions/plan_mode.json': '03b5945bb94b2fd6',
    },
    'gen1-compact': {
        'sessions/alice_console--alice.json': '0bcd05f1f932fd28',
        'sessions/default_1775000000000.json': '99a5d00a3592f52d',
    },
    'gen1-repair': {
        'sessions/7700112233_telegram--7700112233.json': '6272a4800b83c4e3',
        'sessions/default_1775000000047.json': '33ce13498d4c0875',
        'sessions/healthy_small.json': 'd05751a759b5b11c',
        'sessions/legacy_bare_items.json': '5649c2726c8e88c3',
        'sessions/legacy_compressed_marks.json': 'd12559640792bee7',
        'sessions/plan_mode.json': '03b5945bb94b2fd6',
    },
    'gen2-compact': {
        'sessions/console/alice_console--alice.json': '40fc4dd6ced460bd',
        'sessions/console/bob_console--bob.json': 'f0af309684f75842',
        'sessions/console/carol_console--carol.json': '11aee4702713dc3c',
        'sessions/discord/42_discord--dm--42.json': '3a2c9f4586edaa07',
        'sessions/orphan_unregistered.json': '3a2c9f4586edaa07',
        'sessions/telegram/7_telegram--7.json': '7b0ffbc47d270403',
    },
    'gen2-repair': {
        'sessions/console/alice_console--alice.json': '9a7cc495798d8274',
        'sessions/console/bob_console--bob.json': '8fea58d75b36106f',
        'sessions/console/carol_console--carol.json': '4a35545e9ccd3f98',
        'sessions/console/dave_console--dave.json': '169c8fd565faba26',
        'sessions/discord/42_discord--dm--42.json': '639fc6ab54a55e23',
        'sessions/orphan_unregistered.json': '639fc6ab54a55e23',
        'sessions/telegram/7_telegram--7.json': '513e5326c584cf8b',
    },
    'upgrade-native': {
        'sessions/alice_console--alice.json': '49a106ffb5ec7b66',
        'sessions/default_1775000000000.json': '52997a6ac2c066d8',
    },
    'upgrade-scroll': {
        'sessions/alice_console--alice.json': '8fd4cf2d681e2761',
        'sessions/default_1775000000000.json': 'd9b6105050928e34',
    },
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_written_session_bytes_are_unchanged(name, tmp_path):
    require_shared(GEN2_CORPUS)
    build, command = SCENARIOS[name]
    ws = build(tmp_path)
    before = _session_files(ws)
    run = run_cli("-w", str(ws), *(arg.format(ws=ws) for arg in command))
    files = _session_files(ws)
    if os.environ.get("QWENMEM_PRINT_DIGESTS"):  # a file to append this scenario's digests to
        with open(os.environ["QWENMEM_PRINT_DIGESTS"], "a", encoding="utf-8") as out:
            out.write(f"    {name!r}: {_digests(files, tmp_path)!r},\n")
    assert run.code in (0, 1), run.stderr
    written = [rel for rel in files if files[rel] != before.get(rel)]
    assert written, "the scenario wrote no session file"
    for rel in written:
        data = files[rel]
        assert json.dumps(json.loads(data.decode("utf-8")), ensure_ascii=False).encode("utf-8") == data, rel
    assert _digests(files, tmp_path) == DIGESTS[name]
