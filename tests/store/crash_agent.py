"""A conversation run by test_crash.py in a subprocess: ``python crash_agent.py DB LOG MODE``.

Tools append "start NAME" / "done NAME" lines to LOG. ``slow`` hangs in the first process (the
parent kills it with SIGKILL), and returns at once in the resumed process.
"""

from __future__ import annotations

import asyncio
import sys

from tooloop.agent import Agent
from tooloop.messages import ModelResponse, ToolCall, ToolCallMessage
from tooloop.models.base import ModelRequest
from tooloop.testing import FunctionModel

DB, LOG, MODE = sys.argv[1], sys.argv[2], sys.argv[3]


def log(line: str) -> None:
    with open(LOG, "a") as f:
        f.write(line + "\n")
        f.flush()


async def fast(n: int) -> str:
    """Finishes at once."""
    log(f"start fast{n}")
    log(f"done fast{n}")
    return f"fast {n} ok"


async def slow() -> str:
    """Hangs in the first process."""
    log("start slow")
    if MODE == "first":
        await asyncio.sleep(3600)
    log("done slow")
    return "slow ok"


def script(request: ModelRequest) -> ModelResponse:
    calls = [m for m in request.messages if isinstance(m, ToolCallMessage)]
    if not calls:
        return ModelResponse(
            tool_calls=(ToolCall("a", "fast", {"n": 1}), ToolCall("b", "slow", {}), ToolCall("c", "fast", {"n": 2}))
        )
    return ModelResponse("all done: " + ", ".join(c.content for c in calls))


async def main() -> None:
    agent = Agent(FunctionModel(script), tools=[fast, slow], store=f"sqlite:///{DB}", session_id="crash")
    if MODE == "first":
        await agent.run("do the work")
    else:
        result = await agent.resume()
        print(result.transcript.final_text)


asyncio.run(main())
