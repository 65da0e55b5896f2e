"""Limits stop a run with a reason and lose nothing; only ``timeout`` raises."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from tooloop import (
    Agent,
    Limits,
    ModelRequest,
    ModelResponse,
    RunTimeoutError,
    StopReason,
    ToolCall,
    ToolCallStatus,
    Usage,
    tool,
)
from tooloop.testing import FunctionModel, ScriptedModel

from ._support import assert_valid

runs = 0


@tool
def ping(n: int = 0) -> str:
    global runs
    runs += 1
    return "pong"


@pytest.fixture(autouse=True)
def _reset() -> None:
    global runs
    runs = 0


def _always_calls(request: ModelRequest) -> ModelResponse:
    if request.tool_choice == "none":
        return ModelResponse("Here is what I have so far.")
    n = len(request.messages)
    return ModelResponse(tool_calls=[ToolCall(f"c{n}", "ping", {"n": n})], usage=Usage(10, 5))


async def test_max_turns_stops_without_exception() -> None:
    model = FunctionModel(_always_calls)
    result = await Agent(model, tools=[ping], limits=Limits(max_turns=3)).run("go")
    assert result.stop_reason is StopReason.MAX_TURN_REQUESTS
    assert len(model.requests) == 3
    assert len(result.tool_calls) == 3 and runs == 3
    assert result.final_message is None
    assert_valid(result.transcript)


async def test_final_answer_on_limit_makes_one_more_request_without_tools() -> None:
    model = FunctionModel(_always_calls)
    agent = Agent(model, tools=[ping], limits=Limits(max_turns=2, final_answer_on_limit=True))
    result = await agent.run("go")
    assert result.stop_reason is StopReason.MAX_TURN_REQUESTS
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "none"]
    assert result.text == "Here is what I have so far."
    assert result.usage.requests == 3
    assert_valid(result.transcript)


async def test_final_answer_that_still_calls_tools_is_not_run() -> None:
    model = FunctionModel(lambda r: ModelResponse(tool_calls=[ToolCall(f"c{len(r.messages)}", "ping", {})]))
    agent = Agent(model, tools=[ping], limits=Limits(max_turns=1, final_answer_on_limit=True))
    result = await agent.run("go")
    assert runs == 1
    assert [c.status for c in result.tool_calls] == [ToolCallStatus.OK, ToolCallStatus.CANCELLED]
    assert result.stop_reason is StopReason.MAX_TURN_REQUESTS
    assert_valid(result.transcript)


async def test_calls_of_a_response_cut_off_by_max_tokens_are_not_run() -> None:
    cut = ModelResponse(
        "partial", [ToolCall("a", "ping", {}), ToolCall("b", "ping", '{"n": 1')], stop_reason=StopReason.MAX_TOKENS
    )
    model = ScriptedModel([cut])
    result = await Agent(model, tools=[ping]).run("go")
    assert runs == 0
    assert result.stop_reason is StopReason.MAX_TOKENS
    first, second = result.tool_calls
    assert first.status is ToolCallStatus.CANCELLED
    assert "output token limit" in first.content
    assert second.is_error  # unparseable arguments are an error either way
    assert len(model.requests) == 1
    assert_valid(result.transcript)


async def test_max_tool_calls_per_turn() -> None:
    calls = [ToolCall(f"c{i}", "ping", {"n": i}) for i in range(5)]
    model = ScriptedModel([ModelResponse(tool_calls=calls), "ok"])
    result = await Agent(model, tools=[ping], limits=Limits(max_tool_calls_per_turn=2)).run("go")
    assert runs == 2
    statuses = [c.status for c in result.tool_calls]
    assert statuses == [ToolCallStatus.OK] * 2 + [ToolCallStatus.ERROR] * 3
    assert "at most 2 tool calls run per response" in result.tool_calls[2].content
    assert result.text == "ok"
    assert_valid(result.transcript)


async def test_timeout_raises_with_the_transcript() -> None:
    @tool
    async def slow() -> str:
        await asyncio.Event().wait()
        return ""

    model = ScriptedModel([ModelResponse("working", [ToolCall("s", "slow", {})])])
    agent = Agent(model, tools=[slow], limits=Limits(timeout=0.1))
    with pytest.raises(RunTimeoutError) as caught:
        await asyncio.wait_for(agent.run("go"), 10)
    transcript = caught.value.transcript
    assert transcript is not None
    assert [m.kind for m in transcript] == ["user", "tool_call"]
    assert transcript[1].status is ToolCallStatus.CANCELLED  # type: ignore[union-attr]
    assert_valid(transcript)


async def test_max_total_tokens() -> None:
    model = FunctionModel(_always_calls)
    result = await Agent(model, tools=[ping], limits=Limits(max_total_tokens=20)).run("go")
    # each request costs 15 tokens: after the second the budget is spent
    assert result.stop_reason is StopReason.TOKEN_BUDGET
    assert result.usage.total_tokens == 30
    assert len(model.requests) == 2
    last = result.tool_calls[-1]
    assert last.status is ToolCallStatus.CANCELLED
    assert "token budget" in last.content
    assert runs == 1
    assert_valid(result.transcript)


async def test_max_tool_result_chars_truncates_with_a_marker() -> None:
    @tool
    def big() -> str:
        return "x" * 1000

    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("b", "big", {})]), "ok"])
    result = await Agent(model, tools=[big], limits=Limits(max_tool_result_chars=100)).run("go")
    (call,) = result.tool_calls
    assert call.content.startswith("x" * 100 + "\n")
    assert "truncated 900 characters" in call.content
    assert call.result == "x" * 1000


def test_invalid_limits_are_refused() -> None:
    for bad in ({"max_turns": 0}, {"max_tool_calls_per_turn": 0}, {"output_retries": -1}):
        with pytest.raises(ValueError):
            Limits(**bad)  # type: ignore[arg-type]


async def test_limits_are_per_run_not_per_agent() -> None:
    counter = itertools.count()
    model = FunctionModel(lambda r: "a" if next(counter) % 2 else ModelResponse(tool_calls=[ToolCall("x", "ping", {})]))
    agent = Agent(model, tools=[ping], limits=Limits(max_turns=2))
    for _ in range(3):
        result = await agent.run("go")
        assert result.stop_reason is StopReason.END_TURN
