"""The OpenAI Responses adapter against a local server speaking the Responses wire format, on both transports."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.deltas import merged
from tests.support.wire import Recorded, Reply, WireServer, json_reply, sse_reply
from tooloop.errors import (
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ContextLengthError,
    ModelResponseError,
    ProviderConnectionError,
    ProviderOverloadedError,
    RateLimitError,
)
from tooloop.events import ModelEvent, TextDelta, ThinkingDelta, ToolCallDelta
from tooloop.messages import (
    AssistantMessage,
    StopReason,
    SystemMessage,
    ThinkingPart,
    ToolCallMessage,
    ToolCallStatus,
    Usage,
    UserMessage,
)
from tooloop.models import ModelRequest, ModelSettings, OutputSchema, ToolDefinition, get_model
from tooloop.models.openai_responses import OpenAIResponsesModel

MODEL = "gpt-5-mini"
WEATHER = ToolDefinition(
    "get_weather",
    "Weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
REASONING = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "Need the weather."}],
    "encrypted_content": "gAAAAB-encrypted",
}

_OPEN: list[OpenAIResponsesModel] = []
_TRANSPORT = ["lean"]


@pytest.fixture(autouse=True, params=["lean", "sdk"])
async def _transport(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """Every test of this module runs on both transports; the models it made are closed at its end."""
    _TRANSPORT[0] = request.param
    yield
    while _OPEN:
        await _OPEN.pop().aclose()


def model(wire: WireServer, name: str = MODEL, **options: Any) -> OpenAIResponsesModel:
    options.setdefault("transport", _TRANSPORT[0])
    made = get_model(f"openai-responses:{name}", base_url=f"{wire.url}/v1", api_key="sk-test", **options)
    assert isinstance(made, OpenAIResponsesModel)
    _OPEN.append(made)
    return made


def usage(inp: int = 10, out: int = 5, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": inp + out,
    }


def response(
    output: list[dict[str, Any]], status: str = "completed", incomplete: str | None = None, **usage_args: int
) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1741476542,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": f"{MODEL}-2025-08-07",
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage(**usage_args) if status != "in_progress" else None,
        "user": None,
        "metadata": {},
    }


def message(text: str, msg_id: str = "msg_1") -> dict[str, Any]:
    return {
        "type": "message",
        "id": msg_id,
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def call(call_id: str, name: str, arguments: str, status: str = "completed", item_id: str = "fc_1") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


class Stream:
    """Builds a named-event SSE stream the way the Responses API sends it (sequence numbers included)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.add("response.created", response=response([], status="in_progress"))
        self.add("response.in_progress", response=response([], status="in_progress"))

    def add(self, kind: str, **fields: Any) -> Stream:
        self.events.append((kind, {"type": kind, "sequence_number": len(self.events), **fields}))
        return self

    def text(self, index: int, *deltas: str, item_id: str = "msg_1") -> Stream:
        item = {"type": "message", "id": item_id, "status": "in_progress", "role": "assistant", "content": []}
        self.add("response.output_item.added", output_index=index, item=item)
        part = {"type": "output_text", "text": "", "annotations": []}
        self.add("response.content_part.added", item_id=item_id, output_index=index, content_index=0, part=part)
        for delta in deltas:
            self.add(
                "response.output_text.delta",
                item_id=item_id, output_index=index, content_index=0, delta=delta, logprobs=[],
            )  # fmt: skip
        full = "".join(deltas)
        self.add(
            "response.output_text.done", item_id=item_id, output_index=index, content_index=0, text=full, logprobs=[]
        )
        done_part = {"type": "output_text", "text": full, "annotations": []}
        self.add("response.content_part.done", item_id=item_id, output_index=index, content_index=0, part=done_part)
        self.add("response.output_item.done", output_index=index, item=message(full, item_id))
        return self

    def call_added(self, index: int, call_id: str, name: str, item_id: str) -> Stream:
        return self.add(
            "response.output_item.added", output_index=index, item=call(call_id, name, "", "in_progress", item_id)
        )

    def args(self, index: int, delta: str, item_id: str) -> Stream:
        return self.add("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=delta)

    def call_done(self, index: int, call_id: str, name: str, arguments: str, item_id: str) -> Stream:
        self.add("response.function_call_arguments.done", item_id=item_id, output_index=index, arguments=arguments)
        return self.add(
            "response.output_item.done", output_index=index, item=call(call_id, name, arguments, "completed", item_id)
        )

    def end(self, kind: str, body: dict[str, Any]) -> Reply:
        self.add(kind, response=body)
        return sse_reply(self.events, named=True)

    def reply(self, *, cut: bool = False) -> Reply:
        return sse_reply(self.events, named=True, cut=cut)


def ask(text: str = "Hi", **kwargs: Any) -> ModelRequest:
    return ModelRequest([UserMessage(text)], **kwargs)


def collect() -> tuple[list[ModelEvent], Any]:
    events: list[ModelEvent] = []
    return events, events.append


# ---------------------------------------------------------------- text


async def test_text_plain_request_and_response(wire: WireServer) -> None:
    wire.queue(json_reply(response([message("Hello!")], inp=12, out=3, cached=4)))
    request = ModelRequest(
        [SystemMessage("Be brief."), UserMessage("Hi")],
        settings=ModelSettings(temperature=0.3, max_tokens=100, top_p=0.5),
    )
    result = await model(wire).respond(request)

    assert result.text == "Hello!"
    assert result.stop_reason is StopReason.END_TURN
    assert result.usage == Usage(input_tokens=12, output_tokens=3, cache_read_tokens=4)
    assert result.model == f"{MODEL}-2025-08-07"
    sent = wire.requests[0]
    assert sent.path == "/v1/responses"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.json == {
        "model": MODEL,
        "input": [{"type": "message", "role": "user", "content": "Hi"}],
        "instructions": "Be brief.",
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "temperature": 0.3,
        "max_output_tokens": 100,
        "top_p": 0.5,
    }


async def test_text_streaming_unicode_split(wire: WireServer) -> None:
    stream = Stream().text(0, "Grüße ", "aus 東", "京 🎉")
    wire.queue(stream.end("response.completed", response([message("Grüße aus 東京 🎉")], inp=5, out=7)))
    events, on_event = collect()
    result = await model(wire).respond(ask(), on_event)

    assert result.text == "Grüße aus 東京 🎉"
    assert merged(events) == [TextDelta("Grüße aus 東京 🎉")]  # deltas of one network read come as one
    assert result.usage == Usage(input_tokens=5, output_tokens=7)
    assert wire.requests[0].json["stream"] is True


async def test_non_reasoning_model_does_not_ask_for_encrypted_reasoning(wire: WireServer) -> None:
    wire.queue(json_reply(response([message("ok")])))
    await model(wire, "gpt-4.1").respond(ask())
    assert "include" not in wire.requests[0].json


# ---------------------------------------------------------------- tool calls


async def test_one_tool_call_with_reasoning_plain(wire: WireServer) -> None:
    output = [REASONING | {"status": None}, call("call_a", "get_weather", '{"city":"Paris"}')]
    wire.queue(json_reply(response(output, inp=20, out=30, reasoning=16)))
    result = await model(wire, reasoning={"effort": "low", "summary": "auto"}).respond(
        ask("Weather?", tools=(WEATHER,), tool_choice="required")
    )

    assert result.stop_reason is StopReason.TOOL_USE
    (tool_call,) = result.tool_calls
    assert (tool_call.id, tool_call.name, tool_call.arguments) == ("call_a", "get_weather", '{"city":"Paris"}')
    assert result.thinking == (ThinkingPart("Need the weather.", provider="openai-responses"),)
    assert result.provider_data == {"openai-responses": {"reasoning": [REASONING]}}
    assert result.usage == Usage(input_tokens=20, output_tokens=30, tool_calls=1, reasoning_tokens=16)
    body = wire.requests[0].json
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": WEATHER.parameters,
            "strict": False,
        }
    ]
    assert body["tool_choice"] == "required"
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}


