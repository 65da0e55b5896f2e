"""What OpenAI-compatible servers (Ollama, vLLM, llama.cpp, proxies) send differently, and how it is read."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.models.openai_wire import call_args, call_start, chunk, completion, plain, stream, usage, usage_chunk
from tests.support.wire import WireServer
from tooloop.events import ModelEvent, ToolCallDelta
from tooloop.messages import StopReason, ToolCall, Usage, UserMessage
from tooloop.models import ModelRequest, ToolDefinition
from tooloop.models.openai_chat import OpenAIChatModel

WEATHER = ToolDefinition("get_weather", "Weather.", {"type": "object", "properties": {"city": {"type": "string"}}})
REQUEST = ModelRequest([UserMessage("Weather in Paris and Rome?")], (WEATHER,))
GENERATED = re.compile(r"^call_[0-9a-f]{32}$")

Make = Callable[..., OpenAIChatModel]


async def streamed(model: OpenAIChatModel) -> tuple[Any, list[ModelEvent]]:
    events: list[ModelEvent] = []
    return await model.respond(REQUEST, events.append), events


async def test_ollama_two_calls_at_index_zero(wire: WireServer, make_model: Make) -> None:
    # Ollama sends each call whole, every one at index 0, and older versions finish with "stop".
    wire.queue(
        stream(
            chunk(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [call_start(0, "call_p", "get_weather", '{"city":"Paris"}')],
                }
            ),
            chunk(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [call_start(0, "call_r", "get_weather", '{"city":"Rome"}')],
                }
            ),
            chunk({"role": "assistant", "content": ""}, "stop"),
            usage_chunk(usage(50, 20)),
        )
    )
    response, events = await streamed(make_model("ollama:qwen3"))
    assert response.tool_calls == (
        ToolCall("call_p", "get_weather", '{"city":"Paris"}'),
        ToolCall("call_r", "get_weather", '{"city":"Rome"}'),
    )
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.usage == Usage(input_tokens=50, output_tokens=20)
    assert [e.index for e in events if isinstance(e, ToolCallDelta)] == [0, 1]


async def test_arguments_sent_as_an_object(wire: WireServer, make_model: Make) -> None:
    fragment = {
        "index": 0,
        "id": "call_o",
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Zürich"}},
    }
    wire.queue(stream(chunk({"tool_calls": [fragment]}), chunk({}, "tool_calls")))
    response, events = await streamed(make_model("ollama:qwen3"))
    assert response.tool_calls == (ToolCall("call_o", "get_weather", '{"city": "Zürich"}'),)
    assert events == [ToolCallDelta(0, "call_o", "get_weather", '{"city": "Zürich"}')]


async def test_plain_arguments_sent_as_an_object(wire: WireServer, make_model: Make) -> None:
    call = {"id": "call_o", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    wire.queue(plain(completion({"content": None, "tool_calls": [call]}, "tool_calls")))
    response = await make_model("ollama:qwen3").respond(REQUEST)
    assert response.tool_calls == (ToolCall("call_o", "get_weather", '{"city": "Oslo"}'),)


@pytest.mark.parametrize("mode", ["stream", "plain"])
async def test_missing_and_repeated_ids_become_unique(wire: WireServer, make_model: Make, mode: str) -> None:
    no_id = {"index": 0, "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"A"}'}}
    replies = {
        "stream": stream(
            chunk({"tool_calls": [no_id]}),
            chunk({"tool_calls": [call_start(1, "call_0", "get_weather", '{"city":"B"}')]}),
            chunk({"tool_calls": [call_start(2, "call_0", "get_weather", '{"city":"C"}')]}),
            chunk({}, "tool_calls"),
        ),
        "plain": plain(
            completion(
                {
                    "content": None,
                    "tool_calls": [
                        {"type": "function", "function": {"name": "get_weather", "arguments": '{"city":"A"}'}},
                        {
                            "id": "call_0",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"B"}'},
                        },
                        {
                            "id": "call_0",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"C"}'},
                        },
                    ],
                },
                "tool_calls",
            )
        ),
    }
    wire.queue(replies[mode])
    model = make_model("llamacpp:local")
    response = await model.respond(REQUEST, (lambda e: None) if mode == "stream" else None)
    first, second, third = response.tool_calls
    assert [c.arguments for c in response.tool_calls] == ['{"city":"A"}', '{"city":"B"}', '{"city":"C"}']
    assert GENERATED.match(first.id) and len(first.id) <= 40
    assert second.id == "call_0"
    assert GENERATED.match(third.id)
    assert first.id != third.id


async def test_fragments_without_index(wire: WireServer, make_model: Make) -> None:
    wire.queue(
        stream(
            chunk(
                {
                    "tool_calls": [
                        {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": '{"ci'}}
                    ]
                }
            ),
            chunk({"tool_calls": [{"function": {"arguments": 'ty":"Paris"}'}}]}),  # no id, no index: continues
            chunk(
                {
                    "tool_calls": [
                        {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
                    ]
                }
            ),
            chunk(
                {"tool_calls": [{"id": "call_b", "function": {"arguments": '{"city":"Rome"}'}}]}
            ),  # same id: continues
            chunk({}, "tool_calls"),
        )
    )
    response, _ = await streamed(make_model("openai-compatible:any"))
    assert response.tool_calls == (
        ToolCall("call_a", "get_weather", '{"city":"Paris"}'),
        ToolCall("call_b", "get_weather", '{"city":"Rome"}'),
    )


async def test_fragments_repeating_id_and_name_are_merged(wire: WireServer, make_model: Make) -> None:
    # some servers repeat id and name in every fragment of one call
    wire.queue(
        stream(
            chunk({"tool_calls": [call_start(0, "call_s", "get_weather", '{"city":')]}),
            chunk({"tool_calls": [call_start(0, "call_s", "get_weather", '"Paris"}')]}),
            chunk({}, "tool_calls"),
        )
    )
    response, _ = await streamed(make_model("vllm:m"))
    assert response.tool_calls == (ToolCall("call_s", "get_weather", '{"city":"Paris"}'),)


async def test_new_id_at_an_index_with_unfinished_arguments_continues_the_call(
    wire: WireServer, make_model: Make
) -> None:
    # a server that makes up a fresh id for every fragment: the arguments are not complete JSON yet,
    # so the fragment continues the call instead of starting another one
    wire.queue(
        stream(
            chunk({"tool_calls": [call_start(0, "call_1", "get_weather", '{"city":')]}),
            chunk({"tool_calls": [call_start(0, "call_2", "get_weather", '"Paris"}')]}),
            chunk({}, "tool_calls"),
        )
    )
    response, _ = await streamed(make_model("vllm:m"))
    assert response.tool_calls == (ToolCall("call_1", "get_weather", '{"city":"Paris"}'),)


async def test_everything_in_one_chunk(wire: WireServer, make_model: Make) -> None:
    single = chunk(
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [call_start(0, "call_1", "get_weather", '{"city":"Oslo"}')],
        },
        "tool_calls",
        usage=usage(11, 7),
    )
    wire.queue(stream(single))
    response, events = await streamed(make_model("ollama:qwen3"))
    assert response.text == "Checking."
    assert response.tool_calls == (ToolCall("call_1", "get_weather", '{"city":"Oslo"}'),)
    assert response.usage == Usage(input_tokens=11, output_tokens=7)
    assert len(events) == 2


async def test_stream_without_done_marker_is_complete_after_finish_reason(wire: WireServer, make_model: Make) -> None:
    wire.queue(stream(chunk({"content": "Hi"}), chunk({}, "stop"), done=False))
    response, _ = await streamed(make_model("llamacpp:m"))
    assert response.text == "Hi"


@pytest.mark.parametrize("mode", ["stream", "plain"])
async def test_legacy_function_call(wire: WireServer, make_model: Make, mode: str) -> None:
    replies = {
        "stream": stream(
            chunk({"role": "assistant", "function_call": {"name": "get_weather", "arguments": ""}}),
            chunk({"function_call": {"arguments": '{"city":"Lima"}'}}),
            chunk({}, "function_call"),
        ),
        "plain": plain(
            completion(
                {"content": None, "function_call": {"name": "get_weather", "arguments": '{"city":"Lima"}'}},
                "function_call",
            )
        ),
    }
    wire.queue(replies[mode])
    response = await make_model().respond(REQUEST, (lambda e: None) if mode == "stream" else None)
    [call] = response.tool_calls
    assert (call.name, call.arguments) == ("get_weather", '{"city":"Lima"}')
    assert GENERATED.match(call.id)
    assert response.stop_reason is StopReason.TOOL_USE


async def test_content_as_parts_in_a_plain_answer(wire: WireServer, make_model: Make) -> None:
    wire.queue(plain(completion({"content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]})))
    response = await make_model("openai-compatible:m").respond(REQUEST)
    assert response.text == "Hello there"


async def test_usage_on_the_finish_chunk(wire: WireServer, make_model: Make) -> None:
    wire.queue(stream(chunk({"content": "Hi"}), chunk({}, "stop", usage=usage(9, 1))))
    response, _ = await streamed(make_model("llamacpp:m"))
    assert response.usage == Usage(input_tokens=9, output_tokens=1)


async def test_interleaved_fragments_keep_call_order(wire: WireServer, make_model: Make) -> None:
    wire.queue(
        stream(
            chunk({"tool_calls": [call_start(0, "call_a", "get_weather"), call_start(1, "call_b", "get_weather")]}),
            chunk({"tool_calls": [call_args(1, '{"city":"B"}'), call_args(0, '{"city":"A"}')]}),
            chunk({}, "tool_calls"),
        )
    )
    response, _ = await streamed(make_model())
    assert [c.id for c in response.tool_calls] == ["call_a", "call_b"]
    assert [c.arguments for c in response.tool_calls] == ['{"city":"A"}', '{"city":"B"}']
