"""The Chat Completions adapter through the real ``openai`` SDK, against the scripted wire server.

Every scenario runs streamed (an event handler is given) and plain (none), where both exist, and
checks the parsed response and the request body the SDK sent.
"""

from __future__ import annotations

import json
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
from tests.support.deltas import merged
from tests.support.wire import Reply, WireServer
from tooloop.events import ModelEvent, TextDelta, ToolCallDelta
from tooloop.messages import StopReason, ToolCall, Usage, UserMessage
from tooloop.models import ModelRequest, ModelSettings, ToolDefinition
from tooloop.models.openai_chat import OpenAIChatModel

WEATHER = ToolDefinition(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
MODES = ["stream", "plain"]


async def ask(model: OpenAIChatModel, mode: str, request: ModelRequest | None = None) -> tuple[Any, list[ModelEvent]]:
    events: list[ModelEvent] = []
    request = request or ModelRequest([UserMessage("What is the weather in Paris?")], (WEATHER,))
    response = await model.respond(request, events.append if mode == "stream" else None)
    return response, events


def text_of(events: list[ModelEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


# -- text -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_text_only(wire: WireServer, make_model: Callable[..., OpenAIChatModel], mode: str) -> None:
    replies = {
        "stream": stream(
            chunk({"role": "assistant", "content": "", "refusal": None}),
            chunk({"content": "It is "}),
            chunk({"content": "sunny."}),
            chunk({}, "stop"),
            usage_chunk(usage(20, 5)),
        ),
        "plain": plain(completion({"content": "It is sunny.", "refusal": None}, "stop", usage(20, 5))),
    }
    wire.queue(replies[mode])
    response, events = await ask(make_model(), mode)

    assert response.text == "It is sunny."
    assert response.tool_calls == ()
    assert response.stop_reason is StopReason.END_TURN
    assert response.usage == Usage(input_tokens=20, output_tokens=5)
    assert response.model == "gpt-4.1-mini-2025-04-14"
    [sent] = wire.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test-key"
    body = sent.json
    assert body["model"] == "gpt-4.1-mini"
    assert body["messages"] == [{"role": "user", "content": "What is the weather in Paris?"}]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            },
        }
    ]
    assert "tool_choice" not in body
    if mode == "stream":
        assert body["stream"] is True
        assert body["stream_options"] == {"include_usage": True}
        assert merged(events) == [TextDelta("It is sunny.")]
    else:
        assert "stream" not in body and "stream_options" not in body
        assert events == []


async def test_settings_stream_forces_streaming_without_listener(
    wire: WireServer, make_model: Callable[..., OpenAIChatModel]
) -> None:
    wire.queue(stream(chunk({"content": "ok"}), chunk({}, "stop")))
    model = make_model(stream=True)
    response = await model.respond(ModelRequest([UserMessage("hi")]))
    assert response.text == "ok"
    assert wire.requests[0].json["stream"] is True


async def test_settings_stream_false_forces_plain_with_listener(
    wire: WireServer, make_model: Callable[..., OpenAIChatModel]
) -> None:
    wire.queue(plain(completion({"content": "ok"})))
    events: list[ModelEvent] = []
    model = make_model()
    request = ModelRequest([UserMessage("hi")], settings=ModelSettings(stream=False))
    response = await model.respond(request, events.append)
    assert response.text == "ok"
    assert "stream" not in wire.requests[0].json
    assert events == []


# -- tool calls -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_one_tool_call(wire: WireServer, make_model: Callable[..., OpenAIChatModel], mode: str) -> None:
    replies = {
        "stream": stream(
            chunk({"role": "assistant", "content": None, "tool_calls": [call_start(0, "call_W1", "get_weather")]}),
            chunk({"tool_calls": [call_args(0, '{"ci')]}),
            chunk({"tool_calls": [call_args(0, 'ty": "Par')]}),
            chunk({"tool_calls": [call_args(0, 'is"}')]}),
            chunk({}, "tool_calls"),
            usage_chunk(usage(30, 12)),
        ),
        "plain": plain(
            completion(
                {"content": None, "tool_calls": [tool_call("call_W1", "get_weather", '{"city": "Paris"}')]},
                "tool_calls",
                usage(30, 12),
            )
        ),
    }
    wire.queue(replies[mode])
    response, events = await ask(make_model(), mode)

    assert response.text == ""
    assert response.tool_calls == (ToolCall("call_W1", "get_weather", '{"city": "Paris"}'),)
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.usage == Usage(input_tokens=30, output_tokens=12)
    if mode == "stream":
        assert events[0].name == "get_weather"  # the name first, then the arguments
        assert merged(events) == [ToolCallDelta(0, "call_W1", "get_weather", '{"city": "Paris"}')]


