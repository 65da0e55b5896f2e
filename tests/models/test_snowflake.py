"""Snowflake Cortex's Chat Completions API, as it answers.

Cortex fills every field of the message with its zero value: a plain reply carries
``"function_call": {"name": "", "arguments": ""}``, ``"tool_calls": []``, ``"refusal": ""`` and,
until the last chunk of a stream, ``"finish_reason": ""``. A legacy ``function_call`` without a
name is no call, and an empty finish reason is not a stop reason.

Served from 127.0.0.1, on both transports and through both ``Agent.run`` and ``Agent.stream``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.models.doors import DOORS, TRANSPORTS, call_arguments, drive, joined
from tests.support.wire import Reply, WireServer, json_reply, sse_reply
from tooloop import Agent, StopReason
from tooloop.errors import ConfigurationError, ProviderConnectionError
from tooloop.events import ModelEvent, TextDelta
from tooloop.messages import ToolCall, UserMessage
from tooloop.models import Model, ModelRequest, ModelSettings, get_model

MODEL = "claude-sonnet-4-5"
PLACEHOLDER = {"name": "", "arguments": ""}


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"18C in {city}"


def usage(prompt: int = 40, completion: int = 8) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def delta(**fields: Any) -> dict[str, Any]:
    """A delta with every field present, as Cortex writes them."""
    return {
        "role": "assistant",
        "content": "",
        "function_call": PLACEHOLDER,
        "refusal": "",
        "tool_calls": [],
        **fields,
    }


def chunk(fields: dict[str, Any], finish: str = "", with_usage: bool = False) -> dict[str, Any]:
    return {
        "id": "b1f6c7a2-52c8-4f3e-9d0a-3c1e8f7a6b54",
        "object": "chat.completion.chunk",
        "created": 1762300000,
        "model": MODEL,
        "choices": [{"index": 0, "delta": fields, "logprobs": None, "finish_reason": finish}],
        "usage": usage() if with_usage else None,
    }


def completion(message: dict[str, Any], finish: str = "") -> dict[str, Any]:
    return {
        "id": "b1f6c7a2-52c8-4f3e-9d0a-3c1e8f7a6b54",
        "object": "chat.completion",
        "created": 1762300000,
        "model": MODEL,
        "choices": [{"index": 0, "message": delta(**message), "logprobs": None, "finish_reason": finish}],
        "usage": usage(),
    }


CALL = {"id": "toolu_01PQe3mSdG7rQx8", "type": "function", "function": {"name": "get_weather", "arguments": ""}}


def answer(door: str, text: str = "It is 18C in Paris.") -> Reply:
    if door == "stream":
        return sse_reply(
            [
                chunk(delta(content=text[:6])),
                chunk(delta(content=text[6:])),
                chunk(delta(), "stop", with_usage=True),
            ],
            done=True,
        )
    return json_reply(completion({"content": text}))


def call(door: str) -> Reply:
    if door == "stream":
        return sse_reply(
            [
                chunk(delta(content="Let me check. ")),
                chunk(delta(tool_calls=[{"index": 0, **CALL}])),
                chunk(delta(tool_calls=[{"index": 0, "function": {"arguments": '{"city": '}}])),
                chunk(delta(tool_calls=[{"index": 0, "function": {"arguments": '"Paris"}'}}])),
                chunk(delta(), "tool_calls", with_usage=True),
            ],
            done=True,
        )
    whole = {**CALL, "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    return json_reply(completion({"content": "Let me check. ", "tool_calls": [whole]}, "tool_calls"))


@pytest.fixture
async def made() -> AsyncIterator[list[Model]]:
    models: list[Model] = []
    yield models
    for model in models:
        await model.aclose()  # type: ignore[attr-defined]


@pytest.fixture
def cortex(wire: WireServer, made: list[Model]) -> Callable[..., Model]:
    def make(transport: str = "lean") -> Model:
        model = get_model(
            f"snowflake:{MODEL}",
            base_url=wire.url + "/api/v2/cortex/v1",
            api_key="snowflake-pat",
            max_retries=0,
            transport=transport,
        )
        made.append(model)
        return model

    return make


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_plain_reply_is_an_answer_not_a_call(
    wire: WireServer, cortex: Callable[..., Model], transport: str, door: str
) -> None:
    wire.queue(answer(door))
    result, events = await drive(Agent(cortex(transport), tools=[get_weather]), door, "Weather in Paris?")
    assert result.text == "It is 18C in Paris."
    assert result.stop_reason is StopReason.END_TURN
    assert result.tool_calls == ()
    assert len(wire.requests) == 1
    assert wire.requests[0].path == "/api/v2/cortex/v1/chat/completions"
    assert wire.requests[0].headers["authorization"] == "Bearer snowflake-pat"
    if door == "stream":
        assert joined(events, TextDelta) == "It is 18C in Paris."


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_tool_call_beside_the_empty_function_call_is_the_only_call(
    wire: WireServer, cortex: Callable[..., Model], transport: str, door: str
) -> None:
    wire.queue(call(door), answer(door))
    result, events = await drive(Agent(cortex(transport), tools=[get_weather]), door, "Weather in Paris?")
    assert result.text == "It is 18C in Paris."
    assert [(c.tool_call_id, c.tool_name, c.content) for c in result.tool_calls] == [
        ("toolu_01PQe3mSdG7rQx8", "get_weather", "18C in Paris")
    ]
    assistant, tool = wire.requests[1].json["messages"][-2:]
    assert assistant == {
        "role": "assistant",
        "content": "Let me check. ",
        "tool_calls": [
            {
                "id": "toolu_01PQe3mSdG7rQx8",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    }
    assert tool == {"role": "tool", "tool_call_id": "toolu_01PQe3mSdG7rQx8", "content": "18C in Paris"}
    if door == "stream":
        assert call_arguments(events) == '{"city": "Paris"}'


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_empty_finish_reason_does_not_complete_a_cut_stream(
    wire: WireServer, cortex: Callable[..., Model], transport: str
) -> None:
    wire.queue(sse_reply([chunk(delta(content="It is")), chunk(delta(content=" 18C"))], done=False))
    with pytest.raises(ProviderConnectionError, match="before the response was complete"):
        await cortex(transport).respond(ModelRequest([UserMessage("Weather?")]), lambda event: None)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_empty_finish_reason_in_a_plain_reply_is_an_ended_turn(
    wire: WireServer, cortex: Callable[..., Model], transport: str
) -> None:
    wire.queue(json_reply(completion({"content": "Hello."}, finish="")))
    response = await cortex(transport).respond(ModelRequest([UserMessage("Hi")]))
    assert (response.text, response.tool_calls, response.stop_reason) == ("Hello.", (), StopReason.END_TURN)


@pytest.mark.parametrize("mode", ["stream", "plain"])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_named_legacy_function_call_is_still_a_call(
    wire: WireServer, cortex: Callable[..., Model], transport: str, mode: str
) -> None:
    # Servers on the legacy format name the function in the first fragment only.
    if mode == "stream":
        wire.queue(
            sse_reply(
                [
                    chunk({"function_call": {"name": "get_weather", "arguments": '{"city":'}}),
                    chunk({"function_call": {"name": "", "arguments": ' "Rome"}'}}),
                    chunk({"function_call": PLACEHOLDER}),
                    chunk({}, "function_call"),
                ],
                done=True,
            )
        )
    else:
        body = completion({"content": None, "function_call": {"name": "get_weather", "arguments": '{"city": "Rome"}'}})
        body["choices"][0]["finish_reason"] = "function_call"
        wire.queue(json_reply(body))
    events: list[ModelEvent] = []
    model = cortex(transport)
    response = await model.respond(ModelRequest([UserMessage("Rome?")]), events.append if mode == "stream" else None)
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("get_weather", '{"city": "Rome"}')]
    assert response.stop_reason is StopReason.TOOL_USE
    assert isinstance(response.tool_calls[0], ToolCall) and response.tool_calls[0].id.startswith("call_")
    if mode == "stream":
        assert call_arguments(events) == '{"city": "Rome"}'


def test_a_snowflake_model_needs_the_account_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNOWFLAKE_PAT", "pat")
    with pytest.raises(ConfigurationError, match="base_url"):
        get_model(f"snowflake:{MODEL}")


async def test_the_token_comes_from_snowflake_pat_and_max_tokens_is_max_completion_tokens(
    wire: WireServer, made: list[Model], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SNOWFLAKE_PAT", "pat-from-env")
    model = get_model(f"snowflake:{MODEL}", base_url=wire.url + "/api/v2/cortex/v1", max_retries=0)
    made.append(model)
    wire.queue(answer("run"))
    await model.respond(ModelRequest([UserMessage("Hi")], settings=ModelSettings(max_tokens=64)))
    assert wire.requests[0].headers["authorization"] == "Bearer pat-from-env"
    assert wire.requests[0].json["max_completion_tokens"] == 64 and "max_tokens" not in wire.requests[0].json
