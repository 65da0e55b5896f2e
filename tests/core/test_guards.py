"""Runaway guards: a run that repeats itself stops with its own reason, and nothing is lost."""

from __future__ import annotations

import pytest

from tooloop import Agent, ArgumentTypeError, ArgumentValueError, Limits, ModelResponse, StopReason, ToolCall, tool
from tooloop.messages import ToolCallStatus
from tooloop.testing import FunctionModel, ScriptedModel

from ._support import assert_valid

calls: list[str] = []


@tool
def lookup(key: str) -> str:
    calls.append(key)
    return f"value of {key}"


@tool
def broken(path: str) -> str:
    raise OSError(f"no such file: {path}")


@pytest.fixture(autouse=True)
def _reset() -> None:
    calls.clear()


def _same_call_forever(request: object) -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(f"c{len(calls)}", "lookup", '{"key": "a"}')])


async def test_the_same_call_is_not_run_more_than_max_repeats_times() -> None:
    result = await Agent(FunctionModel(_same_call_forever), tools=[lookup], limits=Limits(max_repeats=3)).run("go")
    assert result.stop_reason is StopReason.REPEATED_CALL
    assert calls == ["a", "a", "a"]
    last = result.tool_calls[-1]
    assert last.status is ToolCallStatus.CANCELLED
    assert "lookup was already called 3 times" in last.content and "max_repeats=3" in last.content
    assert_valid(result.transcript)


async def test_the_same_arguments_written_differently_are_one_call() -> None:
    spellings = iter(['{"key": "a"}', '{ "key" : "a" }', {"key": "a"}])

    def model(request: object) -> ModelResponse | str:
        spelled = next(spellings, None)
        return "done" if spelled is None else ModelResponse(tool_calls=[ToolCall(f"c{len(calls)}", "lookup", spelled)])

    result = await Agent(FunctionModel(model), tools=[lookup], limits=Limits(max_repeats=2)).run("go")
    assert (result.stop_reason, calls) == (StopReason.REPEATED_CALL, ["a", "a"])


async def test_calls_of_earlier_batches_count_when_a_batch_goes_over_the_bound() -> None:
    # five calls in three batches, the repeated one spelled three ways: the third batch is refused whole
    batches = [
        [ToolCall("c1", "lookup", '{"key": "a"}'), ToolCall("c2", "lookup", '{"key": "b"}')],
        [ToolCall("c3", "lookup", {"key": "a"}), ToolCall("c4", "lookup", '{"key": "c"}')],
        [ToolCall("c5", "lookup", '{"key": "d"}'), ToolCall("c6", "lookup", '{ "key":"a" }')],
    ]
    script = [ModelResponse(tool_calls=batch) for batch in batches]
    result = await Agent(ScriptedModel([*script, "done"]), tools=[lookup], limits=Limits(max_repeats=2)).run("go")
    assert (result.stop_reason, sorted(calls)) == (StopReason.REPEATED_CALL, ["a", "a", "b", "c"])
    assert [m.status for m in result.tool_calls[-2:]] == [ToolCallStatus.CANCELLED] * 2
    assert "lookup was already called 2 times" in result.tool_calls[-1].content


async def test_different_arguments_are_different_calls() -> None:
    script = [ModelResponse(tool_calls=[ToolCall(f"c{i}", "lookup", {"key": str(i)})]) for i in range(6)]
    result = await Agent(ScriptedModel([*script, "done"]), tools=[lookup], limits=Limits(max_repeats=1)).run("go")
    assert (result.stop_reason, result.text, len(calls)) == (StopReason.END_TURN, "done", 6)


async def test_max_repeats_none_lets_the_turn_limit_stop_the_run() -> None:
    limits = Limits(max_repeats=None, max_turns=12)
    result = await Agent(FunctionModel(_same_call_forever), tools=[lookup], limits=limits).run("go")
    assert (result.stop_reason, len(calls)) == (StopReason.MAX_TURN_REQUESTS, 12)


async def test_the_default_bound_stops_a_call_repeated_forever() -> None:
    result = await Agent(FunctionModel(_same_call_forever), tools=[lookup], limits=Limits(max_turns=100)).run("go")
    assert (result.stop_reason, len(calls)) == (StopReason.REPEATED_CALL, Limits().max_repeats)


async def test_the_same_error_turn_after_turn_stops_the_run() -> None:
    attempt = 0

    @tool
    def broken(path: str, attempt: int = 0) -> str:
        raise OSError(f"no such file: {path}")

    def model_calls(request: object) -> ModelResponse:
        nonlocal attempt
        attempt += 1
        return ModelResponse(tool_calls=[ToolCall(f"c{attempt}", "broken", {"path": "/etc/x", "attempt": attempt})])

    result = await Agent(FunctionModel(model_calls), tools=[broken], limits=Limits(max_repeated_errors=4)).run("go")
    assert result.stop_reason is StopReason.REPEATED_ERROR
    assert attempt == 4
    assert [c.status for c in result.tool_calls] == [ToolCallStatus.ERROR] * 4  # every outcome kept
    assert_valid(result.transcript)


