"""Hooks watch each step and may stop the run, replace a response, or replace a tool's result."""

from __future__ import annotations

import asyncio

import pytest

from tooloop import (
    Agent,
    Hooks,
    LoopControl,
    ModelResponse,
    RunError,
    StepContext,
    StopReason,
    ToolCall,
    ToolCallStatus,
    tool,
)
from tooloop.testing import ScriptedModel

from ._support import assert_valid

ran: list[int] = []


@tool
def work(n: int) -> int:
    ran.append(n)
    return n * 2


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def _two_calls() -> ModelResponse:
    return ModelResponse("working", [ToolCall("a", "work", {"n": 1}), ToolCall("b", "work", {"n": 2})])


async def test_hooks_receive_step_context() -> None:
    responses: list[StepContext] = []
    befores: list[StepContext] = []
    afters: list[StepContext] = []

    def on_response(ctx: StepContext) -> None:
        responses.append(ctx)

    async def before(ctx: StepContext) -> None:
        befores.append(ctx)

    def after(ctx: StepContext) -> LoopControl:
        afters.append(ctx)
        return LoopControl.CONTINUE

    model = ScriptedModel([_two_calls(), "done"])
    hooks = Hooks(on_model_response=on_response, before_tool_call=before, after_tool_call=after)
    await Agent(model, tools=[work], hooks=hooks).run("go")

    assert [c.iteration for c in responses] == [1, 2]
    assert responses[0].request is model.requests[0]
    assert responses[0].response is not None and responses[0].response.text == "working"
    assert responses[1].response is not None and responses[1].response.text == "done"
    assert sorted(c.call.id for c in befores if c.call) == ["a", "b"]
    assert all(c.result is None for c in befores)
    assert {c.call.arguments["n"] for c in befores if c.call} == {1, 2}
    by_id = {c.call.id: c for c in afters if c.call}
    assert by_id["a"].result is not None and by_id["a"].result.result == 2
    assert by_id["b"].result is not None and by_id["b"].result.status is ToolCallStatus.OK
    assert len(responses[1].transcript) == 3  # user + two calls, before the answer is recorded


async def test_stop_from_on_model_response_ends_the_run_without_running_tools() -> None:
    model = ScriptedModel([_two_calls(), "never"])
    hooks = Hooks(on_model_response=lambda ctx: LoopControl.stop(StopReason.REFUSAL))
    result = await Agent(model, tools=[work], hooks=hooks).run("go")
    assert result.stop_reason is StopReason.REFUSAL
    assert ran == []
    assert [c.status for c in result.tool_calls] == [ToolCallStatus.CANCELLED] * 2
    assert len(model.requests) == 1
    assert_valid(result.transcript)


async def test_stop_from_before_tool_call() -> None:
    def before(ctx: StepContext) -> LoopControl | None:
        if ctx.call is not None and ctx.call.id == "b":
            return LoopControl.stop()
        return None

    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("b", "work", {"n": 2})]), "never"])
    result = await Agent(model, tools=[work], hooks=Hooks(before_tool_call=before)).run("go")
    assert result.stop_reason is StopReason.STOPPED_BY_HOOK
    assert ran == []
    assert result.tool_calls[0].status is ToolCallStatus.CANCELLED
    assert len(model.requests) == 1
    assert_valid(result.transcript)


async def test_stop_from_after_tool_call_keeps_the_result() -> None:
    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("a", "work", {"n": 1})]), "never"])
    hooks = Hooks(after_tool_call=lambda ctx: LoopControl.stop("end_turn"))
    result = await Agent(model, tools=[work], hooks=hooks).run("go")
    assert result.stop_reason is StopReason.END_TURN
    assert result.tool_calls[0].result == 2
    assert len(model.requests) == 1
    assert_valid(result.transcript)


async def test_override_replaces_the_model_response() -> None:
    def on_response(ctx: StepContext) -> LoopControl | None:
        if ctx.iteration == 1:
            return LoopControl.override(ModelResponse(tool_calls=[ToolCall("x", "work", {"n": 21})]))
        return LoopControl.override("replaced answer")

    model = ScriptedModel(["original 1", "original 2"])
    result = await Agent(model, tools=[work], hooks=Hooks(on_model_response=on_response)).run("go")
    assert ran == [21]
    assert result.text == "replaced answer"
    assert [m.kind for m in result.transcript] == ["user", "tool_call", "assistant"]


