#!/usr/bin/env bash
# Set up a virtualenv with every extra and run all checks: ruff, mypy (strict), pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[dev]"
echo "== test peers (MCP servers and ACP clients the tests run)"
bash scripts/test_peers.sh
echo "== ruff"
.venv/bin/ruff check src tests bench examples
.venv/bin/ruff format --check src tests bench examples
echo "== mypy (strict)"
.venv/bin/mypy
echo "== pytest"
.venv/bin/python -m pytest "$@"
