#!/usr/bin/env bash
# Set up a virtualenv and ask a real question with `tooloop run`: real tools that read this
# repository and a real MCP server (mcp-server-git from PyPI), against the configured provider,
# or the offline model when none is configured.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[all]"

# The MCP server, in a virtualenv of its own (server packages pin their own `mcp`).
MCP=()
if [ -x .demo/git-venv/bin/mcp-server-git ] || { "$PYTHON" -m venv .demo/git-venv \
        && .demo/git-venv/bin/python -m pip install --quiet "mcp-server-git==2026.10.19"; }; then
    export TOOLOOP_CONFIG="$PWD/examples/tooloop.toml"   # declares the server "git" (read-only tools)
    MCP=(--mcp git)
else
    echo "Could not install mcp-server-git: running without the MCP server." >&2
fi

DEFAULT_QUESTION="How big is tooloop's loop package, which module is largest, and what was the last commit?"
QUESTION="${1:-$DEFAULT_QUESTION}"
MODEL=()
if [ -z "${TOOLOOP_MODEL:-}${OPENAI_API_KEY:-}${ANTHROPIC_API_KEY:-}${GEMINI_API_KEY:-}${GOOGLE_API_KEY:-}${OLLAMA_HOST:-}" ]; then
    echo "No provider configured (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, OLLAMA_HOST or TOOLOOP_MODEL):" \
        "using the offline model." >&2
    MODEL=(--model offline:repo)
fi
TOOLS=(--tool examples/repo_tools.py:TOOLS)

set -x
.venv/bin/tooloop run "$QUESTION" "${TOOLS[@]}" "${MCP[@]}" "${MODEL[@]}" \
    --system "You answer questions about the code repository in the working directory (repo_path '.'). Use the tools; be brief."
{ set +x; } 2>/dev/null
echo >&2
# The session remembers its model, tools and MCP servers: -c goes on with all of them.
echo "Go on with: .venv/bin/tooloop run -c \"And the smallest?\"   or   .venv/bin/tooloop chat -c" >&2
