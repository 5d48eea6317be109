"""Only the session model knows the session document's key paths (issue 25, point 4).

`{"agent": {"state": {"context": …, "summary": …}, "scroll": …, "mode_state": …}}` (2.x) and `{"agent": {"memory": {"content":
…}}}` (1.x) are read and written through qwenmem/core/session_model (gen2.state_of, gen2.context_of,
gen2.ensure_scroll, gen1_doc.memory_value, gen1_doc.document_of_content, …). Every other module of qwenmem that
indexes, `.get`s, `.setdefault`s or `.pop`s one of those keys by its literal name, asks `"state" in x`, or builds a
`{"agent": …}` literal fails here, unless the key means something else there and ALLOWED says what."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from helpers import REPO

QWENMEM = REPO / "qwenmem"
SESSION_MODEL = QWENMEM / "core" / "session_model"
SESSION_KEYS = frozenset({"agent", "state", "memory", "scroll", "mode_state", "context", "summary"})
READERS = frozenset({"get", "setdefault", "pop"})

_LITERAL = "a {\"agent\": …} literal"
_STATE_LITERAL = "an AgentState literal ({\"summary\": …, \"context\": …})"
# (module, key, the expression the key is looked up in) -> why it is not the session document's key
ALLOWED: dict[tuple[str, str, str], str] = {
    ("cli/commands/fleet.py", "agent", "rec"): "a fleet JSON Lines record's agent id",
    ("cli/commands/fleet.py", "agent", _LITERAL): "a fleet JSON Lines record, keyed by its agent id",
    ("core/index/sources.py", "memory", "sources"): "the index source named memory (MEMORY.md and memory/)",
    ("core/compaction/gen2/summary.py", "state", "b"): "a tool block's execution state",
    ("core/listing.py", "context", "st"): "gen2.quick_stats's typed result, not the document",
    ("core/listing.py", "summary", "st"): "gen2.quick_stats's typed result, not the document",
    ("core/compaction/gen2/history_write.py", "state", "b"): "a tool block's execution state",
    ("core/repair/gen2/fix.py", "state", "block"): "a tool block's execution state",
    ("core/repair/gen2/rules.py", "state", "block"): "a tool block's execution state",
    ("core/repair/gen2/from_gen1.py", "state", "block"): "a tool block's execution state",
}


def _text(node: ast.AST) -> str:
    return ast.unparse(node)


def _key(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and node.value in SESSION_KEYS else None


def key_uses(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, key, the expression it is looked up in) for every literal use of a session key in `tree`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and (key := _key(node.slice)):
            found.append((node.lineno, key, _text(node.value)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in READERS
              and node.args and (key := _key(node.args[0]))):
            found.append((node.lineno, key, _text(node.func.value)))
        elif isinstance(node, ast.Compare) and (key := _key(node.left)) and all(
                isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            found.append((node.lineno, key, _text(node.comparators[0])))
        elif isinstance(node, ast.Dict) and any(_key(k) == "agent" for k in node.keys if k is not None):
            found.append((node.lineno, "agent", _LITERAL))
        elif isinstance(node, ast.Dict) and {"summary", "context"} <= {_key(k) for k in node.keys if k is not None}:
            found.append((node.lineno, "context", _STATE_LITERAL))
    return found


def offences(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        if path.is_relative_to(SESSION_MODEL):
            continue
        rel = str(path.relative_to(root))
        for line, key, where in key_uses(ast.parse(path.read_text(encoding="utf-8"))):
            if (rel, key, where) not in ALLOWED:
                out.append(f"qwenmem/{rel}:{line}: {key!r} of {where}")
    return out


def test_no_module_outside_the_session_model_knows_the_document_key_paths():
    found = offences(QWENMEM)
    assert found == [], "use the session model's accessors (session_model/gen2.py, gen1_doc.py):\n" + "\n".join(found)


def test_every_allowance_is_still_needed():
    used = set()
    for rel, key, where in ALLOWED:
        uses = key_uses(ast.parse((QWENMEM / rel).read_text(encoding="utf-8")))
        if any((k, w) == (key, where) for _, k, w in uses):
            used.add((rel, key, where))
    assert set(ALLOWED) - used == set()


@pytest.mark.parametrize("line", [
    'x = doc["agent"]["state"]',
    'x = agent.get("scroll")',
    'agent.setdefault("mode_state", {})',
    'ok = "memory" not in value',
    'doc = {"agent": {"memory": {"content": []}}}',
    'ctx = state.get("context", [])',
    's = state.get("summary") or ""',
    'state = {"summary": "", "context": []}',
])
def test_the_checker_catches_each_way_of_reaching_a_key(tmp_path, line):
    (tmp_path / "mod.py").write_text(line + "\n", encoding="utf-8")
    assert offences(tmp_path)


@pytest.mark.parametrize("line", ['x = row["content"]', 'x = cfg.get("agents")', 'x = rec.get(key)',
                                  'ok = "state" == kind', 'd = {"memory": 1}',
                                  'out = {"summary": 1, "rows": []}'])
def test_the_checker_leaves_other_keys_alone(tmp_path, line):
    (tmp_path / "mod.py").write_text(line + "\n", encoding="utf-8")
    assert offences(tmp_path) == []
