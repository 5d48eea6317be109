"""`compact --check` on 2.x counts the system prompt and the tool schemas QwenPaw 2.2.2 sends (issue 23 §3).

The data (qwenmem/core/compaction/gen2/qwenpaw_measured.py) comes from bench/peer/qwenpaw2_fixed_parts.py, which builds the
corpus's agent with QwenPaw's own AgentBuilder; these tests pin qwenmem's rebuild against those measured figures,
and against QwenPaw's own prompt contributor on workspaces made here, in the validator venv (tests/validators.py;
it holds what the contributor imports).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from helpers import invoke
from validators import python_importing
from qwenpaw2_support import GEN2_WS, copy_corpus, needs_gen2_corpus
from qwenmem.core.compaction.gen2 import qwenpaw_measured as measured
from qwenmem.core.compaction.gen2.prompt import enabled_tools, prompt_files_text, tool_schemas_part
from qwenmem.core.workspace import discover_workspace



def agentscope_tokens(nbytes: int) -> int:
    return int(nbytes / 4 + 0.5)


@needs_gen2_corpus
@pytest.mark.parametrize("strategy", ["scroll", "native"])
def test_tool_schemas_equal_what_qwenpaw_built_for_the_corpus_agent(strategy):
    doc = json.loads((GEN2_WS / "agent.json").read_text(encoding="utf-8"))
    part = tool_schemas_part(doc, strategy)
    want = measured.MEASURED_CORPUS[f"{strategy}/en"]
    names, _ = enabled_tools(doc, strategy)
    assert len(names) == want["tools"] and sorted(names) == sorted(measured.TOOL_BYTES[strategy])
    assert part.size.nbytes == want["tools_bytes"]  # json.dumps(tools) of QwenPaw's real toolkit
    assert part.tokens == measured.MEASURED_TOTALS[f"{strategy}/en"][1]
    assert measured.QWENPAW_VERSION in part.source


@needs_gen2_corpus
def test_prompt_files_part_equals_qwenpaw_s_for_the_corpus():
    ws = discover_workspace(GEN2_WS)
    doc = json.loads((GEN2_WS / "agent.json").read_text(encoding="utf-8"))
    text, used = prompt_files_text(ws, doc)
    assert used == ["AGENTS.md", "SOUL.md", "PROFILE.md"]
    assert len(text.encode()) == measured.MEASURED_CORPUS["scroll/en"]["prompt_files_bytes"]


def test_disabling_a_tool_in_agent_json_removes_its_schema():
    doc = {"tools": {"builtin_tools": {"spawn_subagent": {"enabled": False}, "append_file": {"enabled": True}}}}
    base = tool_schemas_part({}, "native").size.nbytes
    changed = tool_schemas_part(doc, "native").size.nbytes
    assert changed == base - measured.REGISTRY["spawn_subagent"]["bytes"] + measured.REGISTRY["append_file"]["bytes"]
    assert "recall_history" in enabled_tools({}, "scroll")[0] and "recall_history" not in enabled_tools({}, "native")[0]
    assert "ast_search" not in enabled_tools({}, "native")[0]  # gated on coding mode


def test_an_enabled_mcp_client_is_named_as_not_counted():
    doc = {"mcp": {"clients": {"search": {"enabled": True}, "off": {"enabled": False}}}}
    part = tool_schemas_part(doc, "native")
    assert any("search" in u and "off" not in u for u in part.unknown)


@needs_gen2_corpus
def test_check_counts_qwenpaw_s_parts_by_default_and_names_the_version(tmp_path):
    ws = copy_corpus(tmp_path)
    run = invoke("-w", str(ws), "compact", "--check", "console/alice_console--alice", "--json")
    assert run.code == 0, run.stderr
    r = run.json()["result"]["sessions"][0]
    tools_tokens = measured.MEASURED_TOTALS["scroll/en"][1]
    assert r["terms"]["tools"] == tools_tokens  # it was "0 assumed"
    # the system prompt within a few bytes of QwenPaw's (its paths are this copy's; the weekday varies)
    assert abs(r["terms"]["system"] - measured.MEASURED_TOTALS["scroll/en"][0]) < 40
    assert measured.QWENPAW_VERSION in r["terms"]["system_source"]
    assert measured.QWENPAW_VERSION in r["terms"]["tools_source"]
    assert any(measured.QWENPAW_VERSION in n for n in r["notices"])
    table = invoke("-w", str(ws), "compact", "--check", "--all")
    assert f"QwenPaw {measured.QWENPAW_VERSION}" in " ".join(table.stdout.split())


# --------------------------------------------------------------------------- against QwenPaw's own contributor

CONTRIBUTOR = """
import json, sys
from pathlib import Path
from types import SimpleNamespace
from qwenpaw.runtime.prompt_contributors import WorkspacePromptFilesContributor
out = []
for ws, files, heartbeat in json.loads(sys.argv[1]):
    cfg = SimpleNamespace(system_prompt_files=files)
    ctx = SimpleNamespace(workspace_dir=Path(ws), agent_id="default",
                          extras={"agent_config": cfg, "heartbeat_enabled": heartbeat})
    out.append(WorkspacePromptFilesContributor().contribute_sync(ctx))
