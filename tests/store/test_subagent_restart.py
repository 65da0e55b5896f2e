"""Subagents survive restarts: a parent with two subagents in parallel, one waiting for approval, is
killed while the approval is pending, resumed with the decision in a new process (killed again in
the middle of the child's resume) and finished by a third: every finished call of the parent and
the children ran exactly once, every transcript is whole, and the cost rolled up into the parent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

from tests.core._support import assert_valid
from tooloop.messages import ToolCallStatus
from tooloop.store import open_store

SCRIPT = Path(__file__).with_name("subagent_worker.py")
SRC = Path(__file__).parents[2] / "src"


def spawn(db: Path, log: Path, stage: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{SCRIPT.parents[2]}"}
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(db), str(log), stage],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(process: subprocess.Popen[str], done: object, what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if done():  # type: ignore[operator]
            return
        assert process.poll() is None, process.communicate()
        time.sleep(0.02)
    process.kill()
    raise AssertionError(f"the worker never reached: {what}; stderr: {process.communicate()[1]}")


def lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


async def statuses(db: Path, session: str) -> list[ToolCallStatus]:
    async with open_store(f"sqlite:///{db}") as store:
        return [m.status for m in (await store.load(session)).tool_invocations]


async def test_two_subagents_one_awaiting_approval_survive_two_kills_and_run_every_call_once(tmp_path: Path) -> None:
    db, log = tmp_path / "s.db", tmp_path / "calls.log"
    pending = log.with_suffix(".pending.json")

    first = spawn(db, log, "first")
    wait_for(first, pending.exists, "the pending approval")
    assert first.stdout is not None
    stopped = json.loads(first.stdout.readline())
    first.kill()  # while the approval is pending
    first.communicate(timeout=10)
    assert stopped == {"stop": "approval_required", "cost": "0.121"}  # 0.001 + 2 x 0.01 + 0.1
    requests = json.loads(pending.read_text())
    assert [(r["tool_call_id"], r["tool_name"], r["arguments"]) for r in requests] == [
        ("pb/w2", "publish", {"text": "tides"})
    ]
    assert await statuses(db, "job") == [ToolCallStatus.OK, ToolCallStatus.PENDING]
    assert await statuses(db, "job.pb") == [ToolCallStatus.OK, ToolCallStatus.PENDING]

    second = spawn(db, log, "approve")
    wait_for(second, lambda: lines(log).count("model publisher") == 2, "the publisher's model after publish")
    second.kill()  # in the middle of the child's resume: publish ran, its answer is not in
    second.communicate(timeout=10)
    assert await statuses(db, "job.pb") == [ToolCallStatus.OK, ToolCallStatus.OK]

    third = spawn(db, log, "finish")
    out, err = third.communicate(timeout=60)
    assert third.returncode == 0, err
    result = json.loads(out)
    assert result["stop"] == "end_turn"
    assert result["text"] == ("research: notes on tides | publisher: draft of tides, published tides")
    assert Decimal(result["cost"]) == Decimal("0.101")  # the parent's answer and the publisher's

    ran = Counter(lines(log))
    assert {k: v for k, v in ran.items() if k.startswith("tool ")} == {
        "tool fetch:tides": 1,
        "tool draft:tides": 1,
        "tool publish:tides": 1,
    }
    # the researcher finished in the first process and was never asked again
    assert ran["model researcher"] == 2 and ran["model parent"] == 2

    async with open_store(f"sqlite:///{db}") as store:
        parent, research, publisher = [await store.load(s) for s in ("job", "job.pa", "job.pb")]
        kinds = [[type(m).__name__ for m in t] for t in (parent, research, publisher)]
        assert kinds == [
            ["UserMessage", "ToolCallMessage", "ToolCallMessage", "AssistantMessage"],
            ["UserMessage", "ToolCallMessage", "AssistantMessage"],
            ["UserMessage", "ToolCallMessage", "ToolCallMessage", "AssistantMessage"],
        ]
        for transcript in (parent, research, publisher):
            assert_valid(transcript)
        assert [m.result["session_id"] for m in parent.tool_invocations] == ["job.pa", "job.pb"]
        totals = await store.get_session("job")
        # the parent's stored totals hold both finished runs of it, children included
        assert totals.usage.cost == Decimal("0.222")