async def test_parallel_calls_with_interleaved_argument_deltas(wire: WireServer) -> None:
    stream = (
        Stream()
        .add("response.output_item.added", output_index=0, item={"type": "reasoning", "id": "rs_1", "summary": []})
        .add(
            "response.reasoning_summary_text.delta",
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            delta="Two cities.",
        )
        .add("response.output_item.done", output_index=0, item=REASONING)
        .call_added(1, "call_a", "get_weather", "fc_a")
        .call_added(2, "call_b", "get_weather", "fc_b")
        .args(1, '{"city":', "fc_a")
        .args(2, '{"city":"Ro', "fc_b")
        .args(1, '"Paris"}', "fc_a")
        .args(2, 'me"}', "fc_b")
        .call_done(1, "call_a", "get_weather", '{"city":"Paris"}', "fc_a")
        .call_done(2, "call_b", "get_weather", '{"city":"Rome"}', "fc_b")
    )
    final = [
        REASONING,
        call("call_a", "get_weather", '{"city":"Paris"}', item_id="fc_a"),
        call("call_b", "get_weather", '{"city":"Rome"}', item_id="fc_b"),
    ]
    wire.queue(stream.end("response.completed", response(final)))
    events, on_event = collect()
    result = await model(wire).respond(ask(tools=(WEATHER,)), on_event)

    assert [(c.id, c.arguments) for c in result.tool_calls] == [
        ("call_a", '{"city":"Paris"}'),
        ("call_b", '{"city":"Rome"}'),
    ]
    assert merged(events) == merged(
        [
            ThinkingDelta("Two cities."),
            ToolCallDelta(0, "call_a", "get_weather"),
            ToolCallDelta(1, "call_b", "get_weather"),
            ToolCallDelta(0, arguments_delta='{"city":'),
            ToolCallDelta(1, arguments_delta='{"city":"Ro'),
            ToolCallDelta(0, arguments_delta='"Paris"}'),
            ToolCallDelta(1, arguments_delta='me"}'),
        ]
    )


