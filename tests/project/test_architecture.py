"""The core library stays UI-free: no typer, rich, click or qwenmem.cli imports anywhere under qwenmem/core."""

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "qwenmem" / "core"
FORBIDDEN = {"typer", "rich", "click", "qwenmem.cli"}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_core_never_imports_ui_libraries():
    offenders = []
    files = sorted(CORE.rglob("*.py"))
    assert files, "qwenmem/core has no modules?"
    for path in files:
        for name in imported_modules(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                offenders.append(f"{path.relative_to(CORE.parent.parent)} imports {name}")
    assert offenders == []


def test_the_checker_sees_nested_imports(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("def f():\n    import rich.console\n    from typer import Typer\n")
    assert {"rich.console", "typer"} <= imported_modules(sample)


PACKAGE = CORE.parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """qwenmem module -> the qwenmem modules it imports, at any level (a lazy import inside a function counts:
    a circle through it is still a circle). `from pkg import name` counts as importing pkg.name when that is a
    module, else pkg; relative imports are resolved."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_pkg else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    edges.add(target)  # importing one's own parent package is how Python loads it, not a circle
        graph[name] = edges
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycles_anywhere_in_qwenmem():
    graph = import_graph()
    assert "qwenmem.cli.app" in graph and "qwenmem.cli.root" in graph["qwenmem.cli.app"]
    assert find_cycles(graph) == []


def test_the_cycle_finder_finds_a_circle_through_a_lazy_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


CORE_PACKAGE = "qwenmem.core"


def core_package_of(module: str) -> str | None:
    """The top-level node of qwenmem.core a module belongs to: qwenmem.core.compaction.run -> qwenmem.core.compaction,
    qwenmem.core.fsio -> itself; None for modules outside core and for core's own __init__."""
    prefix = CORE_PACKAGE + "."
    if not module.startswith(prefix):
        return None
    return prefix + module[len(prefix) :].split(".")[0]


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph collapsed to core's top-level modules and packages: an edge A -> B when any module in A
    imports any module in B (lazy imports included, as import_graph counts them)."""
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        source = core_package_of(module)
        if source is None:
            continue
        edges = packages.setdefault(source, set())
        for target in targets:
            node = core_package_of(target)
            if node is not None and node != source:
                edges.add(node)
    return packages


def test_no_package_cycles_in_core():
    packages = package_graph(import_graph())
    assert "qwenmem.core.fsio" in packages["qwenmem.core.compaction"]
    assert find_cycles(packages) == []


def test_the_package_collapse_joins_modules_of_one_package():
    graph = {
        "qwenmem.core.a.x": {"qwenmem.core.b"},
        "qwenmem.core.a.y": {"qwenmem.core.a.x", "qwenmem.cli.app"},
        "qwenmem.core.b": {"qwenmem.core.a.y"},
        "qwenmem.core": {"qwenmem.core.b"},
    }
    packages = package_graph(graph)
    assert packages == {"qwenmem.core.a": {"qwenmem.core.b"}, "qwenmem.core.b": {"qwenmem.core.a"}}
    assert find_cycles(packages) == [["qwenmem.core.a", "qwenmem.core.b"]]
