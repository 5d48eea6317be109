#!/usr/bin/env bash
# Set up .venv and run qwenmem's main job on the bundled sample workspace (a temporary copy; offline).
source "$(dirname "$0")/_setup.sh"
exec "$VENV/bin/qwenmem" demo "$@"
