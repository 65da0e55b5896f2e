"""Signed reasoning in ``reasoning_details`` (OpenRouter's format, also sent by Snowflake Cortex for Claude).

A message (or, streamed, each delta) may carry ``reasoning_details``: a list of blocks typed
``reasoning.text`` (``text`` and, at the end, a ``signature``), ``reasoning.summary`` or
``reasoning.encrypted`` (``data``), each with an ``index``. Streamed blocks arrive in pieces that
share an index. The blocks are the model's thinking and go back verbatim (merged, signature
included) on the assistant turn, so a signed reasoning chain continues after a tool call; a
provider that did not make them never receives them.

Served from 127.0.0.1, on both transports and through both ``Agent.run`` and ``Agent.stream``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.models.doors import DOORS, TRANSPORTS, call_arguments, drive, joined
from tests.support.wire import Reply, WireServer, json_reply, sse_reply
from tooloop import Agent, StopReason
from tooloop.events import ThinkingDelta
from tooloop.messages import AssistantMessage, ThinkingPart, UserMessage
from tooloop.models import Model, ModelRequest, get_model

THOUGHT = 'The user asks for the weather in Florence. I should call weather with "Florence, Italy".'
SIGNATURE = "EvgCCkgIDRABGAIqQKb/wFIBWhtfZLSnNhQwwG129YA/VzhXG3yrKKa8RDLsJF9Ou09w"
FORMAT = "anthropic-claude-v1"
DETAIL = {"type": "reasoning.text", "text": THOUGHT, "format": FORMAT, "index": 0, "signature": SIGNATURE}
CALL_ID = "toolu_bdrk_01AfMUr4SPqrUP7qb65GXqma"


def weather(location: str) -> str:
    """Weather for a city."""
    return "40 C"


def usage(prompt: int = 607, completion: int = 105) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def envelope(model: str, **fields: Any) -> dict[str, Any]:
    return {"id": "gen-1777319947-Y45Z6u60MD4bK91UwvCd", "created": 1777319947, "model": model, **fields}


def chunk(model: str, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
    return envelope(model, object="chat.completion.chunk", choices=[choice], **extra)


def completion(model: str, message: dict[str, Any], finish: str) -> dict[str, Any]:
    choice = {"index": 0, "logprobs": None, "finish_reason": finish, "message": {"role": "assistant", **message}}
    return envelope(model, object="chat.completion", choices=[choice], usage=usage())


class Server:
    """How one server words the same answers: OpenRouter relaying Claude, or Snowflake Cortex."""

    def __init__(self, spec: str, path: str, model: str, *, reasoning_field: bool, zero_fields: bool) -> None:
        self.spec, self.path, self.model = spec, path, model
        self.reasoning_field = reasoning_field  # OpenRouter repeats the text in ``reasoning``
        self.zero_fields = zero_fields  # Cortex writes every field, empty or not

    def delta(self, **fields: Any) -> dict[str, Any]:
        if self.zero_fields:
            return {"role": "assistant", "content": "", "function_call": {"name": "", "arguments": ""}, **fields}
        return {"role": "assistant", "content": "", **fields}

    def call_turn(self, door: str) -> Reply:
        arguments = '{"location": "Florence, Italy"}'
        if door == "run":
            message: dict[str, Any] = {
                "content": None,
                "tool_calls": [
                    {
                        "type": "function",
                        "index": 0,
                        "id": CALL_ID,
                        "function": {"name": "weather", "arguments": arguments},
                    }
                ],
                "reasoning_details": [DETAIL],
            }
            if self.reasoning_field:
                message["reasoning"] = THOUGHT
            if self.zero_fields:
                message["function_call"] = {"name": "", "arguments": ""}
            return json_reply(completion(self.model, message, "tool_calls"))
        pieces = [THOUGHT[:20], THOUGHT[20:55], THOUGHT[55:]]
        chunks = []
        for piece in pieces:
            fields: dict[str, Any] = {
                "reasoning_details": [{"type": "reasoning.text", "text": piece, "format": FORMAT, "index": 0}]
            }
            if self.reasoning_field:
                fields["reasoning"] = piece
            chunks.append(chunk(self.model, self.delta(**fields)))
        signed = {"type": "reasoning.text", "signature": SIGNATURE, "format": FORMAT, "index": 0}
        chunks.append(chunk(self.model, self.delta(reasoning_details=[signed])))
        start = {"index": 0, "id": CALL_ID, "type": "function", "function": {"name": "weather", "arguments": ""}}
        chunks.append(chunk(self.model, self.delta(tool_calls=[start])))
        chunks.append(chunk(self.model, self.delta(tool_calls=[{"index": 0, "function": {"arguments": arguments}}])))
        chunks.append(chunk(self.model, self.delta(), "tool_calls", usage=usage()))
        return sse_reply(chunks, done=True)

    def answer_turn(self, door: str) -> Reply:
        text = "It is 40 C in Florence."
        if door == "run":
            return json_reply(completion(self.model, {"content": text}, "stop"))
        return sse_reply(
            [
                chunk(self.model, self.delta(content=text)),
                chunk(self.model, self.delta(), "stop", usage=usage(727, 59)),
            ],
            done=True,
        )


SERVERS = {
    "openrouter": Server(
        "openrouter:anthropic/claude-haiku-4.5",
        "/api/v1",
        "anthropic/claude-4.5-haiku-20251001",
        reasoning_field=True,
        zero_fields=False,
    ),
    "snowflake": Server(
        "snowflake:claude-sonnet-4-5", "/api/v2/cortex/v1", "claude-sonnet-4-5", reasoning_field=False, zero_fields=True
    ),
}


@pytest.fixture
async def made() -> AsyncIterator[list[Model]]:
    models: list[Model] = []
    yield models
    for model in models:
        await model.aclose()  # type: ignore[attr-defined]


@pytest.fixture
def make(wire: WireServer, made: list[Model]) -> Callable[..., Model]:
    def build(spec: str, path: str, transport: str) -> Model:
        model = get_model(spec, base_url=wire.url + path, api_key="test-key", max_retries=0, transport=transport)
        made.append(model)
        return model

    return build


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("server", sorted(SERVERS))
async def test_signed_reasoning_goes_back_whole_with_the_tool_call(
    wire: WireServer, make: Callable[..., Model], server: str, transport: str, door: str
) -> None:
    shape = SERVERS[server]
    wire.queue(shape.call_turn(door), shape.answer_turn(door))
    model = make(shape.spec, shape.path, transport)
    result, events = await drive(Agent(model, tools=[weather]), door, "What's the weather in Florence, Italy?")

    assert result.text == "It is 40 C in Florence." and result.stop_reason is StopReason.END_TURN
    first_call = result.tool_calls[0]
    assert first_call.thinking == (ThinkingPart(THOUGHT, provider=model.provider),)
    assistant, tool = wire.requests[1].json["messages"][-2:]
    assert assistant["reasoning_details"] == [DETAIL]
    assert assistant["tool_calls"][0]["id"] == CALL_ID
    assert "function_call" not in assistant
    assert tool == {"role": "tool", "tool_call_id": CALL_ID, "content": "40 C"}
    if door == "stream":
        assert joined(events, ThinkingDelta) == THOUGHT
        assert call_arguments(events) == '{"location": "Florence, Italy"}'


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_encrypted_and_summary_blocks_are_kept_in_order_and_merged_by_index(
    wire: WireServer, make: Callable[..., Model], transport: str
) -> None:
    model_name = "openai/gpt-5"
    summary = [
        {"type": "reasoning.summary", "summary": "**Checking", "format": "openai-responses-v1", "index": 0},
        {"type": "reasoning.summary", "summary": " the weather**", "format": "openai-responses-v1", "index": 0},
    ]
    encrypted = {"type": "reasoning.encrypted", "data": "gAAAAABpF3x", "id": "rs_0af1", "format": "openai-responses-v1"}
    wire.queue(
        sse_reply(
            [
                chunk(
                    model_name,
                    {"role": "assistant", "content": "", "reasoning": "**Checking", "reasoning_details": summary[:1]},
                ),
                chunk(model_name, {"reasoning": " the weather**", "reasoning_details": summary[1:]}),
                chunk(model_name, {"reasoning_details": [{**encrypted, "index": 1}]}),
                chunk(model_name, {"content": "Sunny."}),
                chunk(model_name, {}, "stop", usage=usage()),
            ],
            done=True,
        ),
        json_reply(completion(model_name, {"content": "Ok."}, "stop")),
    )
    model = make("openrouter:openai/gpt-5", "/api/v1", transport)
    first = await model.respond(ModelRequest([UserMessage("Weather?")]), lambda event: None)
    assert first.text == "Sunny."
    assert first.thinking == (ThinkingPart("**Checking the weather**", provider="openrouter"),)

    said = AssistantMessage(first.text, thinking=first.thinking, provider_data=first.provider_data)
    second = await Agent(model).run("And now?", history=[UserMessage("Weather?"), said])
    assert second.text == "Ok."
    sent = wire.requests[1].json["messages"][1]
    assert sent["role"] == "assistant" and sent["content"] == "Sunny."
    assert sent["reasoning_details"] == [
        {
            "type": "reasoning.summary",
            "summary": "**Checking the weather**",
            "format": "openai-responses-v1",
            "index": 0,
        },
        {**encrypted, "index": 1},
    ]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_reasoning_details_never_go_to_another_provider(
    wire: WireServer, make: Callable[..., Model], transport: str
) -> None:
    shape = SERVERS["openrouter"]
    wire.queue(
        shape.call_turn("run"), shape.answer_turn("run"), json_reply(completion("gpt-4.1", {"content": "Hi."}, "stop"))
    )
    first = await Agent(make(shape.spec, shape.path, transport), tools=[weather]).run("Weather in Florence?")
    other = make("openai-compatible:gpt-4.1", "/v1", transport)
    await Agent(other, tools=[weather]).run("Thanks", history=first.transcript)
    for message in wire.requests[2].json["messages"]:
        assert "reasoning_details" not in message and "reasoning" not in message
