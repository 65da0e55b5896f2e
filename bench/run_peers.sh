#!/usr/bin/env bash
# Run the shared agent-loop bench (baseline, peers) with tooloop's contestants from bench/peers.
#
#   bench/run_peers.sh --quick                                  # smoke run, ~1-2 min
#   bench/run_peers.sh                                          # full run, ~10+ min
#   bench/run_peers.sh --contestants baseline,tooloop --phases sequential
#   bench/run_peers.sh --providers [--quick]                    # every provider vs its own floor (~10 min)
#
# With --providers it runs bench/providers.py in the same venv instead (arguments after it go
# there): OpenAI Chat, OpenAI Responses, Anthropic and Gemini, run() and stream(), each against
# the floor of its wire format on bench/mock_wire.py; results in bench/results/providers-*.md.
# Arguments go to run_bench.py. The shared bench folder is found at ../shared/bench from the repo
# root (or from the main checkout when this is a git worktree); TOOLOOP_SHARED_BENCH overrides it.
# Its venv (from its requirements.txt, plus this project installed editable with the openai extra)
# lives in bench/.work/ (git-ignored). The harness writes contestant links and results next to
# itself, so it runs from a fresh copy in bench/.work/harness and the shared folder stays untouched;
# results end up in bench/results/.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$REPO/bench/.work"
PYTHON="${PYTHON:-python3}"

find_shared() {
    if [ -n "${TOOLOOP_SHARED_BENCH:-}" ]; then echo "$TOOLOOP_SHARED_BENCH"; return; fi
    local main
    main="$(cd "$(git -C "$REPO" rev-parse --git-common-dir)/.." && pwd)"
    for root in "$REPO" "$main"; do
        if [ -f "$root/../shared/bench/run_bench.py" ]; then (cd "$root/../shared/bench" && pwd); return; fi
    done
    echo "shared bench not found at ../shared/bench; set TOOLOOP_SHARED_BENCH" >&2
    exit 1
}
SHARED="$(find_shared)"

# venv: rebuilt when the harness requirements change; tooloop is always (re)installed editable
VENV="$WORK/venv"
STAMP="$VENV/.requirements.sha256"
WANT="$(sha256sum "$SHARED/requirements.txt" | cut -d' ' -f1)"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q -r "$SHARED/requirements.txt"
    echo "$WANT" > "$STAMP"
fi
(cd "$REPO" && "$VENV/bin/pip" install -q -e ".[openai]")

if [ "${1:-}" = "--providers" ]; then
    shift
    exec "$VENV/bin/python" "$REPO/bench/providers.py" "$@"
fi

# a fresh copy of the harness, with results going to bench/results/
HARNESS="$WORK/harness"
rm -rf "$HARNESS"
mkdir -p "$HARNESS" "$REPO/bench/results"
cp -r "$SHARED/run_bench.py" "$SHARED/mock_llm.py" "$SHARED/contestants" "$HARNESS/"
ln -s "$REPO/bench/results" "$HARNESS/results"

exec "$VENV/bin/python" "$HARNESS/run_bench.py" --extra-dir "$REPO/bench/peers" "$@"
