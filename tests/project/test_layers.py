"""The layers of qwenmem.core, declared in docs/ARCHITECTURE.md, point one way: a package imports only from its
own layer or the layers below it (lazy imports inside functions included). (No two packages importing each other:
tests/project/test_architecture.py.)"""

from __future__ import annotations

import re
from pathlib import Path

from tests.project.test_architecture import CORE_PACKAGE, import_graph, package_graph

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "qwenmem" / "core"
DOC = REPO / "docs" / "ARCHITECTURE.md"


def declared_layers(text: str) -> dict[str, int]:
    """core unit (top-level module or package of qwenmem.core) -> its layer number, from the doc's `layers` block:
    one line per layer, bottom first, `N name: unit unit …`."""
    block = re.search(r"```layers\n(.*?)```", text, re.S)
    assert block, "docs/ARCHITECTURE.md has no ```layers block"
    layers: dict[str, int] = {}
    for line in block.group(1).splitlines():
        if not line.strip():
            continue
        number, _, units = line.partition(":")
        level = int(number.split()[0])
        for unit in units.split():
            assert unit not in layers, f"{unit} is declared in two layers"
            layers[unit] = level
    return layers


def unit_graph() -> dict[str, set[str]]:
    """test_architecture's package graph of core, by unit name (qwenmem.core.fsio -> fsio)."""
    short = len(CORE_PACKAGE) + 1
    return {a[short:]: {b[short:] for b in targets} for a, targets in package_graph(import_graph()).items()}


def test_every_core_unit_is_in_exactly_one_declared_layer():
    layers = declared_layers(DOC.read_text(encoding="utf-8"))
    actual = {p.stem for p in CORE.iterdir() if p.suffix == ".py" and p.stem != "__init__"}
    actual |= {p.name for p in CORE.iterdir() if (p / "__init__.py").is_file()}
    assert sorted(actual - layers.keys()) == [], "core units missing from docs/ARCHITECTURE.md's layers"
    assert sorted(layers.keys() - actual) == [], "docs/ARCHITECTURE.md declares units that do not exist"


def test_core_imports_point_down_the_layers():
    layers = declared_layers(DOC.read_text(encoding="utf-8"))
    upward = [f"{a} (layer {layers[a]}) imports {b} (layer {layers[b]})"
              for a, targets in sorted(unit_graph().items()) for b in sorted(targets) if layers[b] > layers[a]]
    assert upward == []


def test_the_layer_block_parser_reads_the_documented_shape():
    text = "x\n```layers\n0 plumbing: errors fsio\n1 workspace: workspace\n```\n"
    assert declared_layers(text) == {"errors": 0, "fsio": 0, "workspace": 1}