async def test_override_before_tool_call_skips_the_tool() -> None:
    hooks = Hooks(before_tool_call=lambda ctx: LoopControl.override(result={"cached": True}))
    model = ScriptedModel([_two_calls(), "done"])
    result = await Agent(model, tools=[work], hooks=hooks).run("go")
    assert ran == []
    assert [c.content for c in result.tool_calls] == ['{"cached": true}'] * 2
    assert result.usage.tool_calls == 0


async def test_override_after_tool_call_replaces_the_result() -> None:
    async def after(ctx: StepContext) -> LoopControl:
        assert ctx.result is not None
        return LoopControl.override(result=f"redacted {ctx.result.result}")

    model = ScriptedModel([_two_calls(), "done"])
    result = await Agent(model, tools=[work], hooks=Hooks(after_tool_call=after)).run("go")
    assert ran == [1, 2] or ran == [2, 1]
    assert [c.content for c in result.tool_calls] == ["redacted 2", "redacted 4"]
    assert model.requests[1].messages[-1].content == "redacted 4"  # type: ignore[union-attr]


async def test_hook_returning_garbage_fails_loudly() -> None:
    model = ScriptedModel(["hi"])
    hooks = Hooks(on_model_response=lambda ctx: "stop")  # type: ignore[arg-type,return-value]
    with pytest.raises(Exception, match="LoopControl"):
        await Agent(model, hooks=hooks).run("go")


async def test_override_without_a_response_from_on_model_response_is_a_type_error() -> None:
    model = ScriptedModel([_two_calls(), "never"])
    hooks = Hooks(on_model_response=lambda ctx: LoopControl.override())
    with pytest.raises(RunError, match="override\\(\\) without a response") as info:
        await Agent(model, tools=[work], hooks=hooks).run("go")
    assert isinstance(info.value.__cause__, TypeError)
    assert ran == []
    assert info.value.transcript is not None and [m.kind for m in info.value.transcript] == ["user"]


async def test_stop_from_before_tool_call_keeps_calls_still_in_their_hook_from_starting() -> None:
    first_decided = asyncio.Event()
    second_deciding = asyncio.Event()

    async def before(ctx: StepContext) -> LoopControl | None:
        assert ctx.call is not None
        if ctx.call.id == "a":
            await second_deciding.wait()
            first_decided.set()
            return LoopControl.stop()
        second_deciding.set()
        await first_decided.wait()  # "b" is still deciding when "a" stops the run
        return None

    model = ScriptedModel([_two_calls(), "never"])
    result = await Agent(model, tools=[work], hooks=Hooks(before_tool_call=before)).run("go")
    assert result.stop_reason is StopReason.STOPPED_BY_HOOK
    assert ran == []
    assert [c.status for c in result.tool_calls] == [ToolCallStatus.CANCELLED] * 2
    assert result.usage.tool_calls == 0
    assert len(model.requests) == 1
    assert_valid(result.transcript)


async def test_stop_from_after_tool_call_keeps_unstarted_calls_of_the_batch_from_starting() -> None:
    first_done = asyncio.Event()

    async def before(ctx: StepContext) -> None:
        assert ctx.call is not None
        if ctx.call.id == "b":
            await first_done.wait()  # "b" has not started when "a" finishes and stops the run

    def after(ctx: StepContext) -> LoopControl:
        first_done.set()
        return LoopControl.stop()

    model = ScriptedModel([_two_calls(), "never"])
    hooks = Hooks(before_tool_call=before, after_tool_call=after)
    result = await Agent(model, tools=[work], hooks=hooks).run("go")
    assert result.stop_reason is StopReason.STOPPED_BY_HOOK
    assert ran == [1]
    assert [c.status for c in result.tool_calls] == [ToolCallStatus.OK, ToolCallStatus.CANCELLED]
    assert result.tool_calls[0].result == 2
    assert result.usage.tool_calls == 1
    assert_valid(result.transcript)


async def test_stop_from_after_tool_call_keeps_a_later_sequential_call_from_starting() -> None:
    @tool(sequential=True)
    def record(n: int) -> int:
        ran.append(100 + n)
        return n

    response = ModelResponse(tool_calls=[ToolCall("a", "work", {"n": 1}), ToolCall("s", "record", {"n": 2})])
    model = ScriptedModel([response, "never"])
    hooks = Hooks(after_tool_call=lambda ctx: LoopControl.stop())
    result = await Agent(model, tools=[work, record], hooks=hooks).run("go")
    assert ran == [1]
    assert [c.status for c in result.tool_calls] == [ToolCallStatus.OK, ToolCallStatus.CANCELLED]
    assert result.stop_reason is StopReason.STOPPED_BY_HOOK
    assert_valid(result.transcript)