async def test_text_then_call_with_empty_arguments(wire: WireServer) -> None:
    stream = (
        Stream()
        .text(0, "Let me check.")
        .call_added(1, "call_t", "now", "fc_t")
        .call_done(1, "call_t", "now", "{}", "fc_t")
    )
    wire.queue(stream.end("response.completed", response([message("Let me check."), call("call_t", "now", "{}")])))
    result = await model(wire).respond(ask(), collect()[1])
    assert result.text == "Let me check."
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [("call_t", "now", "{}")]
    assert result.stop_reason is StopReason.TOOL_USE


async def test_history_sends_reasoning_calls_and_outputs(wire: WireServer) -> None:
    wire.queue(json_reply(response([message("Sunny and rainy.")])))
    data = {"openai-responses": {"reasoning": [REASONING]}}
    messages = [
        SystemMessage("Be brief."),
        UserMessage("Weather?"),
        ToolCallMessage(
            tool_name="get_weather", tool_call_id="call_a", arguments={"city": "Paris"}, content="sunny",
            batch_id="b", message="Checking.", provider_data=data,
        ),
        ToolCallMessage(
            tool_name="get_weather", tool_call_id="toolu:01/x", arguments={}, raw_arguments="{bad json",
            content="invalid JSON arguments", status=ToolCallStatus.ERROR, batch_id="b",
        ),
        AssistantMessage("Done.", thinking=(ThinkingPart("x", signature="s", provider="anthropic"),)),
        UserMessage("Thanks"),
    ]  # fmt: skip
    await model(wire).respond(ModelRequest(messages, (WEATHER,)))

    body = wire.requests[0].json
    assert body["instructions"] == "Be brief."
    items = body["input"]
    mapped = items[4]["call_id"]
    assert mapped.startswith("call_toolu01x_") and mapped != "toolu:01/x"
    assert items == [
        {"type": "message", "role": "user", "content": "Weather?"},
        REASONING,
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
        },
        {"type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call", "call_id": mapped, "name": "get_weather", "arguments": "{bad json"},
        {"type": "function_call_output", "call_id": "call_a", "output": "sunny"},
        {"type": "function_call_output", "call_id": mapped, "output": "Error: invalid JSON arguments"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        },
        {"type": "message", "role": "user", "content": "Thanks"},
    ]


# ---------------------------------------------------------------- stop reasons


async def test_refusal(wire: WireServer) -> None:
    refusal = {
        "type": "message",
        "id": "msg_r",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "I can't help with that."}],
    }
    wire.queue(json_reply(response([refusal])))
    result = await model(wire).respond(ask())
    assert result.stop_reason is StopReason.REFUSAL
    assert result.refusal == "I can't help with that."
    assert result.text == ""


async def test_max_tokens_in_the_middle_of_arguments(wire: WireServer) -> None:
    stream = Stream().call_added(0, "call_a", "get_weather", "fc_a").args(0, '{"ci', "fc_a")
    body = response([call("call_a", "get_weather", '{"ci', "incomplete", "fc_a")], "incomplete", "max_output_tokens")
    wire.queue(stream.end("response.incomplete", body))
    events, on_event = collect()
    result = await model(wire).respond(ask(tools=(WEATHER,)), on_event)
    assert result.stop_reason is StopReason.MAX_TOKENS
    assert result.tool_calls == ()  # a cut-off call is never run
    assert merged(events) == [ToolCallDelta(0, "call_a", "get_weather", '{"ci')]


