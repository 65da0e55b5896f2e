#!/usr/bin/env bash
# Set up a virtualenv and run the example conversation (a real provider when configured).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[all]"
.venv/bin/python examples/quickstart.py "$@"
