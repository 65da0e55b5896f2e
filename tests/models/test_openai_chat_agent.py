"""End to end: ``tooloop.Agent`` on the Chat Completions adapter, against the scripted server.

The server asks for a tool call, checks that the next request carries the call and its result
exactly, then answers with text. ``run()`` makes plain requests and ``stream()`` streamed ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.models.openai_wire import (
    call_args,
    call_start,
    chunk,
    completion,
    plain,
    stream,
    tool_call,
    usage,
    usage_chunk,
)
from tests.support.wire import Recorded, Reply, WireServer, json_reply
from tooloop import Agent, RunFinished, StopReason, TextDelta
from tooloop.models.openai_chat import OpenAIChatModel

Make = Callable[..., OpenAIChatModel]


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"18°C and cloudy in {city}"


def first_turn(mode: str) -> Reply:
    if mode == "stream":
        return stream(
            chunk({"role": "assistant", "content": "Checking. "}),
            chunk({"tool_calls": [call_start(0, "call_w", "get_weather")]}),
            chunk({"tool_calls": [call_args(0, '{"city": "Paris"}')]}),
            chunk({}, "tool_calls"),
            usage_chunk(usage(40, 10)),
        )
    return plain(
        completion(
            {"content": "Checking. ", "tool_calls": [tool_call("call_w", "get_weather", '{"city": "Paris"}')]},
            "tool_calls",
            usage(40, 10),
        )
    )


def second_turn(mode: str, problems: list[str]) -> Callable[[Recorded], Reply]:
    def answer(recorded: Recorded) -> Reply:
        messages: list[dict[str, Any]] = recorded.json["messages"]
        expected_tail = [
            {
                "role": "assistant",
                "content": "Checking. ",
                "tool_calls": [
                    {
                        "id": "call_w",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_w", "content": "18°C and cloudy in Paris"},
        ]
        if messages[-2:] != expected_tail:
            problems.append(f"unexpected tool turn: {messages[-2:]}")
            return json_reply({"error": {"message": "bad tool turn", "type": "invalid_request_error"}}, 400)
        if mode == "stream":
            return stream(
                chunk({"content": "It is 18°C "}),
                chunk({"content": "in Paris."}),
                chunk({}, "stop"),
                usage_chunk(usage(70, 8)),
            )
        return plain(completion({"content": "It is 18°C in Paris."}, "stop", usage(70, 8)))

    return answer


@pytest.mark.parametrize("mode", ["stream", "plain"])
async def test_agent_runs_a_tool_and_answers(wire: WireServer, make_model: Make, mode: str) -> None:
    problems: list[str] = []
    wire.queue(first_turn(mode), second_turn(mode, problems))
    agent = Agent(make_model(), system="Be brief.", tools=[get_weather])

    if mode == "plain":
        result = await agent.run("Weather in Paris?")
    else:
        deltas: list[str] = []
        finished = None
        async with agent.stream("Weather in Paris?") as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    deltas.append(event.text)
                elif isinstance(event, RunFinished):
                    finished = event.result
        assert finished is not None
        result = finished
        assert "".join(deltas) == "Checking. It is 18°C in Paris."

    assert problems == []
    assert result.text == "It is 18°C in Paris."
    assert result.stop_reason is StopReason.END_TURN
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.requests) == (110, 18, 2)
    first = wire.requests[0].json
    assert first["messages"][:2] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert first["tools"][0]["function"]["name"] == "get_weather"
    assert ("stream" in first) is (mode == "stream")