async def test_max_tokens_plain_text(wire: WireServer) -> None:
    wire.queue(json_reply(response([message("Partial")], "incomplete", "max_output_tokens")))
    result = await model(wire).respond(ask())
    assert (result.stop_reason, result.text) == (StopReason.MAX_TOKENS, "Partial")


async def test_structured_output_format(wire: WireServer) -> None:
    wire.queue(json_reply(response([message('{"n": 1}')])))
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    await model(wire).respond(ask(output=OutputSchema("Answer", schema, "The answer.", strict=True)))
    assert wire.requests[0].json["text"] == {
        "format": {
            "type": "json_schema",
            "name": "Answer",
            "schema": schema,
            "strict": True,
            "description": "The answer.",
        }
    }


# ---------------------------------------------------------------- errors


def error(
    status: int, message: str, kind: str, code: str | None = None, headers: dict[str, str] | None = None
) -> Reply:
    return json_reply({"error": {"message": message, "type": kind, "param": None, "code": code}}, status, headers)


async def test_401_is_not_retried(wire: WireServer) -> None:
    wire.queue(error(401, "Incorrect API key provided: sk-test.", "invalid_request_error", "invalid_api_key"))
    with pytest.raises(AuthenticationError) as info:
        await model(wire).respond(ask())
    assert info.value.status_code == 401
    assert len(wire.requests) == 1
    # The key echoed by the server is scrubbed from the message, the body and the chained cause.
    assert "sk-test" not in str(info.value) and "sk-test" not in json.dumps(info.value.body)
    assert info.value.__cause__ is None


async def test_429_retry_after_then_ok(wire: WireServer) -> None:
    wire.queue(
        error(429, "Rate limit reached.", "requests", "rate_limit_exceeded", {"retry-after": "0"}),
        json_reply(response([message("ok")])),
    )
    result = await model(wire).respond(ask())
    assert result.text == "ok"
    assert len(wire.requests) == 2


async def test_429_exhausted_carries_retry_after(wire: WireServer) -> None:
    wire.queue(*[error(429, "Slow down.", "requests", "rate_limit_exceeded", {"retry-after": "0"}) for _ in range(2)])
    with pytest.raises(RateLimitError) as info:
        await model(wire, max_retries=1).respond(ask())
    assert info.value.retry_after == 0
    assert len(wire.requests) == 2


async def test_500_is_overloaded(wire: WireServer) -> None:
    wire.queue(error(500, "The server had an error.", "server_error", headers={"retry-after": "0"}))
    with pytest.raises(ProviderOverloadedError) as info:
        await model(wire, max_retries=0).respond(ask(), collect()[1])
    assert info.value.status_code == 500


async def test_400_context_length(wire: WireServer) -> None:
    message_text = "Your input exceeds the context window of this model. Please adjust your input and try again."
    wire.queue(error(400, message_text, "invalid_request_error", "context_length_exceeded"))
    with pytest.raises(ContextLengthError):
        await model(wire).respond(ask())
    assert len(wire.requests) == 1


async def test_other_400(wire: WireServer) -> None:
    wire.queue(error(400, "Invalid schema for function 'x'.", "invalid_request_error", "invalid_function_parameters"))
    with pytest.raises(BadRequestError):
        await model(wire).respond(ask())


async def test_failed_response_in_stream(wire: WireServer) -> None:
    body = response([], "failed")
    body["error"] = {"code": "server_error", "message": "The model failed."}
    wire.queue(Stream().end("response.failed", body))
    with pytest.raises(ProviderOverloadedError, match="The model failed"):
        await model(wire).respond(ask(), collect()[1])


async def test_error_event_in_stream(wire: WireServer) -> None:
    stream = Stream().add("error", code="context_length_exceeded", message="Too long.", param=None)
    wire.queue(stream.reply())
    with pytest.raises(ContextLengthError):
        await model(wire).respond(ask(), collect()[1])


async def test_invalid_request_event_in_stream(wire: WireServer) -> None:
    stream = Stream().add("error", code="invalid_prompt", message="Prompt flagged.", param=None)
    wire.queue(stream.reply())
    with pytest.raises(BadRequestError, match="Prompt flagged"):
        await model(wire).respond(ask(), collect()[1])


async def test_truncated_stream(wire: WireServer) -> None:
    wire.queue(Stream().text(0, "Hel").reply(cut=True))
    events, on_event = collect()
    with pytest.raises(ProviderConnectionError):
        await model(wire).respond(ask(), on_event)
    assert events == [TextDelta("Hel")]