@pytest.mark.parametrize("mode", MODES)
async def test_parallel_calls_with_interleaved_fragments(
    wire: WireServer, make_model: Callable[..., OpenAIChatModel], mode: str
) -> None:
    replies = {
        "stream": stream(
            chunk({"role": "assistant", "tool_calls": [call_start(0, "call_A", "get_weather")]}),
            chunk({"tool_calls": [call_start(1, "call_B", "get_weather")]}),
            chunk({"tool_calls": [call_args(1, '{"city": ')]}),
            chunk({"tool_calls": [call_args(0, '{"city": "Par')]}),
            chunk({"tool_calls": [call_args(1, '"Rome"}'), call_args(0, 'is"}')]}),
            chunk({}, "tool_calls"),
            usage_chunk(usage()),
        ),
        "plain": plain(
            completion(
                {
                    "content": None,
                    "tool_calls": [
                        tool_call("call_A", "get_weather", '{"city": "Paris"}'),
                        tool_call("call_B", "get_weather", '{"city": "Rome"}'),
                    ],
                },
                "tool_calls",
            )
        ),
    }
    wire.queue(replies[mode])
    response, events = await ask(make_model(), mode)

    assert response.tool_calls == (
        ToolCall("call_A", "get_weather", '{"city": "Paris"}'),
        ToolCall("call_B", "get_weather", '{"city": "Rome"}'),
    )
    assert response.stop_reason is StopReason.TOOL_USE
    if mode == "stream":
        by_position: dict[int, str] = {}
        for event in events:
            assert isinstance(event, ToolCallDelta)
            by_position[event.index] = by_position.get(event.index, "") + event.arguments_delta
        assert by_position == {0: '{"city": "Paris"}', 1: '{"city": "Rome"}'}


@pytest.mark.parametrize("mode", MODES)
async def test_text_then_tool_call(wire: WireServer, make_model: Callable[..., OpenAIChatModel], mode: str) -> None:
    replies = {
        "stream": stream(
            chunk({"role": "assistant", "content": "Let me "}),
            chunk({"content": "check."}),
            chunk({"tool_calls": [call_start(0, "call_X", "get_weather", '{"city":"Oslo"}')]}),
            chunk({}, "tool_calls"),
            usage_chunk(usage()),
        ),
        "plain": plain(
            completion(
                {"content": "Let me check.", "tool_calls": [tool_call("call_X", "get_weather", '{"city":"Oslo"}')]},
                "tool_calls",
            )
        ),
    }
    wire.queue(replies[mode])
    response, events = await ask(make_model(), mode)
    assert response.text == "Let me check."
    assert response.tool_calls == (ToolCall("call_X", "get_weather", '{"city":"Oslo"}'),)
    assert response.stop_reason is StopReason.TOOL_USE
    if mode == "stream":
        assert text_of(events) == "Let me check."
        assert events[-1] == ToolCallDelta(0, "call_X", "get_weather", '{"city":"Oslo"}')


@pytest.mark.parametrize("mode", MODES)
async def test_empty_argument_call_gets_an_empty_object(
    wire: WireServer, make_model: Callable[..., OpenAIChatModel], mode: str
) -> None:
    clock = ToolDefinition("now", "The time.", {"type": "object", "properties": {}})
    replies = {
        "stream": stream(
            chunk({"role": "assistant", "tool_calls": [call_start(0, "call_T", "now")]}),
            chunk({}, "tool_calls"),
        ),
        "plain": plain(completion({"content": None, "tool_calls": [tool_call("call_T", "now", "")]}, "tool_calls")),
    }
    wire.queue(replies[mode])
    response, _ = await ask(make_model(), mode, ModelRequest([UserMessage("time?")], (clock,)))
    assert response.tool_calls == (ToolCall("call_T", "now", "{}"),)


