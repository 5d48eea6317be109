"""`doctor` and `info` on QwenPaw 2.x workspaces agree with QwenPaw and with qwenmem's other commands (issue 23
item 6): the dream schedule as QwenPaw reads it, one compaction threshold for every file, the index's missing
vectors, advice that works, and a copied root whose config.json names a workspace_dir that is gone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers import FIXTURES, invoke
from qwenpaw2_support import copy_corpus, needs_gen2_corpus


def doctor(*args: str) -> dict:
    run = invoke(*args, "doctor", "--json")
    assert "Traceback" not in run.stderr
    return run.json()["result"]["agents"][0]


def texts(agent: dict) -> list[str]:
    return [f["message"] if isinstance(f, dict) and "message" in f else json.dumps(f) for f in agent["findings"]]


def reme_config(ws: Path) -> tuple[dict, dict]:
    doc = json.loads((ws / "agent.json").read_text())
    return doc, doc["running"]["reme_light_memory_config"]


@needs_gen2_corpus
def test_qwenpaws_dream_runs_only_when_enabled_and_scheduled(tmp_path):
    ws = copy_corpus(tmp_path)
    doc, cfg = reme_config(ws)
    assert (cfg["dream_cron_enabled"], cfg["dream_cron"]) == (False, "0 23 * * *")  # as QwenPaw saved it
    agent = doctor("-w", str(ws))
    assert agent["schedule"]["qwenpaw_dreams"] is False
    assert not any("QwenPaw's own dream runs" in t for t in texts(agent))
    cfg["dream_cron_enabled"] = True
    (ws / "agent.json").write_text(json.dumps(doc))
    agent = doctor("-w", str(ws))
    assert agent["schedule"]["qwenpaw_dreams"] is True
    assert any("QwenPaw's own dream runs at '0 23 * * *'" in t for t in texts(agent))


@needs_gen2_corpus
def test_every_file_of_a_2x_workspace_is_checked_against_the_threshold_info_reports(tmp_path):
    ws = copy_corpus(tmp_path)
    info = invoke("-w", str(ws), "info", "--json").json()["result"]
    threshold = info["derived"]["compact_threshold"]
    assert threshold == 7200  # C = 9,000 from the provider, ratio 0.8
    big = "berlin " * 6500  # ≈ 6,800 tokens: near 7,200, nowhere near 1.x's 104,857
    legacy = {"agent": {"memory": {"content": [[{"id": "m1", "name": "user", "role": "user", "content": big,
                                                 "timestamp": "2026-11-30 10:00:00.000"}, []]],
                                   "_compressed_summary": ""}}}
    (ws / "sessions" / "console" / "dan_console--dan.json").write_text(json.dumps(legacy))
    agent = doctor("-w", str(ws))
    assert agent["sessions"]["compact_threshold"] == threshold
    assert [n["key"] for n in agent["sessions"]["near_threshold"]] == ["console/dan_console--dan"]


@needs_gen2_corpus
def test_doctor_sees_the_missing_vectors_reindex_reports(tmp_path):
    ws = copy_corpus(tmp_path)  # agent.json's embedding endpoint is the generator's dead stub port
    built = invoke("-w", str(ws), "reindex", "--json").json()["result"]
    missing = built["chunks_without_vectors"]
    assert missing > 0
    agent = doctor("-w", str(ws))
    assert agent["index"]["vectors_missing"] is True
    assert any(f"{missing} of {agent['index']['chunks']} chunk(s) have no vectors" in t for t in texts(agent))


def test_a_damaged_backup_copy_gets_no_advice_that_does_not_work(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sessions").mkdir(parents=True)
    (ws / "agent.json").write_text("{}")
    backup = FIXTURES / "sessions" / "main_main.json.backup_20260316_203609"
    shutil.copy(backup, ws / "sessions" / backup.name)
    assert invoke("-w", str(ws), "sessions", "repair", "--all", "--json").code == 0  # repair rightly skips it
    assert (ws / "sessions" / backup.name).read_bytes() == backup.read_bytes()
    run = invoke("-w", str(ws), "doctor", "--json")
    agent = run.json()["result"]["agents"][0]
    assert agent["sessions"]["corrupt"] == [] and run.code == 0  # a nightly `doctor || mail` stays quiet
    assert not any("repair --all" in t for t in texts(agent))


@needs_gen2_corpus
def test_a_copied_root_resolves_beside_its_config_json(tmp_path):
    ws = copy_corpus(tmp_path)
    root = ws.parent.parent
    config = json.loads((root / "config.json").read_text())
    assert config["agents"]["profiles"]["default"]["workspace_dir"] == "/home/user/.qwenpaw/workspaces/default"
    run = invoke("-w", str(root), "info", "--json")
    assert run.code == 0, run.stderr
    assert run.json()["result"]["workspace"] == str(ws.resolve())
    assert "agents.profiles.default.workspace_dir" in run.stderr and "copied or moved" in run.stderr
    assert any("copied or moved" in t for t in texts(doctor("-w", str(root))))
    shutil.move(ws, root / "workspaces" / "elsewhere")
    gone = invoke("-w", str(root), "info")
    assert gone.code != 0 and "Traceback" not in gone.stderr
    assert "config.json agents.profiles.default.workspace_dir" in gone.stderr and "--workspace" not in gone.stderr
