"""The loop: ask the model, run the tools it asks for, send results back, until it answers."""

from __future__ import annotations

import asyncio

from tooloop import (
    Agent,
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    StopReason,
    SystemMessage,
    ThinkingPart,
    ToolCall,
    ToolCallMessage,
    Usage,
    UserMessage,
    tool,
)
from tooloop.testing import FunctionModel, ScriptedModel

from ._support import assert_valid


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_text_only_answer() -> None:
    model = ScriptedModel([ModelResponse("Hello!", usage=Usage(input_tokens=5, output_tokens=2))])
    result = await Agent(model, system="be nice").run("hi")
    assert result.text == "Hello!"
    assert result.stop_reason is StopReason.END_TURN
    assert list(result.transcript) == [UserMessage("hi"), AssistantMessage("Hello!")]
    assert result.usage == Usage(input_tokens=5, output_tokens=2, requests=1)
    (request,) = model.requests
    assert list(request.messages) == [SystemMessage("be nice"), UserMessage("hi")]


async def test_text_and_tool_calls_in_one_response_are_both_kept() -> None:
    model = ScriptedModel([ModelResponse("Let me add.", [ToolCall("c1", "add", {"a": 1, "b": 2})]), "It is 3."])
    result = await Agent(model, tools=[add]).run("1+2?")
    (call,) = result.tool_calls
    assert call.message == "Let me add."
    assert call.result == 3 and call.content == "3"
    assert result.text == "It is 3."
    # the second request carries the call with its text and result
    second = model.requests[1].messages
    assert second[-1] == call


async def test_multi_turn_until_no_tool_calls_with_results_in_model_order() -> None:
    seen: list[list[object]] = []

    def respond(request: ModelRequest) -> ModelResponse:
        seen.append(list(request.messages))
        turn = len(seen)
        if turn == 1:
            return ModelResponse(
                tool_calls=[
                    ToolCall("z", "add", '{"a": 10, "b": 1}'),
                    ToolCall("a", "add", {"a": 1, "b": 1}),
                    ToolCall("m", "add", {"a": 5, "b": 0}),
                ],
                usage=Usage(input_tokens=10, output_tokens=3),
            )
        if turn == 2:
            return ModelResponse(tool_calls=[ToolCall("q", "add", {"a": 2, "b": 2})], usage=Usage(7, 1))
        return ModelResponse("done", usage=Usage(4, 2))

    result = await Agent(FunctionModel(respond), tools=[add]).run("go")
    assert result.text == "done"
    assert len(seen) == 3
    second = seen[1]
    assert [m.tool_call_id for m in second if isinstance(m, ToolCallMessage)] == ["z", "a", "m"]
    assert [m.content for m in second if isinstance(m, ToolCallMessage)] == ["11", "2", "5"]
    third = seen[2]
    assert [m.tool_call_id for m in third if isinstance(m, ToolCallMessage)] == ["z", "a", "m", "q"]
    assert result.usage == Usage(input_tokens=21, output_tokens=6, requests=3, tool_calls=4)
    assert result.transcript.iterations == 3
    assert_valid(result.transcript)


async def test_request_advertises_the_tools() -> None:
    model = ScriptedModel(["ok"])
    await Agent(model, tools=[add]).run("hi")
    (definition,) = model.requests[0].tools
    assert definition.name == "add"
    assert definition.description == "Add two integers."
    assert definition.parameters["required"] == ["a", "b"]


async def test_continuation_with_history() -> None:
    model = ScriptedModel([ModelResponse(tool_calls=[ToolCall("c1", "add", {"a": 1, "b": 2})]), "3", "again 3"])
    agent = Agent(model, tools=[add])
    first = await agent.run("1+2?")
    second = await agent.run("and again?", history=first.transcript)
    assert second.text == "again 3"
    assert list(second.transcript[: len(first.transcript)]) == list(first.transcript)
    assert list(second.new_messages) == [UserMessage("and again?"), AssistantMessage("again 3")]
    assert second.start == len(first.transcript)
    assert second.tool_calls == ()  # only this run's calls
    assert list(model.requests[2].messages)[:-1] == list(first.transcript)
    assert second.usage.requests == 1


async def test_run_turns_sums_usage_and_spans_all_turns() -> None:
    model = ScriptedModel([ModelResponse("one", usage=Usage(1, 1)), ModelResponse("two", usage=Usage(2, 2))])
    result = await Agent(model).run_turns(["a", "b"])
    assert result.text == "two"
    assert [m.kind for m in result.new_messages] == ["user", "assistant", "user", "assistant"]
    assert result.usage == Usage(3, 3, requests=2)
    assert [m.text for m in model.requests[1].messages if isinstance(m, UserMessage)] == ["a", "b"]


async def test_answer_cut_off_or_refused_says_so_in_the_stop_reason() -> None:
    cut = await Agent(ScriptedModel([ModelResponse("half an ans", stop_reason=StopReason.MAX_TOKENS)])).run("go")
    assert cut.stop_reason is StopReason.MAX_TOKENS
    assert cut.text == "half an ans"
    refused = await Agent(ScriptedModel([ModelResponse(refusal="I can't help with that")])).run("go")
    assert refused.stop_reason is StopReason.REFUSAL
    assert refused.final_message is not None and refused.final_message.refusal == "I can't help with that"


async def test_thinking_and_provider_data_stay_on_the_first_call_of_a_batch() -> None:
    response = ModelResponse(
        "",
        [ToolCall("a", "add", {"a": 1, "b": 1}, provider_data={"sig": "A"}), ToolCall("b", "add", {"a": 2, "b": 2})],
        thinking=(ThinkingPart("let me think", signature="s1"),),
        provider_data={"response_id": "r1"},
    )
    result = await Agent(ScriptedModel([response, "ok"]), tools=[add]).run("go")
    first, second = result.tool_calls
    assert first.thinking == (ThinkingPart("let me think", signature="s1"),)
    assert first.provider_data == {"response_id": "r1", "sig": "A"}
    assert second.thinking == () and second.provider_data == {}


async def test_one_agent_serves_concurrent_runs() -> None:
    def echo_prompt(request: ModelRequest) -> str:
        user = [m for m in request.messages if isinstance(m, UserMessage)][-1]
        return f"echo {user.text}"

    agent = Agent(FunctionModel(echo_prompt))
    results = await asyncio.gather(*(agent.run(str(i)) for i in range(5)))
    assert [r.text for r in results] == [f"echo {i}" for i in range(5)]
