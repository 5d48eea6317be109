"""The house rules stay whole: no function over the complexity limit and no qwenmem module (core, CLI or the
package's own) outside mypy's strict flags. (ruff and mypy themselves run in scripts/test.sh; this pins that nobody
re-adds an exception quietly.)"""

from __future__ import annotations

import tomllib

from helpers import REPO

STRICT_FLAGS = {"disallow_untyped_defs", "disallow_incomplete_defs", "disallow_untyped_calls",
                "disallow_untyped_decorators", "disallow_any_generics", "check_untyped_defs", "warn_return_any",
                "no_implicit_reexport", "strict_equality"}


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_no_complexity_exceptions():
    lint = _pyproject()["tool"]["ruff"]["lint"]
    assert "C90" in lint["select"] and lint["mccabe"]["max-complexity"] <= 15
    assert not {f: r for f, r in lint.get("per-file-ignores", {}).items() if any(c.startswith("C9") for c in r)}


def test_all_of_qwenmem_is_strict_and_nothing_relaxes_it():
    mypy = _pyproject()["tool"]["mypy"]
    assert mypy["files"] == ["qwenmem"]
    overrides = mypy["overrides"]
    strict = [o for o in overrides if "qwenmem.*" in o["module"] and "qwenmem" in o["module"]]
    assert strict and all(strict[0].get(flag) is True for flag in STRICT_FLAGS)
    for o in overrides:
        modules = o["module"] if isinstance(o["module"], list) else [o["module"]]
        if any(m == "qwenmem" or m.startswith("qwenmem.") for m in modules):
            assert not o.get("ignore_errors") and all(o.get(f, True) is True for f in STRICT_FLAGS), o