async def test_a_success_between_errors_starts_the_count_again() -> None:
    def step(i: int) -> ModelResponse:
        if i % 3 == 2:
            return ModelResponse(tool_calls=[ToolCall(f"ok{i}", "lookup", {"key": str(i)})])
        return ModelResponse(tool_calls=[ToolCall(f"b{i}", "broken", {"path": "/x"})])

    script = [step(i) for i in range(9)]
    limits = Limits(max_repeated_errors=3, max_repeats=None)
    result = await Agent(ScriptedModel([*script, "gave up"]), tools=[broken, lookup], limits=limits).run("go")
    assert (result.stop_reason, result.text) == (StopReason.END_TURN, "gave up")


async def test_different_errors_in_a_row_are_not_a_repeat() -> None:
    script = [ModelResponse(tool_calls=[ToolCall(f"b{i}", "broken", {"path": f"/x{i}"})]) for i in range(5)]
    result = await Agent(ScriptedModel([*script, "fine"]), tools=[broken], limits=Limits(max_repeated_errors=2)).run(
        "go"
    )
    assert result.stop_reason is StopReason.END_TURN


async def test_empty_answers_the_loop_goes_on_after_are_bounded() -> None:
    paused = ModelResponse("", stop_reason=StopReason.PAUSE_TURN)
    model = FunctionModel(lambda request: paused)
    result = await Agent(model, limits=Limits(max_empty_responses=2, max_turns=50)).run("go")
    assert result.stop_reason is StopReason.EMPTY_RESPONSE
    assert len(model.requests) == 3


async def test_a_paused_turn_with_text_is_not_empty() -> None:
    script = [ModelResponse("working", stop_reason=StopReason.PAUSE_TURN)] * 4
    result = await Agent(ScriptedModel([*script, "done"]), limits=Limits(max_empty_responses=0)).run("go")
    assert (result.stop_reason, result.text) == (StopReason.END_TURN, "done")


async def test_a_tool_call_cut_off_half_way_is_never_run() -> None:
    # the server says the response asks for tools, but the arguments stop half way
    cut = ModelResponse(tool_calls=[ToolCall("c1", "lookup", '{"key": "abc')], stop_reason=StopReason.TOOL_USE)
    result = await Agent(ScriptedModel([cut]), tools=[lookup]).run("go")
    assert result.stop_reason is StopReason.MAX_TOKENS
    assert calls == []
    (message,) = result.tool_calls
    assert message.status is ToolCallStatus.CANCELLED and "output token limit" in message.content


async def test_a_cut_off_call_is_asked_again_once_with_twice_the_max_tokens() -> None:
    from tooloop.models.base import ModelSettings

    cut = ModelResponse(tool_calls=[ToolCall("c1", "lookup", '{"ke')], stop_reason=StopReason.MAX_TOKENS)
    whole = ModelResponse(tool_calls=[ToolCall("c2", "lookup", '{"key": "abc"}')])
    model = ScriptedModel([cut, whole, "done"])
    result = await Agent(model, tools=[lookup], settings=ModelSettings(max_tokens=100)).run("go")
    assert (result.stop_reason, result.text, calls) == (StopReason.END_TURN, "done", ["abc"])
    assert [r.settings.max_tokens for r in model.requests] == [100, 200, 100]
    assert [m.tool_call_id for m in result.tool_calls] == ["c2"]  # the cut response left nothing behind
    assert result.usage.requests == 3


async def test_a_second_cut_off_stops_the_run() -> None:
    from tooloop.models.base import ModelSettings

    cut = ModelResponse(tool_calls=[ToolCall("c1", "lookup", '{"ke')], stop_reason=StopReason.MAX_TOKENS)
    model = ScriptedModel([cut, cut])
    result = await Agent(model, tools=[lookup], settings=ModelSettings(max_tokens=100)).run("go")
    assert result.stop_reason is StopReason.MAX_TOKENS and calls == []
    assert len(model.requests) == 2


async def test_no_retry_without_a_max_tokens_of_the_run_or_when_turned_off() -> None:
    from tooloop.models.base import ModelSettings

    cut = ModelResponse(tool_calls=[ToolCall("c1", "lookup", '{"ke')], stop_reason=StopReason.MAX_TOKENS)
    for settings, limits in ((None, Limits()), (ModelSettings(max_tokens=50), Limits(retry_cut_calls=False))):
        model = ScriptedModel([cut, "unused"])
        result = await Agent(model, tools=[lookup], settings=settings, limits=limits).run("go")
        assert result.stop_reason is StopReason.MAX_TOKENS and len(model.requests) == 1


def test_bad_guard_limits_are_refused_where_given() -> None:
    with pytest.raises(ArgumentValueError, match="max_repeats"):
        Limits(max_repeats=0)
    with pytest.raises(ArgumentTypeError, match="max_repeated_errors"):
        Limits(max_repeated_errors="3")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="retry_cut_calls"):
        Limits(retry_cut_calls=1)  # type: ignore[arg-type]
