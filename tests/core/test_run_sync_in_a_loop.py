"""``run_sync()`` where the thread already runs an event loop (a notebook): it runs, and Ctrl-C
while it waits cancels the run, keeps its session, then raises ``KeyboardInterrupt``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

_SCRIPT = '''
import asyncio, signal, sys
import tooloop

# Ctrl-C raises KeyboardInterrupt, as in a kernel, even when the tests run where SIGINT is ignored
# (a background job of a non-interactive shell).
signal.signal(signal.SIGINT, signal.default_int_handler)
from tooloop import Agent, ModelResponse, ToolCall
from tooloop.testing import ScriptedModel

async def wait_long() -> str:
    """Wait a long time."""
    print("tool started", flush=True)
    await asyncio.sleep(60)
    return "never"

agent = Agent(
    ScriptedModel([ModelResponse(tool_calls=[ToolCall("w", "wait_long", {})]), "unused"]),
    tools=[wait_long],
    store=sys.argv[1],
)

async def cell() -> None:  # a notebook cell: the loop runs, and the code calls run_sync
    first = agent.run_sync("hello", session_id="nb")
    print("first:", first.stop_reason.value, flush=True)

loop = asyncio.new_event_loop()  # like a kernel's loop: Ctrl-C raises KeyboardInterrupt in the thread
try:
    loop.run_until_complete(cell())
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
stored = asyncio.run(tooloop.open_store(sys.argv[1]).load("nb"))
kinds = [type(m).__name__ + ":" + getattr(getattr(m, "status", None), "value", "") for m in stored]
print("stored:", kinds, flush=True)
'''


def test_ctrl_c_while_run_sync_waits_in_a_running_loop_cancels_and_keeps_the_session(tmp_path: Path) -> None:
    script = tmp_path / "cell.py"
    script.write_text(_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2] / "src")])}
    store = f"sqlite:///{tmp_path / 'nb.db'}"
    process = subprocess.Popen(
        [sys.executable, str(script), store], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "tool started"
    time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    lines = out.splitlines()
    assert lines[0] == "KeyboardInterrupt", out
    assert lines[1] == "stored: ['UserMessage:', 'ToolCallMessage:cancelled']", out