@pytest.mark.parametrize("mode", MODES)
async def test_refusal(wire: WireServer, make_model: Callable[..., OpenAIChatModel], mode: str) -> None:
    replies = {
        "stream": stream(
            chunk({"role": "assistant", "content": None, "refusal": ""}),
            chunk({"refusal": "I can't help "}),
            chunk({"refusal": "with that."}),
            chunk({}, "stop"),
            usage_chunk(usage()),
        ),
        "plain": plain(completion({"content": None, "refusal": "I can't help with that."}, "stop")),
    }
    wire.queue(replies[mode])
    response, events = await ask(make_model(), mode)
    assert response.refusal == "I can't help with that."
    assert response.text == ""
    assert response.stop_reason is StopReason.REFUSAL
    assert events == []


@pytest.mark.parametrize("mode", MODES)
async def test_content_filter_is_a_refusal(
    wire: WireServer, make_model: Callable[..., OpenAIChatModel], mode: str
) -> None:
    replies = {
        "stream": stream(chunk({"role": "assistant", "content": "Partial"}), chunk({}, "content_filter")),
        "plain": plain(completion({"content": "Partial"}, "content_filter")),
    }
    wire.queue(replies[mode])
    response, _ = await ask(make_model(), mode)
    assert response.stop_reason is StopReason.REFUSAL
    assert response.text == "Partial"


@pytest.mark.parametrize("mode", MODES)
async def test_max_tokens_cuts_tool_arguments(
    wire: WireServer, make_model: Callable[..., OpenAIChatModel], mode: str
) -> None:
    replies = {
        "stream": stream(
            chunk({"role": "assistant", "tool_calls": [call_start(0, "call_L", "get_weather")]}),
            chunk({"tool_calls": [call_args(0, '{"city": "Pa')]}),
            chunk({}, "length"),
            usage_chunk(usage(10, 16)),
        ),
        "plain": plain(
            completion(
                {"content": None, "tool_calls": [tool_call("call_L", "get_weather", '{"city": "Pa')]},
                "length",
                usage(10, 16),
            )
        ),
    }
    wire.queue(replies[mode])
    response, _ = await ask(make_model(), mode)
    # never executable: the stop reason says the output was cut, arguments stay as received
    assert response.stop_reason is StopReason.MAX_TOKENS
    assert response.tool_calls == (ToolCall("call_L", "get_weather", '{"city": "Pa'),)
    assert response.usage.output_tokens == 16


@pytest.mark.parametrize("mode", MODES)
async def test_max_tokens_text(wire: WireServer, make_model: Callable[..., OpenAIChatModel], mode: str) -> None:
    replies = {
        "stream": stream(chunk({"content": "A long"}), chunk({}, "length")),
        "plain": plain(completion({"content": "A long"}, "length")),
    }
    wire.queue(replies[mode])
    response, _ = await ask(make_model(), mode)
    assert (response.text, response.stop_reason) == ("A long", StopReason.MAX_TOKENS)


@pytest.mark.parametrize("mode", MODES)
async def test_usage_with_cached_and_reasoning_tokens(
    wire: WireServer, make_model: Callable[..., OpenAIChatModel], mode: str
) -> None:
    data = usage(prompt=1200, completion=300, cached=1024, reasoning=256)
    replies = {
        "stream": stream(chunk({"content": "Done."}), chunk({}, "stop"), usage_chunk(data)),
        "plain": plain(completion({"content": "Done."}, "stop", data)),
    }
    wire.queue(replies[mode])
    response, _ = await ask(make_model(), mode)
    assert response.usage == Usage(input_tokens=1200, output_tokens=300, cache_read_tokens=1024, reasoning_tokens=256)
    assert response.usage.total_tokens == 1500


async def test_stream_without_usage_chunk_has_zero_usage(
    wire: WireServer, make_model: Callable[..., OpenAIChatModel]
) -> None:
    wire.queue(stream(chunk({"content": "Hi"}), chunk({}, "stop")))
    response, _ = await ask(make_model(), "stream")
    assert response.usage == Usage()


async def test_stream_usage_option_off_omits_stream_options(
    wire: WireServer, make_model: Callable[..., OpenAIChatModel]
) -> None:
    wire.queue(stream(chunk({"content": "Hi"}), chunk({}, "stop")))
    await ask(make_model(stream_usage=False), "stream")
    assert "stream_options" not in wire.requests[0].json


