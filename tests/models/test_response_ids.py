"""Every adapter keeps the response's id, the stop sequence that ended it (where the wire says) and
its usage on the answer it records: plain and streamed, on each transport, against local servers
speaking each provider's wire format."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models import openai_wire as ow
from tests.models.doors import DOORS, TRANSPORTS, drive
from tests.models.test_gemini import candidate
from tests.models.test_gemini import usage as gemini_usage
from tests.models.test_openai_responses import Stream, message, response
from tests.support.wire import Reply, WireServer, json_reply, sse_reply
from tooloop import Agent, AssistantMessage
from tooloop.models import Model, ModelSettings, get_model


@pytest.fixture
async def made() -> AsyncIterator[list[Model]]:
    models: list[Model] = []
    yield models
    for model in models:
        await model.aclose()  # type: ignore[attr-defined]


async def _answer(model: Model, door: str, made: list[Model]) -> AssistantMessage:
    made.append(model)
    # a small max_tokens: a plain request stays plain (a large one streams quietly)
    result, _ = await drive(Agent(model, settings=ModelSettings(max_tokens=1024)), door, "Hi")
    final = result.final_message
    assert final is not None
    return final


# ---------------------------------------------------------------- Anthropic


def _anthropic(door: str) -> Reply:
    content = [{"type": "text", "text": "Counting: 1, 2, 3"}]
    use = aw.usage(30, 9)
    if door == "run":
        body = aw.message(content, "stop_sequence", use)
        body["id"], body["stop_sequence"] = "msg_01XFDUDYJgAACzvnptvVoYEL", "\n\nHuman:"
        return json_reply(body)
    events = aw.stream_events(content, "stop_sequence", use)
    for name, data in events:
        if name == "message_start":
            data["message"]["id"] = "msg_01XFDUDYJgAACzvnptvVoYEL"
        if name == "message_delta":
            data["delta"]["stop_sequence"] = "\n\nHuman:"
    return sse_reply(events, named=True)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("door", DOORS)
async def test_anthropic_keeps_the_message_id_and_the_stop_sequence(
    wire: WireServer, made: list[Model], door: str, transport: str
) -> None:
    wire.queue(_anthropic(door))
    model = get_model(f"anthropic:{aw.MODEL}", base_url=wire.url, api_key="k", max_retries=0, transport=transport)
    final = await _answer(model, door, made)
    assert (final.response_id, final.stop_sequence) == ("msg_01XFDUDYJgAACzvnptvVoYEL", "\n\nHuman:")
    assert final.usage is not None
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.requests) == (30, 9, 1)
    assert final.usage.cost is not None and final.usage.cost > 0  # a priced model: the request's cost


@pytest.mark.parametrize("door", DOORS)
async def test_anthropic_without_a_stop_sequence_records_none(wire: WireServer, made: list[Model], door: str) -> None:
    content = [{"type": "text", "text": "done"}]
    wire.queue(aw.plain(content) if door == "run" else aw.streamed(content))
    final = await _answer(get_model(f"anthropic:{aw.MODEL}", base_url=wire.url, api_key="k"), door, made)
    assert (final.response_id, final.stop_sequence) == ("msg_01", None)


# ---------------------------------------------------------------- Chat Completions


def _chat(door: str, stop_reason: Any) -> Reply:
    if door == "run":
        body = ow.completion({"content": "1, 2, 3"}, usage_data=ow.usage(40, 6))
        body["id"] = "chatcmpl-AbC123"
        body["choices"][0]["stop_reason"] = stop_reason  # vLLM: the stop string that matched
        return ow.plain(body)
    first = ow.chunk({"role": "assistant", "content": "1, 2, 3"})
    last = ow.chunk({}, "stop")
    last["choices"][0]["stop_reason"] = stop_reason
    for each in (first, last):
        each["id"] = "chatcmpl-AbC123"
    usage = ow.usage_chunk(ow.usage(40, 6))
    usage["id"] = "chatcmpl-AbC123"
    return ow.stream(first, last, usage)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("door", DOORS)
async def test_chat_completions_keeps_the_completion_id_and_vllms_stop_string(
    wire: WireServer, made: list[Model], door: str, transport: str
) -> None:
    wire.queue(_chat(door, "END"))
    model = get_model("openai:gpt-4.1-mini", base_url=f"{wire.url}/v1", api_key="k", max_retries=0, transport=transport)
    final = await _answer(model, door, made)
    assert (final.response_id, final.stop_sequence) == ("chatcmpl-AbC123", "END")
    assert final.usage is not None and (final.usage.input_tokens, final.usage.output_tokens) == (40, 6)
    assert final.usage.cost is not None and final.usage.cost > 0


@pytest.mark.parametrize("door", DOORS)
async def test_chat_completions_a_stop_token_id_is_not_a_stop_sequence(
    wire: WireServer, made: list[Model], door: str
) -> None:
    wire.queue(_chat(door, 128001))  # vLLM names an end-of-text token by its id: no stop string
    final = await _answer(get_model("openai:gpt-4.1-mini", base_url=f"{wire.url}/v1", api_key="k"), door, made)
    assert (final.response_id, final.stop_sequence) == ("chatcmpl-AbC123", None)


# ---------------------------------------------------------------- Responses


@pytest.mark.parametrize("door", DOORS)
async def test_responses_keeps_the_response_id(wire: WireServer, made: list[Model], door: str) -> None:
    body = response([message("Hello!")], inp=12, out=3)
    body["id"] = "resp_67ccd2bed1ec8190b14f964abc054267"
    if door == "run":
        wire.queue(json_reply(body))
    else:
        wire.queue(Stream().text(0, "Hel", "lo!").end("response.completed", body))
    model = get_model("openai-responses:gpt-5-mini", base_url=f"{wire.url}/v1", api_key="k", max_retries=0)
    final = await _answer(model, door, made)
    assert (final.response_id, final.stop_sequence) == ("resp_67ccd2bed1ec8190b14f964abc054267", None)
    assert final.usage is not None and (final.usage.input_tokens, final.usage.output_tokens) == (12, 3)


# ---------------------------------------------------------------- Gemini


@pytest.mark.parametrize("transport", ("lean", "sdk"))
@pytest.mark.parametrize("door", DOORS)
async def test_gemini_keeps_the_response_id(wire: WireServer, made: list[Model], door: str, transport: str) -> None:
    body = {
        "candidates": [candidate([{"text": "Hello"}], "STOP")],
        "usageMetadata": gemini_usage(14, 2),
        "modelVersion": "gemini-2.5-flash",
        "responseId": "k8hsaJzsI9SX7M8PmeS5mAc",
    }
    if door == "run":
        wire.queue(json_reply(body))
    else:
        head = {"candidates": [candidate([{"text": "Hel"}], None)], "modelVersion": "gemini-2.5-flash"}
        head["responseId"] = "k8hsaJzsI9SX7M8PmeS5mAc"
        tail = {**body, "candidates": [candidate([{"text": "lo"}], "STOP")]}
        raw = [f"data: {json.dumps(c)}\r\n\r\n".encode() for c in (head, tail)]
        wire.queue(Reply(200, {"content-type": "text/event-stream"}, chunks=raw))
    model = get_model("google:gemini-2.5-flash", base_url=wire.url, api_key="k", max_retries=0, transport=transport)
    final = await _answer(model, door, made)
    assert (final.response_id, final.stop_sequence) == ("k8hsaJzsI9SX7M8PmeS5mAc", None)
    assert final.usage is not None and (final.usage.input_tokens, final.usage.output_tokens) == (14, 2)
