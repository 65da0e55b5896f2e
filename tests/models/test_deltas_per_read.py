"""On the lean transport a stream's deltas come one per network read, not one per SSE event.

Each answer is served from 127.0.0.1 in the provider's real wire format twice: all its events in
one HTTP chunk (one read), then each event in its own chunk. From the single read the listener
gets one delta per run of text, thinking, or one call's arguments, in order (a call's first delta
with its id and name: Gemini's and Anthropic's with the arguments that came in the same read);
from either serving the response (text, calls, usage, stop reason, ids) is the same, and the
deltas of both, joined per run, are the same.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import pytest

from tests.models import anthropic_wire as aw
from tests.models.test_gemini import chunk as gemini_chunk
from tests.models.test_openai_responses import Stream, call, message, response
from tests.support.deltas import merged
from tests.support.wire import Reply, WireServer
from tooloop.events import ModelEvent, TextDelta, ThinkingDelta, ToolCallDelta
from tooloop.messages import ModelResponse, UserMessage
from tooloop.models import Model, ModelRequest, ModelSettings, get_model

REQUEST = ModelRequest([UserMessage("Weather in Paris and Rome?")], settings=ModelSettings(max_tokens=256))
TEXT = "Let me check the weather in both cities for you."
THOUGHT = "Two cities, two calls."


def one_read(reply: Reply) -> Reply:
    assert reply.chunks is not None
    return Reply(reply.status, reply.headers, chunks=[b"".join(reply.chunks)])


def anthropic() -> tuple[Reply, list[ModelEvent]]:
    content = [
        {"type": "thinking", "thinking": THOUGHT, "signature": "sig"},
        {"type": "text", "text": TEXT},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}},
    ]
    expected: list[ModelEvent] = [
        ThinkingDelta(THOUGHT),
        TextDelta(TEXT),
        ToolCallDelta(0, "toolu_1", "get_weather", json.dumps({"city": "Paris"})),  # opened in this read: one delta
        ToolCallDelta(1, "toolu_2", "get_weather", json.dumps({"city": "Rome"})),
    ]
    return aw.streamed(content, "tool_use"), expected


def gemini() -> tuple[Reply, list[ModelEvent]]:
    words = TEXT.split(" ")
    chunks = [
        gemini_chunk([{"text": THOUGHT[:9], "thought": True}]),
        gemini_chunk([{"text": THOUGHT[9:], "thought": True}]),
    ]
    chunks += [gemini_chunk([{"text": w + (" " if i < len(words) - 1 else "")}]) for i, w in enumerate(words)]
    chunks.append(
        gemini_chunk(
            [
                {"functionCall": {"id": "g1", "name": "get_weather", "args": {"city": "Paris"}}},
                {"functionCall": {"id": "g2", "name": "get_weather", "args": {"city": "Rome"}}},
            ],
            "STOP",
        )
    )
    raw = [f"data: {json.dumps(c)}\r\n\r\n".encode() for c in chunks]
    expected: list[ModelEvent] = [
        ThinkingDelta(THOUGHT),
        TextDelta(TEXT),
        ToolCallDelta(0, "g1", "get_weather", '{"city":"Paris"}'),
        ToolCallDelta(1, "g2", "get_weather", '{"city":"Rome"}'),
    ]
    return Reply(200, {"content-type": "text/event-stream"}, chunks=raw), expected


def responses() -> tuple[Reply, list[ModelEvent]]:
    stream = (
        Stream()
        .add("response.output_item.added", output_index=0, item={"type": "reasoning", "id": "rs_1", "summary": []})
        .add("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0, summary_index=0, delta="Two ")
        .add("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0, summary_index=0, delta="cities.")
        .text(1, *[TEXT[i : i + 5] for i in range(0, len(TEXT), 5)])
        .call_added(2, "call_a", "get_weather", "fc_a")
        .args(2, '{"city":', "fc_a")
        .args(2, '"Paris"}', "fc_a")
        .call_done(2, "call_a", "get_weather", '{"city":"Paris"}', "fc_a")
    )
    final = [message(TEXT), call("call_a", "get_weather", '{"city":"Paris"}', item_id="fc_a")]
    expected: list[ModelEvent] = [
        ThinkingDelta("Two cities."),
        TextDelta(TEXT),
        ToolCallDelta(0, "call_a", "get_weather"),
        ToolCallDelta(0, arguments_delta='{"city":"Paris"}'),
    ]
    return stream.end("response.completed", response(final)), expected


PROVIDERS: dict[str, tuple[Callable[[str], Model], Callable[[], tuple[Reply, list[ModelEvent]]]]] = {
    "anthropic": (lambda url: get_model(f"anthropic:{aw.MODEL}", base_url=url, api_key="k", max_retries=0), anthropic),
    "google": (lambda url: get_model("google:gemini-2.5-flash", base_url=url, api_key="k", max_retries=0), gemini),
    "openai-responses": (
        lambda url: get_model("openai-responses:gpt-5-mini", base_url=url + "/v1", api_key="k", max_retries=0),
        responses,
    ),
}


@pytest.fixture
async def made() -> AsyncIterator[list[Model]]:
    models: list[Model] = []
    yield models
    for model in models:
        await model.aclose()  # type: ignore[attr-defined]


async def answer(model: Model) -> tuple[ModelResponse, list[ModelEvent]]:
    events: list[ModelEvent] = []
    result = await model.respond(REQUEST, events.append)
    return result, events


@pytest.mark.parametrize("name", sorted(PROVIDERS))
async def test_one_read_gives_one_delta_per_run(wire: WireServer, made: list[Model], name: str) -> None:
    make, served = PROVIDERS[name]
    reply, expected = served()
    wire.queue(one_read(reply), reply)
    model = make(wire.url)
    made.append(model)
    together, together_events = await answer(model)
    apart, apart_events = await answer(model)
    assert together_events == expected
    assert merged(apart_events) == merged(expected)
    assert together == apart
    assert together.tool_calls and together.stop_reason == apart.stop_reason