async def test_reasoning_content_of_compatible_servers_is_thinking(
    wire: WireServer, make_model: Callable[..., OpenAIChatModel]
) -> None:
    wire.queue(
        stream(
            chunk({"role": "assistant", "reasoning_content": "The user wants "}),
            chunk({"reasoning_content": "a greeting."}),
            chunk({"content": "Hello!"}),
            chunk({}, "stop"),
        )
    )
    response, events = await ask(make_model("vllm:qwen3"), "stream")
    assert response.text == "Hello!"
    assert [(p.text, p.provider) for p in response.thinking] == [("The user wants a greeting.", "vllm")]
    assert [e.kind for e in events] == ["thinking_delta", "thinking_delta", "text_delta"]


def _json_bytes(payload: Any) -> bytes:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


async def test_unicode_split_across_chunks(wire: WireServer, make_model: Callable[..., OpenAIChatModel]) -> None:
    # "Grüße 😀": the ü is split between two HTTP chunks inside one SSE event, and the emoji arrives
    # as a surrogate pair whose halves come in two different events (servers that escape non-ASCII).
    first = _json_bytes(chunk({"content": "Grüße "}))
    cut = first.index("ü".encode()) + 1
    events_bytes = [
        first[:cut],
        first[cut:],
        b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",'
        b'"choices":[{"index":0,"delta":{"content":"\\ud83d"},"finish_reason":null}]}\n\n',
        b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",'
        b'"choices":[{"index":0,"delta":{"content":"\\ude00!"},"finish_reason":null}]}\n\n',
        _json_bytes(chunk({}, "stop")),
        b"data: [DONE]\n\n",
    ]
    wire.queue(Reply(200, {"content-type": "text/event-stream"}, chunks=events_bytes))
    response, events = await ask(make_model(), "stream")
    assert response.text == "Grüße 😀!"
    assert text_of(events) == "Grüße 😀!"
    assert all(len(e.text.encode("utf-8")) for e in events if isinstance(e, TextDelta))


async def test_unicode_in_plain_response(wire: WireServer, make_model: Callable[..., OpenAIChatModel]) -> None:
    wire.queue(plain(completion({"content": "日本語 ✓ 😀"})))
    response, _ = await ask(make_model(), "plain")
    assert response.text == "日本語 ✓ 😀"


EQUIVALENT = {
    "text": (
        [chunk({"role": "assistant", "content": "Hel"}), chunk({"content": "lo"}), chunk({}, "stop")],
        completion({"content": "Hello"}, "stop"),
    ),
    "calls": (
        [
            chunk({"content": "Two calls."}),
            chunk({"tool_calls": [call_start(0, "call_1", "get_weather", '{"city":')]}),
            chunk({"tool_calls": [call_start(1, "call_2", "get_weather", '{"city":"B"}')]}),
            chunk({"tool_calls": [call_args(0, '"A"}')]}),
            chunk({}, "tool_calls"),
        ],
        completion(
            {
                "content": "Two calls.",
                "tool_calls": [
                    tool_call("call_1", "get_weather", '{"city":"A"}'),
                    tool_call("call_2", "get_weather", '{"city":"B"}'),
                ],
            },
            "tool_calls",
        ),
    ),
    "truncated": (
        [chunk({"tool_calls": [call_start(0, "call_1", "get_weather", '{"ci')]}), chunk({}, "length")],
        completion({"content": None, "tool_calls": [tool_call("call_1", "get_weather", '{"ci')]}, "length"),
    ),
    "refusal": (
        [chunk({"refusal": "No."}), chunk({}, "stop")],
        completion({"content": None, "refusal": "No."}, "stop"),
    ),
}


@pytest.mark.parametrize("scenario", sorted(EQUIVALENT))
async def test_streamed_and_plain_answers_are_identical(
    wire: WireServer, make_model: Callable[..., OpenAIChatModel], scenario: str
) -> None:
    chunks, body = EQUIVALENT[scenario]
    data = usage(prompt=321, completion=45, cached=128, reasoning=16)
    wire.queue(stream(*chunks, usage_chunk(data)), plain({**body, "usage": data}))
    model = make_model()
    streamed, _ = await ask(model, "stream")
    unstreamed, _ = await ask(model, "plain")
    assert streamed == unstreamed
    assert streamed.usage == Usage(input_tokens=321, output_tokens=45, cache_read_tokens=128, reasoning_tokens=16)
