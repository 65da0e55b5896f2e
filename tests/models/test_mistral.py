"""Mistral's reasoning models on the Chat Completions adapter, as Mistral's API sends them.

A reasoning answer's ``content`` is a list of typed chunks: ``{"type": "thinking", "thinking":
[{"type": "text", "text": ...}]}`` and ``{"type": "text", "text": ...}``. Streamed, ``delta.content``
is such a list while the model thinks (the chunk that ends the thinking may carry the first text
chunk too) and plain strings afterwards. Mistral asks for the assistant turn to be replayed with
its thinking chunks intact; a ``signature`` on a thinking chunk goes back with it.

Served from 127.0.0.1, on both transports and through both ``Agent.run`` and ``Agent.stream``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.models.doors import DOORS, TRANSPORTS, call_arguments, drive, joined
from tests.support.wire import Reply, WireServer, json_reply, sse_reply
from tooloop import Agent, StopReason
from tooloop.errors import ConfigurationError
from tooloop.events import ModelEvent, TextDelta, ThinkingDelta
from tooloop.messages import AssistantMessage, ThinkingPart, ToolCall, ToolCallMessage, UserMessage
from tooloop.models import Model, ModelRequest, get_model

MODEL = "magistral-medium-2509"
THOUGHT = "The user wants the weather in Paris. I should call get_weather."
ANSWER_THOUGHT = "The tool said 18C. Answer briefly."


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"18C in {city}"


def think(text: str, signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "thinking", "thinking": [{"type": "text", "text": text}]}
    if signature is not None:
        part["signature"] = signature
    return part


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def usage(prompt: int = 30, completion: int = 12) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "5e1c8a3f0b7e4d2a9c6b1f8e7d3a2c10",
        "object": "chat.completion.chunk",
        "created": 1759400000,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def completion(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "5e1c8a3f0b7e4d2a9c6b1f8e7d3a2c10",
        "object": "chat.completion",
        "created": 1759400000,
        "model": MODEL,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "tool_calls": None, **message}, "finish_reason": finish}
        ],
        "usage": usage(),
    }


WEATHER_CALL = {"id": "D681PevKs", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}, "index": 0}


def thinking_then_call(door: str) -> Reply:
    if door == "stream":
        return sse_reply(
            [
                chunk({"role": "assistant", "content": [think("The user wants the weather")]}),
                chunk({"content": [think(" in Paris. I should call get_weather.")]}),
                chunk({"tool_calls": [WEATHER_CALL]}, "tool_calls", usage=usage()),
            ],
            done=True,
        )
    return json_reply(completion({"content": [think(THOUGHT)], "tool_calls": [WEATHER_CALL]}, "tool_calls"))


def thinking_then_answer(door: str, answer: str = "It is 18C in Paris.") -> Reply:
    if door == "stream":
        return sse_reply(
            [
                chunk({"role": "assistant", "content": [think("The tool said 18C.")]}),
                # The chunk that closes the thinking also opens the answer.
                chunk({"content": [think(" Answer briefly."), text(answer[:6])]}),
                chunk({"content": answer[6:]}),
                chunk({"content": ""}, "stop", usage=usage(50, 9)),
            ],
            done=True,
        )
    return json_reply(completion({"content": [think(ANSWER_THOUGHT), text(answer)]}))


@pytest.fixture
async def made() -> AsyncIterator[list[Model]]:
    models: list[Model] = []
    yield models
    for model in models:
        await model.aclose()  # type: ignore[attr-defined]


@pytest.fixture
def mistral(wire: WireServer, made: list[Model]) -> Callable[..., Model]:
    def make(transport: str = "lean", **options: Any) -> Model:
        model = get_model(
            f"mistral:{MODEL}",
            base_url=wire.url + "/v1",
            api_key="mistral-test-key",
            max_retries=0,
            transport=transport,
            **options,
        )
        made.append(model)
        return model

    return make


# -- reading -------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_streamed_thinking_chunks_are_thinking_and_the_rest_is_text(
    wire: WireServer, mistral: Callable[..., Model], transport: str
) -> None:
    wire.queue(thinking_then_answer("stream"))
    events: list[ModelEvent] = []
    response = await mistral(transport).respond(ModelRequest([UserMessage("Weather?")]), events.append)
    assert response.text == "It is 18C in Paris."
    assert response.thinking == (ThinkingPart(ANSWER_THOUGHT, provider="mistral"),)
    assert response.stop_reason is StopReason.END_TURN
    assert (response.usage.input_tokens, response.usage.output_tokens) == (50, 9)
    assert joined(events, ThinkingDelta) == ANSWER_THOUGHT
    assert joined(events, TextDelta) == "It is 18C in Paris."
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert all(isinstance(e, ThinkingDelta) for e in events[:first_text])


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_plain_reply_with_a_content_list_keeps_its_thinking(
    wire: WireServer, mistral: Callable[..., Model], transport: str
) -> None:
    wire.queue(thinking_then_answer("run"))
    response = await mistral(transport).respond(ModelRequest([UserMessage("Weather?")]))
    assert response.text == "It is 18C in Paris."
    assert response.thinking == (ThinkingPart(ANSWER_THOUGHT, provider="mistral"),)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_reference_chunks_and_unknown_chunk_types_are_skipped(
    wire: WireServer, mistral: Callable[..., Model], transport: str
) -> None:
    content = [think(THOUGHT), {"type": "reference", "reference_ids": [1, 2]}, text("Paris is sunny.")]
    wire.queue(
        json_reply(completion({"content": content})),
        sse_reply([chunk({"content": content}), chunk({"content": ""}, "stop")], done=True),
    )
    model = mistral(transport)
    plain = await model.respond(ModelRequest([UserMessage("Weather?")]))
    streamed = await model.respond(ModelRequest([UserMessage("Weather?")]), lambda event: None)
    for response in (plain, streamed):
        assert response.text == "Paris is sunny."
        assert response.thinking == (ThinkingPart(THOUGHT, provider="mistral"),)


# -- the loop, and what goes back ----------------------------------------------------------------


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_thinking_goes_back_as_thinking_chunks_in_the_next_request(
    wire: WireServer, mistral: Callable[..., Model], transport: str, door: str
) -> None:
    wire.queue(thinking_then_call(door), thinking_then_answer(door))
    agent = Agent(mistral(transport), tools=[get_weather])
    result, events = await drive(agent, door, "Weather in Paris?")

    assert result.text == "It is 18C in Paris." and result.stop_reason is StopReason.END_TURN
    assert [m.thinking for m in result.new_messages if isinstance(m, AssistantMessage)] == [
        (ThinkingPart(ANSWER_THOUGHT, provider="mistral"),)
    ]
    assistant, tool = wire.requests[1].json["messages"][-2:]
    assert assistant == {
        "role": "assistant",
        "content": [think(THOUGHT)],
        "tool_calls": [
            {
                "id": "D681PevKs",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    assert tool == {"role": "tool", "tool_call_id": "D681PevKs", "content": "18C in Paris"}
    if door == "stream":
        assert joined(events, ThinkingDelta) == THOUGHT + ANSWER_THOUGHT
        assert call_arguments(events) == '{"city": "Paris"}'


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_answer_goes_back_with_its_thinking_chunk_then_its_text(
    wire: WireServer, mistral: Callable[..., Model], transport: str, door: str
) -> None:
    wire.queue(thinking_then_answer(door, "First answer."), thinking_then_answer(door, "Second answer."))
    agent = Agent(mistral(transport))
    first, _ = await drive(agent, door, "One?")
    second, _ = await drive(agent, door, "Two?", history=first.transcript)
    assert second.text == "Second answer."
    messages = wire.requests[1].json["messages"]
    assert messages[-2] == {"role": "assistant", "content": [think(ANSWER_THOUGHT), text("First answer.")]}
    assert messages[-1] == {"role": "user", "content": "Two?"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_signed_thinking_chunk_goes_back_with_its_signature(
    wire: WireServer, mistral: Callable[..., Model], transport: str
) -> None:
    wire.queue(
        json_reply(completion({"content": [think(THOUGHT, signature="c2lnbmVkLWJ5LW1pc3RyYWw="), text("Done.")]})),
        json_reply(completion({"content": "Ok."})),
    )
    model = mistral(transport)
    response = await model.respond(ModelRequest([UserMessage("Go")]))
    assert response.thinking == (ThinkingPart(THOUGHT, signature="c2lnbmVkLWJ5LW1pc3RyYWw=", provider="mistral"),)
    history = [UserMessage("Go"), AssistantMessage(response.text, thinking=response.thinking), UserMessage("More")]
    await model.respond(ModelRequest(history))
    assert wire.requests[1].json["messages"][1]["content"] == [
        think(THOUGHT, signature="c2lnbmVkLWJ5LW1pc3RyYWw="),
        text("Done."),
    ]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_thinking_of_another_provider_is_not_sent_to_mistral(
    wire: WireServer, mistral: Callable[..., Model], transport: str
) -> None:
    wire.queue(json_reply(completion({"content": "Ok."})))
    history = [
        UserMessage("Go"),
        AssistantMessage("Done.", thinking=(ThinkingPart("claude's", signature="sig", provider="anthropic"),)),
        UserMessage("More"),
    ]
    await mistral(transport).respond(ModelRequest(history))
    assert wire.requests[0].json["messages"][1] == {"role": "assistant", "content": "Done."}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_tool_call_without_thinking_goes_back_with_plain_content(
    wire: WireServer, mistral: Callable[..., Model], transport: str
) -> None:
    wire.queue(
        json_reply(completion({"content": "", "tool_calls": [WEATHER_CALL]}, "tool_calls")),
        json_reply(completion({"content": "Sunny."})),
    )
    result = await Agent(mistral(transport), tools=[get_weather]).run("Weather?")
    assert result.text == "Sunny."
    assistant = wire.requests[1].json["messages"][-2]
    assert assistant["content"] is None
    assert [ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in assistant["tool_calls"]] == [
        ToolCall("D681PevKs", "get_weather", '{"city": "Paris"}')
    ]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tool_call_ids_of_other_providers_go_to_mistral_as_nine_letters_and_digits(
    wire: WireServer, mistral: Callable[..., Model], transport: str
) -> None:
    # Mistral answers 400 "Tool call id was ... but must be a-z, A-Z, 0-9, with a length of 9".
    wire.queue(json_reply(completion({"content": "Both done."})))
    foreign = ("call_PTLP8xhu3uwZk4l3nlnrrJha", "toolu_01A09q90qw90lq917835lq9", "turn1_0")
    history = [
        UserMessage("Weather in three cities?"),
        *(
            ToolCallMessage(
                tool_name="get_weather",
                tool_call_id=call_id,
                arguments={"city": city},
                content=f"18C in {city}",
                batch_id="b1",
            )
            for call_id, city in zip(foreign, ("Paris", "Oslo", "Rome"), strict=True)
        ),
        ToolCallMessage(
            tool_name="get_weather",
            tool_call_id="D681PevKs",
            arguments={"city": "Lyon"},
            content="20C in Lyon",
            batch_id="b2",
        ),
    ]
    await mistral(transport).respond(ModelRequest(history))
    messages = wire.requests[0].json["messages"]
    calls = [c["id"] for m in messages if m["role"] == "assistant" for c in m["tool_calls"]]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert all(len(i) == 9 and i.isascii() and i.isalnum() for i in calls)
    assert calls == results and len(set(calls)) == 4
    assert calls[3] == "D681PevKs"  # an id Mistral made goes back as it came
    assert [m["content"] for m in messages if m["role"] == "tool"] == [
        "18C in Paris",
        "18C in Oslo",
        "18C in Rome",
        "20C in Lyon",
    ]


async def test_mistral_models_need_their_key_and_go_to_mistral(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="MISTRAL_API_KEY"):
        get_model(f"mistral:{MODEL}")
    monkeypatch.setenv("MISTRAL_API_KEY", "k")
    model = get_model(f"mistral:{MODEL}")
    try:
        assert model.base_url.rstrip("/") == "https://api.mistral.ai/v1"  # type: ignore[attr-defined]
    finally:
        await model.aclose()  # type: ignore[attr-defined]