async def test_stream_without_terminal_event(wire: WireServer) -> None:
    wire.queue(Stream().text(0, "Hel").reply())
    with pytest.raises(ProviderConnectionError, match="ended before"):
        await model(wire).respond(ask(), collect()[1])


def test_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        get_model("openai-responses:gpt-5")


async def test_stop_and_seed_are_rejected(wire: WireServer) -> None:
    with pytest.raises(ConfigurationError, match="stop"):
        await model(wire).respond(ask(settings=ModelSettings(stop=("x",))))
    assert wire.requests == []


def test_event_payloads_are_valid_json() -> None:
    for _, payload in Stream().text(0, "a").events:
        assert json.loads(json.dumps(payload))["type"]


# ---------------------------------------------------------------- end to end through the loop


async def test_agent_runs_a_tool_and_sends_the_result_back(wire: WireServer) -> None:
    from tooloop import Agent

    def get_weather(city: str) -> str:
        """Weather for a city."""
        return f"sunny in {city}"

    def check_result(recorded: Recorded) -> Reply:
        items = recorded.json["input"]
        expected = {"type": "function_call_output", "call_id": "call_a", "output": "sunny in Paris"}
        if items[-1] != expected:
            return error(400, f"unexpected tool result: {items[-1]}", "invalid_request_error")
        return json_reply(response([message("It is sunny in Paris.")], inp=40, out=8))

    first = response([REASONING, call("call_a", "get_weather", '{"city":"Paris"}')], inp=20, out=12)
    wire.queue(json_reply(first), check_result)
    result = await Agent(model(wire), system="Be brief.", tools=[get_weather]).run("Weather in Paris?")

    assert result.text == "It is sunny in Paris."
    assert result.stop_reason is StopReason.END_TURN
    assert result.usage.input_tokens == 60 and result.usage.requests == 2
    second = wire.requests[1].json
    assert second["instructions"] == "Be brief."
    assert second["input"][1:] == [
        REASONING,
        {"type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_a", "output": "sunny in Paris"},
    ]
    assert second["tools"][0]["name"] == "get_weather"


# ---------------------------------------------------------------- the fields read, the rest skipped


def one_read(reply: Reply) -> Reply:
    """``reply`` with all its events in one HTTP chunk (one network read on the lean transport)."""
    assert reply.chunks is not None
    return Reply(reply.status, reply.headers, chunks=[b"".join(reply.chunks)])


async def test_plain_answer_without_output_reports_the_whole_body(wire: WireServer) -> None:
    body = {"object": "response", "status": "completed", "detail": {"why": "no output here"}}
    wire.queue(json_reply(body))
    with pytest.raises(ModelResponseError, match="without an output list") as raised:
        await model(wire).respond(ask())
    assert raised.value.body == body


async def test_plain_answer_with_a_lone_surrogate(wire: WireServer) -> None:
    # orjson and msgspec refuse "\ud83d" alone; the standard library reads it, and so does the adapter
    raw = json.dumps(response([message("half \ud83d here")])).encode()
    wire.queue(Reply(200, {"content-type": "application/json"}, raw))
    answer = await model(wire).respond(ask())
    assert answer.text == "half \ud83d here"
    assert answer.usage == Usage(input_tokens=10, output_tokens=5)


async def test_plain_answer_read_from_its_fields(wire: WireServer) -> None:
    body = response([REASONING, message("Checking."), call("call_a", "get_weather", '{"city":"Rome"}')], out=9)
    body["tools"] = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": True}]
    body["instructions"] = "Be brief."
    wire.queue(json_reply(body))
    answer = await model(wire).respond(ask())
    assert answer.text == "Checking."
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [("call_a", "get_weather", '{"city":"Rome"}')]
    assert answer.stop_reason is StopReason.TOOL_USE
    assert answer.response_id == "resp_1" and answer.model == body["model"]
    assert answer.provider_data == {"openai-responses": {"reasoning": [REASONING]}}
    assert answer.thinking == (ThinkingPart("Need the weather.", provider="openai-responses"),)


