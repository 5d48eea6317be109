"""The core library stays UI-free: no typer, rich, click or qwenmem.cli imports anywhere under qwenmem/core."""

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "qwenmem" / "core"
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
