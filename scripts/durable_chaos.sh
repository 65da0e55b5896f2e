#!/usr/bin/env bash
# Longer chaos runs of durable turns than CI's (not run by CI): random SIGKILLs of DBOS workers
# and a PostgreSQL outage, every invariant checked from the outside (the store, the effects log).
#   scripts/durable_chaos.sh [runs]        sizes from TOOLOOP_CHAOS_SESSIONS, _TURNS, _KILLS, _OUTAGE
# Each run uses its own seed (1..runs) and prints its figures: turns, kills, outage, re-runs, time.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-3}"
export TOOLOOP_CHAOS_SESSIONS="${TOOLOOP_CHAOS_SESSIONS:-12}"
export TOOLOOP_CHAOS_TURNS="${TOOLOOP_CHAOS_TURNS:-4}"
export TOOLOOP_CHAOS_KILLS="${TOOLOOP_CHAOS_KILLS:-10}"
export TOOLOOP_CHAOS_OUTAGE="${TOOLOOP_CHAOS_OUTAGE:-10}"
export TOOLOOP_CHAOS_TIMEOUT="${TOOLOOP_CHAOS_TIMEOUT:-1800}"
for seed in $(seq 1 "$runs"); do
    TOOLOOP_CHAOS_SEED="$seed" .venv/bin/python -m pytest -p no:cacheprovider -q -s \
        "tests/durable/test_chaos.py::test_random_sigkills_of_three_workers_and_a_database_outage_lose_and_repeat_nothing"
done
