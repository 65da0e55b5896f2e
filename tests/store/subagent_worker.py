"""A parent with two subagents, run by test_subagent_restart.py in subprocesses:
``python subagent_worker.py DB LOG STAGE`` with STAGE ``first``, ``approve`` or ``finish``.

Every tool and every model request appends a line to LOG. ``first`` runs until the publisher's
``publish`` waits for approval, writes the pending requests to ``LOG.pending.json`` and waits to
be killed. ``approve`` approves them and resumes; the publisher's model then hangs (the process is
killed in the middle of the child's resume). ``finish`` resumes once more and prints the result.
"""

from __future__ import annotations

import asyncio
import json
import sys
from decimal import Decimal
from pathlib import Path

from tooloop import Agent, ApprovalRequest, ModelRequest, ModelResponse, ToolCall, ToolCallMessage, Usage, tool
from tooloop.testing import FunctionModel

DB, LOG, STAGE = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
PENDING = LOG.with_suffix(".pending.json")


def log(line: str) -> None:
    with LOG.open("a") as f:
        f.write(line + "\n")


def priced(response: ModelResponse, cost: str) -> ModelResponse:
    return ModelResponse(response.text, response.tool_calls, usage=Usage(100, 10, cost=Decimal(cost)))


def calls(request: ModelRequest) -> list[ToolCallMessage]:
    return [m for m in request.messages if isinstance(m, ToolCallMessage)]


@tool
def fetch(topic: str) -> str:
    """Fetch notes on a topic."""
    log(f"tool fetch:{topic}")
    return f"notes on {topic}"


@tool
def draft(text: str) -> str:
    """Draft a post."""
    log(f"tool draft:{text}")
    return f"draft of {text}"


@tool(requires_approval=True)
def publish(text: str) -> str:
    """Publish a post (a person approves it first)."""
    log(f"tool publish:{text}")
    return f"published {text}"


def researcher(request: ModelRequest) -> ModelResponse:
    log("model researcher")
    done = calls(request)
    if not done:
        return priced(ModelResponse(tool_calls=(ToolCall("r1", "fetch", {"topic": "tides"}),)), "0.01")
    return priced(ModelResponse(f"research: {done[0].content}"), "0.01")


async def publisher(request: ModelRequest) -> ModelResponse:
    log("model publisher")
    done = calls(request)
    if not done:
        batch = (ToolCall("w1", "draft", {"text": "tides"}), ToolCall("w2", "publish", {"text": "tides"}))
        return priced(ModelResponse(tool_calls=batch), "0.1")
    if STAGE == "approve":
        await asyncio.sleep(3600)  # killed here: the child is in the middle of its resume
    return priced(ModelResponse("publisher: " + ", ".join(c.content for c in done)), "0.1")


def parent_model(request: ModelRequest) -> ModelResponse:
    log("model parent")
    done = calls(request)
    if not done:
        batch = (
            ToolCall("pa", "research", {"prompt": "Research tides"}),
            ToolCall("pb", "publisher", {"prompt": "Publish about tides"}),
        )
        return priced(ModelResponse(tool_calls=batch), "0.001")
    return priced(ModelResponse(" | ".join(c.content for c in done)), "0.001")


def agent() -> Agent:
    research = Agent(FunctionModel(researcher), tools=[fetch]).as_tool(name="research", description="Research.")
    publishing = Agent(FunctionModel(publisher), tools=[draft, publish]).as_tool(
        name="publisher", description="Write and publish."
    )
    return Agent(FunctionModel(parent_model), tools=[research, publishing], store=f"sqlite:///{DB}", session_id="job")


async def main() -> None:
    parent = agent()
    if STAGE == "first":
        result = await parent.run("Research tides and publish a post")
        PENDING.write_text(json.dumps([r.to_dict() for r in result.pending_approvals]))
        print(json.dumps({"stop": result.stop_reason.value, "cost": str(result.usage.cost)}), flush=True)
        await asyncio.sleep(3600)  # a worker waiting for a person; killed meanwhile
    elif STAGE == "approve":
        requests = [ApprovalRequest.from_dict(r) for r in json.loads(PENDING.read_text())]
        await parent.resume(approvals=[r.approve() for r in requests])
    else:
        result = await parent.resume()
        usage = result.usage
        print(
            json.dumps(
                {"stop": result.stop_reason.value, "text": result.transcript.final_text, "cost": str(usage.cost)}
            )
        )


asyncio.run(main())
