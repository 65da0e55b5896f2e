"""A run holding a session's lease, for test_lease.py: ``python lease_owner.py URL LOG``.

It asks for one ``slow`` call, then answers. ``slow`` writes "start" to LOG and runs until the
parent creates LOG.go, so the parent can SIGSTOP the process mid-tool and SIGCONT it after
another worker took the session over.
The run's end (its answer or its error's type) is written to LOG as "end ...".
"""

from __future__ import annotations

import asyncio
import os
import sys

from tooloop import Agent, ModelRequest, ModelResponse, ToolCall, ToolCallMessage
from tooloop.store import SessionLease
from tooloop.testing import FunctionModel

URL, LOG = sys.argv[1], sys.argv[2]


def log(line: str) -> None:
    with open(LOG, "a") as f:
        f.write(line + "\n")


def released() -> bool:
    return os.path.exists(LOG + ".go")


async def slow() -> str:
    """Runs until the parent lets it finish (it creates LOG.go)."""
    log("start")
    while not released():
        await asyncio.sleep(0.02)
    return "owner's outcome"


def script(request: ModelRequest) -> ModelResponse:
    if not any(isinstance(m, ToolCallMessage) for m in request.messages):
        return ModelResponse(tool_calls=[ToolCall("c1", "slow", {})])
    return ModelResponse("owner's answer")


async def main() -> None:
    agent = Agent(FunctionModel(script), tools=[slow], store=URL, lease=SessionLease(ttl=1.0))
    try:
        result = await agent.run("do it", session_id="s")
        log(f"end {result.text}")
    except Exception as exc:
        log(f"end {type(exc).__name__}")


asyncio.run(main())
