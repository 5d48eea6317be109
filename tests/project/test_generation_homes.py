"""One home per generation (issue 25): in compaction/, repair/ and settings/, QwenPaw 1.x's home (gen1) and 2.x's
(gen2) never import each other; what both need lives in the neutral core beside them."""

from __future__ import annotations

from tests.project.test_architecture import import_graph

UNITS = ("qwenmem.core.compaction", "qwenmem.core.repair", "qwenmem.core.settings")


def home_of(module: str, unit: str) -> str | None:
    """'gen1' / 'gen2' for a module of unit's gen1 or gen2 home (a module or a package), else None."""
    for gen in ("gen1", "gen2"):
        home = f"{unit}.{gen}"
        if module == home or module.startswith(home + "."):
            return gen
    return None


def crossings(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} imports {b}" for unit in UNITS for a, targets in graph.items() for b in targets
                  if home_of(a, unit) and home_of(b, unit) and home_of(a, unit) != home_of(b, unit))


def test_each_generation_has_its_home_in_every_split_unit():
    graph = import_graph()
    for unit in UNITS:
        assert {home_of(m, unit) for m in graph} >= {"gen1", "gen2"}, unit


def test_no_generation_home_imports_the_other():
    assert crossings(import_graph()) == []


def test_the_crossing_finder_sees_a_crossing_and_ignores_the_neutral_core():
    graph = {"qwenmem.core.settings.gen1": {"qwenmem.core.settings.gen2", "qwenmem.core.workspace"},
             "qwenmem.core.compaction.run": {"qwenmem.core.compaction.gen1.run", "qwenmem.core.compaction.gen2.run"},
             "qwenmem.core.repair.gen2.fix": {"qwenmem.core.repair.gen2.from_gen1", "qwenmem.core.repair.run"}}
    assert crossings(graph) == ["qwenmem.core.settings.gen1 imports qwenmem.core.settings.gen2"]
