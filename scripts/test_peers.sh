#!/usr/bin/env bash
# Install the real peer programs the tests talk to (MCP servers, protocol clients) into .peers/.
# Idempotent: a peer already installed at the pinned version is left alone. Loud on failure: the
# tests that need a peer fail (they never skip) when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS="${TOOLOOP_PEERS:-$PWD/.peers}"
PYTHON="${PYTHON:-python3}"
mkdir -p "$PEERS"

# Python MCP server, in a virtualenv of its own: server packages pin their own `mcp`.
MCP_TIME_VERSION="2026.10.19"
if ! "$PEERS/time-venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp-server-time') != '$MCP_TIME_VERSION')" 2>/dev/null; then
    echo "== installing mcp-server-time $MCP_TIME_VERSION into $PEERS/time-venv"
    rm -rf "$PEERS/time-venv"
    "$PYTHON" -m venv "$PEERS/time-venv"
    "$PEERS/time-venv/bin/python" -m pip install --quiet "mcp-server-time==$MCP_TIME_VERSION"
fi

# npm peers, run with node.
NPM_PACKAGES=(
    "@modelcontextprotocol/server-everything@2026.8.31"
    "@agentclientprotocol/sdk@2.4.0"
)
if [ ! -f "$PEERS/npm/.installed" ] || [ "$(cat "$PEERS/npm/.installed")" != "${NPM_PACKAGES[*]}" ]; then
    echo "== installing ${NPM_PACKAGES[*]} into $PEERS/npm"
    mkdir -p "$PEERS/npm"
    [ -f "$PEERS/npm/package.json" ] || echo '{"name": "tooloop-test-peers", "private": true}' > "$PEERS/npm/package.json"
    npm install --silent --no-audit --no-fund --prefix "$PEERS/npm" "${NPM_PACKAGES[@]}"
    echo "${NPM_PACKAGES[*]}" > "$PEERS/npm/.installed"
fi
