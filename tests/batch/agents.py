"""Agents the batch tests run, importable by worker processes (``tests.batch.agents:...``)."""

from __future__ import annotations

import asyncio
import os

from tooloop import Agent, ModelRequest, ModelResponse, ToolCall, ToolCallMessage, UserMessage, get_model, tool
from tooloop.testing import FunctionModel


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return f"value-of-{key}"


def server_agent() -> Agent:
    """The real OpenAI-compatible adapter against the rollout server named by ``ROLLOUT_URL``."""
    model = get_model("openai-compatible:rollout", base_url=os.environ["ROLLOUT_URL"], max_retries=0)
    return Agent(model, tools=[lookup])


async def _offline(request: ModelRequest) -> ModelResponse:
    """Ask for ``lookup`` once, then answer with its result (a tiny sleep so conversations overlap)."""
    await asyncio.sleep(0.001)
    results = [m for m in request.messages if isinstance(m, ToolCallMessage)]
    if results:
        return ModelResponse(f"answer: {results[-1].content}")
    prompt = next(m for m in request.messages if isinstance(m, UserMessage)).text
    return ModelResponse(tool_calls=[ToolCall("c1", "lookup", {"key": prompt})])


def offline_agent() -> Agent:
    """The same conversation on a :class:`FunctionModel` (no HTTP), for the big kill test."""
    return Agent(FunctionModel(_offline, chunk_size=1000), tools=[lookup])


def agent_for_server(url: str) -> Agent:
    """The real adapter against one of several rollout servers (Ray's sticky choice)."""
    return Agent(get_model("openai-compatible:rollout", base_url=url, max_retries=0), tools=[lookup])
