"""Durability: a run killed with SIGKILL while a tool runs is resumed by a new process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

from tooloop.messages import AssistantMessage, ToolCallMessage, ToolCallStatus, UserMessage
from tooloop.store import open_store

SCRIPT = Path(__file__).with_name("crash_agent.py")
SRC = Path(__file__).parents[2] / "src"


def _spawn(db: Path, log: Path, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(db), str(log), mode],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_killed_run_resumes_without_running_finished_tools_twice(tmp_path: Path) -> None:
    db, log = tmp_path / "s.db", tmp_path / "tools.log"
    first = _spawn(db, log, "first")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        lines = log.read_text().splitlines() if log.exists() else []
        if {"done fast1", "done fast2", "start slow"} <= set(lines):
            break
        assert first.poll() is None, first.communicate()
        time.sleep(0.02)
    else:
        raise AssertionError("the first process never reached the slow tool")
    async with open_store(f"sqlite:///{db}") as store:  # wait until both fast outcomes are durable
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            statuses = [m.status for m in (await store.load("crash")).tool_invocations]
            if statuses.count(ToolCallStatus.OK) == 2:
                break
            await asyncio.sleep(0.01)
    first.kill()
    first.communicate(timeout=10)

    async with open_store(f"sqlite:///{db}") as store:
        crashed = await store.load("crash")
    assert [m.status for m in crashed.tool_invocations] == [
        ToolCallStatus.OK,
        ToolCallStatus.STARTED,
        ToolCallStatus.OK,
    ]

    second = _spawn(db, log, "resume")
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    assert out.strip() == "all done: fast 1 ok, slow ok, fast 2 ok"

    lines = log.read_text().splitlines()
    assert lines.count("start fast1") == 1 and lines.count("start fast2") == 1  # finished tools never ran again
    assert lines.count("start slow") == 2 and lines.count("done slow") == 1

    async with open_store(f"sqlite:///{db}") as store:
        final = await store.load("crash")
    assert isinstance(final[0], UserMessage) and isinstance(final[-1], AssistantMessage)
    calls = [m for m in final if isinstance(m, ToolCallMessage)]
    assert [(c.tool_call_id, c.status, c.content) for c in calls] == [
        ("a", ToolCallStatus.OK, "fast 1 ok"),
        ("b", ToolCallStatus.OK, "slow ok"),
        ("c", ToolCallStatus.OK, "fast 2 ok"),
    ]
    assert len(final) == 5 and len({c.batch_id for c in calls}) == 1
