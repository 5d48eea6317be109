"""Issue 10 item 6: no JSON value of any type, in any known key of a session, agent.json, config.json or chats.json,
may cause an internal error in the core read-only operations (sessions list/show, repair --check, compact --check,
info). Besides hypothesis' JSON values, three literals that Python's json cannot turn back into plain values are
spliced into the file text: an integer of more than 4,300 digits, nesting deeper than the recursion limit, and a
path-like string longer than the file system allows."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from helpers import invoke
from speed import examples

HUGE_INT = "1" * 4301
DEEP = "[" * 100_000 + "]" * 100_000
LONG_PATH = "/" + "/".join(["d" * 250] * 20)
SPLICED = {"<<huge-int>>": HUGE_INT, "<<deep>>": DEEP, "<<neg-huge-int>>": "-" + HUGE_INT}
DEEP_BUT_PARSEABLE = {"<<deep-600>>": "[" * 600 + "]" * 600}  # json reads it; pickle and repr may not

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20) | st.sampled_from(["", "0", "..", "../x", "a/b", LONG_PATH, "\x00", "user", "tool_use"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
values = json_values | st.sampled_from(list(SPLICED) + list(DEEP_BUT_PARSEABLE))


def _session() -> dict:
    msg = lambda i, role, content: {"id": f"m{i}", "name": "user" if role == "user" else "Friday", "role": role,  # noqa: E731
                                    "content": content, "metadata": {}, "timestamp": f"2026-03-02 10:00:0{i}.000"}
    return {"agent": {"memory": {"content": [
        [msg(0, "user", [{"type": "text", "text": "hello"}]), []],
        [msg(1, "assistant", [{"type": "thinking", "thinking": "let me look"},
                              {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"file_path": "a.md"}}]),
         ["compressed"]],
        [msg(2, "system", [{"type": "tool_result", "id": "c1", "name": "read_file",
                            "output": [{"type": "text", "text": "file text"}]}]), []],
        [msg(3, "assistant", "plain string content"), []],
    ], "_compressed_summary": "summary"}, "toolkit": {"active_groups": []}, "name": "Friday", "_sys_prompt": "be kind",
        "plan_notebook": {"storage": {"plans": {}}, "current_plan": None}}}


def _paths(obj, prefix=()) -> list[tuple]:
    """Every key and index of a document, containers included."""
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, prefix + (i,))
    return out


AGENT_JSON = {"language": "en", "active_model": {"provider_id": "openai", "model": "gpt"},
              "running": {"max_input_length": 1000,
                          "light_context_config": {"dialog_path": "dialog", "token_count_estimate_divisor": 4,
                                                   "context_compact_config": {"enabled": True,
                                                                              "compact_threshold_ratio": 0.8,
                                                                              "reserve_threshold_ratio": 0.1,
                                                                              "compact_with_thinking_block": True},
                                                   "tool_result_pruning_config": {
                                                       "enabled": True, "pruning_recent_n": 2,
                                                       "pruning_old_msg_max_bytes": 3000,
                                                       "pruning_recent_msg_max_bytes": 50000,
                                                       "offload_retention_days": 5,
                                                       "tool_results_cache": "tool_results",
                                                       "exempt_file_extensions": [".md"],
                                                       "exempt_tool_names": ["chat_with_agent"]}},
                          "reme_light_memory_config": {"summarize_when_compact": True, "dream_cron": "0 23 * * *",
                                                       "recursive_file_watcher": False,
                                                       "embedding_model_config": {"backend": "openai", "api_key": "",
                                                                                  "base_url": "", "model_name": "",
                                                                                  "dimensions": 1024}},
                          "context_compact": {"memory_compact_ratio": 0.75},
                          "tool_result_compact": {"recent_n": 2}}}
LEGACY_AGENT_JSON = {"running": {"max_input_length": 131072, "context_compact": {"memory_compact_ratio": 0.75,
                                                                                  "context_compact_enabled": True},
                                 "tool_result_compact": {"enabled": True, "recent_n": 2, "old_max_bytes": 3000},
                                 "embedding_config": {"backend": "openai", "base_url": ""}}}
CONFIG_JSON = {"agents": {"active_agent": "default",
                          "profiles": {"default": {"workspace_dir": "workspaces/default", "name": "Friday"}}},
               "user_timezone": "Europe/Berlin", "language": "en"}
CHATS_JSON = {"version": 1, "chats": [{"id": "c-1", "name": "hello", "session_id": "s1", "user_id": "u1",
                                       "channel": "console", "created_at": "2026-03-02T10:00:00", "meta": {}}]}
FILES = {"session": _session(), "agent.json": AGENT_JSON, "legacy agent.json": LEGACY_AGENT_JSON,
         "config.json": CONFIG_JSON, "chats.json": CHATS_JSON}
TARGETS = [(name, path) for name, doc in FILES.items() for path in [()] + _paths(doc)]


def _put(doc, path: tuple, value):
    if not path:
        return value
    doc = copy.deepcopy(doc)
    holder = doc
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    return doc


def _text(doc) -> str:
    text = json.dumps(doc, ensure_ascii=False)
    for marker, literal in {**SPLICED, **DEEP_BUT_PARSEABLE}.items():
        text = text.replace(json.dumps(marker), literal)
    return text


def _workspace(root: Path, target: str, doc) -> Path:
    files = {name: _text(d) for name, d in FILES.items()}
    files[target] = _text(doc)
    ws = root / "workspaces" / "default"
    (ws / "sessions" / "console").mkdir(parents=True)
    (root / "config.json").write_text(files["config.json"], encoding="utf-8")
    (ws / "agent.json").write_text(files["legacy agent.json" if target == "legacy agent.json" else "agent.json"],
                                   encoding="utf-8")
    (ws / "chats.json").write_text(files["chats.json"], encoding="utf-8")
    (ws / "sessions" / "console" / "u1_s1.json").write_text(files["session"], encoding="utf-8")
    (ws / "MEMORY.md").write_text("# memory\n- a fact\n", encoding="utf-8")
    return root


OPERATIONS = [("sessions", "list"), ("sessions", "show", "console/u1_s1"), ("sessions", "repair", "--check"),
              ("compact", "--check", "--all"), ("info",)]


def _assert_no_internal_error(root: Path, where: str) -> None:
    for op in OPERATIONS:
        run = invoke("-w", str(root), *op, "--json")
        assert "internal error" not in run.stderr, (where, op, run.stderr[-2000:])
        if run.stdout.strip():
            doc = json.loads(run.stdout)
            assert all(e.get("code") != "internal_error" for e in doc.get("errors", [])), (where, op, doc["errors"])


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(target=st.sampled_from(TARGETS), value=values)
def test_any_json_value_in_any_known_key_is_never_an_internal_error(tmp_path_factory, target, value):
    name, path = target
    root = _workspace(tmp_path_factory.mktemp("ws"), name, _put(FILES[name], path, value))
    _assert_no_internal_error(root, f"{name} {path!r} = {str(value)[:80]!r}")


@pytest.mark.parametrize("marker", list(SPLICED) + ["long-path"])
# every literal in a session and agent.json (where the reported crashes were) in the default run, in every file in
# the full run (each case is ~1.5 s)
@pytest.mark.parametrize("name", [n if n in ("session", "agent.json") else pytest.param(n, marks=pytest.mark.slow)
                                  for n in FILES])
def test_each_unparseable_literal_in_every_file_is_never_an_internal_error(tmp_path, name, marker):
    """The literals behind the reported crashes, each in every file, at a leaf the random test may not reach."""
    doc = FILES[name]
    leaves = [p for p in _paths(doc) if not isinstance(_get(doc, p), (dict, list))]
    # the leaves behind the reported crashes, and an even spread of the others (every leaf is the random test's job)
    reported = [p for p in leaves if p[-1] in ("thinking", "timestamp", "provider_id", "workspace_dir", "dialog_path",
                                               "tool_results_cache", "user_timezone", "session_id", "max_input_length")]
    paths = list(dict.fromkeys(reported + leaves[:: max(1, len(leaves) // 6)]))
    value = LONG_PATH if marker == "long-path" else marker
    for i, path in enumerate(paths):
        root = _workspace(tmp_path / str(i), name, _put(doc, path, value))
        _assert_no_internal_error(root, f"{name} {path!r} = {marker}")


def _get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def test_sessions_list_in_the_worker_pool_returns_plain_data(tmp_path, monkeypatch):
    """Values that cannot travel back from a pool worker (a deep list as a timestamp) must not break the listing."""
    from qwenmem.core import listing

    monkeypatch.setattr(listing, "PARALLEL_MIN_FILES", 1)
    doc = _put(_session(), ("agent", "memory", "content", 0, 0, "timestamp"), "<<deep-ish>>")
    # deep enough that pickle gives up, shallow enough that json parses it
    text = _text(doc).replace(json.dumps("<<deep-ish>>"), "[" * 600 + "]" * 600)
    root = _workspace(tmp_path, "session", _session())
    sessions = root / "workspaces/default/sessions/console"
    for i in range(4):
        (sessions / f"u{i}_deep{i}.json").write_text(text, encoding="utf-8")
    run = invoke("-w", str(root), "sessions", "list", "--json")
    assert run.code == 0, run.stderr[-2000:]
    assert run.json()["result"]["count"] == 5