print(json.dumps(out))
"""

AGENTS = ("---\nsummary: x\n---\n# Rules\n\nBe kind.\n<!-- heartbeat:start -->\nBeat every hour.\n"
          "<!-- heartbeat:end -->\nMore.\n<!-- memory:start -->\nold memory text\n<!-- memory:end -->\n")
CASES = [(None, False), (None, True), (["SOUL.md", "AGENTS.md", "MISSING.md"], False), ([], False),
         (["../outside.md", "EMPTY.md", "FRONT.md", "PROFILE.md", "sessions"], False)]


def test_prompt_files_part_equals_qwenpaw_s_contributor(tmp_path):
    python = python_importing("qwenpaw.runtime.prompt_contributors")
    ws_dir = tmp_path / "ws"
    ws_dir.mkdir()
    (ws_dir / "AGENTS.md").write_text(AGENTS, encoding="utf-8")
    (ws_dir / "SOUL.md").write_text("\n\n  I am calm. — ünïcode ✓  \n", encoding="utf-8")
    (ws_dir / "PROFILE.md").write_text("---\nonly front matter\n---\n", encoding="utf-8")
    (ws_dir / "EMPTY.md").write_text("   \n", encoding="utf-8")
    (ws_dir / "FRONT.md").write_text("--- not front matter, one rule\nbody", encoding="utf-8")
    (tmp_path / "outside.md").write_text("secret", encoding="utf-8")
    (ws_dir / "sessions").mkdir()
    proc = subprocess.run([str(python), "-c", CONTRIBUTOR,
                           json.dumps([(str(ws_dir), files, heartbeat) for files, heartbeat in CASES])],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    ws = discover_workspace(ws_dir)
    for (files, heartbeat), their in zip(CASES, theirs):
        doc: dict = {"heartbeat": {"enabled": heartbeat}}
        if files is not None:
            doc["system_prompt_files"] = files
        mine, _ = prompt_files_text(ws, doc)
        assert mine == (their or ""), (files, heartbeat)


def test_the_data_module_is_what_the_bench_measured():
    """qwenpaw_measured.py is `bench/peer/qwenpaw2_fixed_parts.py --render` of the saved measurement, unedited."""
    import sys

    from helpers import REPO

    sys.path.insert(0, str(REPO))
    from bench.peer.qwenpaw2_fixed_parts import render_module

    saved = json.loads((REPO / "bench" / "data" / "qwenpaw2_fixed_parts.json").read_text(encoding="utf-8"))
    module = (REPO / "qwenmem" / "core" / "compaction" / "gen2" / "qwenpaw_measured.py").read_text(encoding="utf-8")
    assert module == render_module(saved["results"], saved["versions"])
    scroll_en = next(m for m in saved["results"] if (m["strategy"], m["language"]) == ("scroll", "en"))
    assert measured.TOOL_BYTES["scroll"] == scroll_en["tools"]
