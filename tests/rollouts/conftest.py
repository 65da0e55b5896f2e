"""A scripted "model" for the token server, and the fixtures the rollout tests share."""

from __future__ import annotations

from array import array
from collections.abc import AsyncIterator
from typing import Any, Literal

import pytest

from tooloop import Agent
from tooloop.messages import AssistantMessage, Message, ToolCallMessage
from tooloop.models import ModelSettings, get_model
from tooloop.testing.token_server import Sample, TokenServer
from tooloop.transport.perloop import close_loop_clients


def lookup_policy(messages: list[dict[str, Any]], number: int) -> Sample:
    """Look the user's text up (thinking first), then answer with what the tool said."""
    last = messages[-1]
    if last["role"] == "user":
        return Sample(text="let me look", calls=(("lookup", {"key": last["content"]}),), thinking="the user asks")
    return Sample(text=f"answer: {last['content']}")


def two_calls_policy(messages: list[dict[str, Any]], number: int) -> Sample:
    """Two calls in one turn, then an answer."""
    if messages[-1]["role"] == "user":
        return Sample(calls=(("lookup", {"key": "a"}), ("lookup", {"key": "b"})))
    return Sample(text="done")


def lookup(key: str) -> str:
    """Look a key up."""
    return key.upper()


def agent_for(
    server: TokenServer, *, stream: bool = False, capture: bool | Literal["ids"] = True, **options: Any
) -> Agent:
    model = get_model(
        "vllm:toy",
        base_url=server.url,
        capture_tokens=capture,
        settings=ModelSettings(stream=stream, temperature=1.0, seed=7),
        **options,
    )
    return Agent(model, tools=[lookup])


def responses(messages: list[Message] | Any) -> list[AssistantMessage | ToolCallMessage]:
    """The messages that record a model response (answers, and the first call of each batch)."""
    out: list[AssistantMessage | ToolCallMessage] = []
    batch = None
    for message in messages:
        if isinstance(message, AssistantMessage):
            out.append(message)
            batch = None
        elif isinstance(message, ToolCallMessage) and message.batch_id != batch:
            out.append(message)
            batch = message.batch_id
    return out


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    await close_loop_clients()


def two_rounds_policy(messages: list[dict[str, Any]], number: int) -> Sample:
    """Look up twice (one call per turn), then answer: three responses."""
    tools = [m for m in messages if m["role"] == "tool"]
    if len(tools) < 2:
        return Sample(text=f"step {len(tools)}", calls=(("lookup", {"key": f"k{len(tools)}"}),))
    return Sample(text="done: " + ",".join(m["content"] for m in tools))


def f32(values: list[Any]) -> list[Any]:
    """``values`` as tooloop keeps logprobs: 32-bit floats (the test server's are decimals, which a
    32-bit float only approximates; a real server's are 32-bit floats already), None kept."""
    return [None if v is None else array("f", [v])[0] for v in values]


def expected_branch(sampled: list[tuple[list[int], list[int], list[float]]]) -> tuple[list[int], list[Any], list[int]]:
    """The ids, logprobs and mask one branch over ``sampled`` must have, built from the server's own record."""
    last_prompt, last_completion, _ = sampled[-1]
    ids = last_prompt + last_completion
    logprobs: list[Any] = [None] * len(ids)
    mask = [0] * len(ids)
    for prompt, completion, values in sampled:
        assert ids[: len(prompt) + len(completion)] == prompt + completion  # the template appends
        for offset, value in enumerate(values):
            logprobs[len(prompt) + offset] = value
            mask[len(prompt) + offset] = 1
    return ids, f32(logprobs), mask
