"""examples/rollout.py runs offline end to end against its own mock server (a real subprocess)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rollout.py"


def test_rollout_against_the_mock_reports_throughput() -> None:
    command = [sys.executable, str(EXAMPLE), "--mock", "-n", "40", "-c", "15", "--calls", "2", "--latency-ms", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "40/40 conversations" in done.stdout
    assert "conversations  40 ok, 0 failed" in done.stdout
    assert "model turns/s" in done.stdout
    assert "ms per conversation" in done.stdout
