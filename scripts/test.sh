#!/usr/bin/env bash
# Set up .venv and run the test suite (the command the README and CI use). By default the fast set: tests marked
# `slow` are left out; pass --run-slow for the full set (CI does). Other arguments go to pytest.
source "$(dirname "$0")/_setup.sh"
cd "$ROOT"
# House rules first (config in pyproject.toml): lint with a complexity limit, then types. Skip with
# QWENMEM_SKIP_LINT=1 (e.g. to run one test while a type error elsewhere is being fixed).
_tests_started=$SECONDS
_step() { printf 'test [%3d s]: %s\n' "$((SECONDS - _tests_started))" "$*" >&2; }
if [ -z "${QWENMEM_SKIP_LINT:-}" ]; then
    _step "ruff (lint with a complexity limit)…"
    "$VENV/bin/python" -m ruff check --quiet qwenmem tests || { echo "ruff failed (see above)" >&2; exit 1; }
    _step "mypy (strict on all of qwenmem; the first run builds its cache in ${TMPDIR:-/tmp}/qwenmem-mypy-cache)…"
    "$VENV/bin/python" -m mypy --no-error-summary --cache-dir "${TMPDIR:-/tmp}/qwenmem-mypy-cache" \
        || { echo "mypy failed (see above)" >&2; exit 1; }
fi
case " $* " in
    *" --run-slow "*) _step "pytest, the full set…" ;;
    *) _step "pytest, the fast set (--run-slow for the full set)…" ;;
esac
# One pytest worker per core (pytest-xdist, whole files per worker so a module's fixtures are built once): the full
# set takes about half the time on 2 cores. QWENMEM_TEST_WORKERS=1 (or -n/-p no:xdist among the arguments) runs
# in one process.
_workers="${QWENMEM_TEST_WORKERS:-$(nproc 2>/dev/null || echo 1)}"
_parallel=()
case " $* " in
    *" -n "*|*" --numprocesses"*|*" no:xdist "*) ;;
    *) if [ "$_workers" -gt 1 ] && "$VENV/bin/python" -c "import xdist" >/dev/null 2>&1; then
           _parallel=(-n "$_workers" --dist loadfile)
       fi ;;
esac
set +e
"$VENV/bin/python" -m pytest "${_parallel[@]}" "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "pytest collected no tests" >&2
    exit 0
fi
exit "$rc"