async def test_stream_in_one_read_with_a_field_of_an_odd_type(wire: WireServer) -> None:
    # an item that is no object: the piece's events are parsed one by one, as a whole
    final = response([message("Hi"), call("call_a", "get_weather", '{"city":"Rome"}', item_id="fc_a")])
    stream = Stream().text(0, "H", "i").add("response.output_item.added", output_index=7, item="odd")
    stream.call_added(1, "call_a", "get_weather", "fc_a").args(1, '{"city":"Rome"}', "fc_a")
    stream.call_done(1, "call_a", "get_weather", '{"city":"Rome"}', "fc_a")
    wire.queue(one_read(stream.end("response.completed", final)))
    events, on_event = collect()
    answer = await model(wire).respond(ask(), on_event)
    assert answer.text == "Hi" and answer.tool_calls[0].arguments == '{"city":"Rome"}'
    assert merged(events) == [
        TextDelta("Hi"),
        ToolCallDelta(0, "call_a", "get_weather", '{"city":"Rome"}'),
    ]


async def test_error_event_in_one_read_keeps_its_fields(wire: WireServer) -> None:
    stream = Stream().text(0, "Hel")
    stream.add("error", code="context_length_exceeded", message="Too long.", param="input")
    error_event = stream.events[-1][1]
    wire.queue(one_read(stream.reply()))
    events, on_event = collect()
    with pytest.raises(ContextLengthError, match="Too long") as raised:
        await model(wire).respond(ask(), on_event)
    assert raised.value.body == error_event
    assert events == [TextDelta("Hel")]


async def test_events_of_no_use_in_one_read_change_nothing(wire: WireServer) -> None:
    # the first two events repeat the request, the *.done and part events repeat the deltas: read
    # in one piece, they are left unparsed, and the answer and its deltas are the same
    final = response([REASONING, message("Hi"), call("call_a", "get_weather", '{"city":"Rome"}', item_id="fc_a")])
    stream = Stream()
    summary = {"type": "summary_text", "text": ""}
    stream.add("response.reasoning_summary_part.added", item_id="rs_1", output_index=0, summary_index=0, part=summary)
    stream.add("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0, summary_index=0, delta="Need")
    stream.add("response.reasoning_summary_text.done", item_id="rs_1", output_index=0, summary_index=0, text="Need")
    done = {"type": "summary_text", "text": "Need"}
    stream.add("response.reasoning_summary_part.done", item_id="rs_1", output_index=0, summary_index=0, part=done)
    stream.text(1, "H", "i")
    note = {"type": "url_citation", "url": "https://example.com", "title": "x", "start_index": 0, "end_index": 1}
    stream.add("response.output_text.annotation.added", item_id="msg_1", output_index=1, annotation=note)
    stream.call_added(2, "call_a", "get_weather", "fc_a").args(2, '{"city":', "fc_a").args(2, '"Rome"}', "fc_a")
    stream.call_done(2, "call_a", "get_weather", '{"city":"Rome"}', "fc_a")
    wire.queue(one_read(stream.end("response.completed", final)))
    events, on_event = collect()
    answer = await model(wire).respond(ask(), on_event)
    assert answer.text == "Hi" and answer.tool_calls[0].arguments == '{"city":"Rome"}'
    assert answer.thinking == (ThinkingPart("Need the weather.", provider="openai-responses"),)
    assert merged(events) == [
        ThinkingDelta("Need"),
        TextDelta("Hi"),
        ToolCallDelta(0, "call_a", "get_weather", '{"city":"Rome"}'),
    ]


async def test_an_error_object_in_place_of_an_event_in_one_read(wire: WireServer) -> None:
    stream = Stream().text(0, "Hel")
    stream.events[1] = ("response.in_progress", {"error": {"message": "Overloaded.", "type": "server_error"}})
    wire.queue(one_read(stream.reply()))
    events, on_event = collect()
    with pytest.raises(ProviderOverloadedError, match="Overloaded"):
        await model(wire).respond(ask(), on_event)
    assert events == []


async def test_a_payload_listener_sees_whole_answers(wire: WireServer) -> None:
    from tooloop.models.payloads import ProviderPayload, listen

    body = response([message("Hello!")])
    body["tools"] = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": True}]
    stream = Stream().text(0, "Hello!")
    wire.queue(json_reply(body), one_read(stream.end("response.completed", body)))
    seen: list[ProviderPayload] = []
    llm = model(wire)
    with listen(seen.append):
        assert (await llm.respond(ask())).text == "Hello!"
        assert (await llm.respond(ask(), collect()[1])).text == "Hello!"
    answers = [p for p in seen if p.direction == "response"]
    assert answers[0].data == body and not answers[0].streamed
    assert answers[1].data == [payload for _, payload in stream.events] and answers[1].streamed
