"""The session layers point one way (qwenmem/core/session_model/__init__.py):
tolerant_json / codec / model / gen1_doc (no qwenmem imports) → _blocks → gen1, gen2 → detect → salvage
(salvage_documents.py, recovery.py) → loading (sessions.py) → history.db reading → listing; repair and the CLI
sit above, never below."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.project.test_architecture import imported_modules

CORE = Path(__file__).resolve().parents[2] / "qwenmem" / "core"
SM = CORE / "session_model"

# module → the qwenmem modules it may import (prefix match)
ALLOWED = {
    SM / "tolerant_json.py": (),
    SM / "codec.py": (),
    SM / "model.py": (),
    SM / "_blocks.py": ("qwenmem.core.session_model.model",),
    SM / "gen1_doc.py": (),
    # gen1/gen2 are each generation's writer: both encode through codec, QwenPaw's one serialisation
    SM / "gen1.py": ("qwenmem.core.session_model._blocks", "qwenmem.core.session_model.model",
                     "qwenmem.core.session_model.codec", "qwenmem.core.session_model.gen1_doc"),
    SM / "gen2.py": ("qwenmem.core.session_model._blocks", "qwenmem.core.session_model.model",
                     "qwenmem.core.session_model.codec"),
    # detect.generation_of_file opens files: only through confine (which sits on errors alone)
    SM / "detect.py": ("qwenmem.core.session_model.gen1", "qwenmem.core.session_model.gen2",
                       "qwenmem.core.session_model.model", "qwenmem.core.session_model", "qwenmem.core.confine",
                       "qwenmem.core.errors"),
    SM / "__init__.py": ("qwenmem.core.session_model.",),
}
# the history reader sits on the model, never on loading, salvage or repair
HISTORY_FORBIDDEN = ("qwenmem.core.sessions", "qwenmem.core.recovery", "qwenmem.core.repair", "qwenmem.core.listing",
                     "qwenmem.cli")


def _qwenmem_imports(path: Path) -> set[str]:
    return {m for m in imported_modules(path) if m.startswith("qwenmem")}


@pytest.mark.parametrize("path", sorted(ALLOWED), ids=lambda p: p.name)
def test_session_model_layers(path):
    allowed = ALLOWED[path]
    bad = [m for m in _qwenmem_imports(path) if not any(m == a or m.startswith(a) for a in allowed)]
    assert bad == [], f"{path.name} may import only {allowed}"


def test_every_session_model_module_is_layered():
    assert set(SM.glob("*.py")) == set(ALLOWED)


# salvage/maintain (issue 14) write the store and sit on the repair layer; every other history module only reads
HISTORY_MAINTENANCE = {"salvage.py", "maintain.py"}


@pytest.mark.parametrize("path", sorted(p for p in (CORE / "history").glob("*.py") if p.name not in HISTORY_MAINTENANCE),
                         ids=lambda p: p.name)
def test_history_reading_never_imports_loading_or_repair(path):
    bad = [m for m in _qwenmem_imports(path) if m.startswith(HISTORY_FORBIDDEN)]
    assert bad == []


def test_loading_does_not_import_repair_directly():
    """sessions.py reads both generations through the model; it never imports the repair package itself."""
    assert not [m for m in _qwenmem_imports(CORE / "sessions.py") if m.startswith("qwenmem.core.repair")]
    assert "qwenmem.core.session_model.tolerant_json" in _qwenmem_imports(CORE / "salvage_documents.py")


SALVAGE_LAYER = ("salvage_documents.py", "recovery.py")


@pytest.mark.parametrize("name", SALVAGE_LAYER)
def test_salvage_sits_below_loading_and_repair(name):
    """sessions.py salvages damaged files through recovery.py; neither it nor the splitter may reach back up."""
    bad = [m for m in _qwenmem_imports(CORE / name)
           if m.startswith(("qwenmem.core.sessions", "qwenmem.core.repair", "qwenmem.core.listing", "qwenmem.cli"))]
    assert bad == []


def test_the_checker_catches_an_upward_import(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from qwenmem.core.sessions import load_session\n")
    assert "qwenmem.core.sessions" in _qwenmem_imports(bad)
