"""The Anthropic adapter through the real ``anthropic`` SDK against a scripted Messages API server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.support.wire import Reply, WireServer, json_reply, sse_reply
from tooloop.errors import (
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ContextLengthError,
    ProviderConnectionError,
    ProviderOverloadedError,
    RateLimitError,
)
from tooloop.events import ModelEvent, TextDelta, ThinkingDelta, ToolCallDelta
from tooloop.messages import (
    AssistantMessage,
    ModelResponse,
    StopReason,
    SystemMessage,
    ThinkingPart,
    ToolCallMessage,
    ToolCallStatus,
    Usage,
    UserMessage,
)
from tooloop.models import ModelRequest, ModelSettings, OutputSchema, ToolDefinition, get_model
from tooloop.models.anthropic import AnthropicModel, create

KEY = "sk-ant-test-secret-key"
WEATHER = ToolDefinition(
    "get_weather", "Weather for a city.", {"type": "object", "properties": {"city": {"type": "string"}}}
)


_OPEN: list[AnthropicModel] = []


def make(wire: WireServer, model: str = aw.MODEL, **options: Any) -> AnthropicModel:
    created = create(model, provider="anthropic", base_url=wire.url, api_key=KEY, settings=None, **options)
    _OPEN.append(created)
    return created


@pytest.fixture(autouse=True)
async def _close_models() -> AsyncIterator[None]:
    yield
    while _OPEN:
        await _OPEN.pop().aclose()


def ask(text: str = "Hi", **kwargs: Any) -> ModelRequest:
    return ModelRequest([SystemMessage("Be brief."), UserMessage(text)], **kwargs)


async def respond_streaming(model: AnthropicModel, request: ModelRequest) -> tuple[ModelResponse, list[ModelEvent]]:
    events: list[ModelEvent] = []
    response = await model.respond(request, events.append)
    return response, events


def body(wire: WireServer, index: int = -1) -> Any:
    return aw.uncached(wire.requests[index].json)


# --- text ------------------------------------------------------------------------------------------


async def test_streamed_text(wire: WireServer) -> None:
    wire.queue(aw.streamed([{"type": "text", "text": "Hello there, friend."}]))
    response, events = await respond_streaming(make(wire), ask())

    assert response.text == "Hello there, friend."
    assert response.stop_reason is StopReason.END_TURN
    assert response.tool_calls == ()
    assert response.usage == Usage(input_tokens=12, output_tokens=7)
    assert response.model == aw.MODEL
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there, friend."
    sent = body(wire)
    assert wire.requests[0].path == "/v1/messages"
    assert wire.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert sent["stream"] is True
    assert sent["system"] == "Be brief."
    assert sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    assert sent["max_tokens"] == 64_000  # claude-haiku-4-5's output limit from the profile table
    assert "tools" not in sent and "tool_choice" not in sent


async def test_plain_text_without_listener(wire: WireServer) -> None:
    wire.queue(aw.plain([{"type": "text", "text": "Plain answer."}]))
    model = make(wire)
    response = await model.respond(ask(settings=ModelSettings(max_tokens=1000, temperature=0.2, top_p=0.9)))

    assert response.text == "Plain answer."
    assert response.stop_reason is StopReason.END_TURN
    sent = body(wire)
    assert "stream" not in sent
    assert sent["max_tokens"] == 1000
    assert sent["temperature"] == 0.2 and sent["top_p"] == 0.9


async def test_large_max_tokens_without_listener_streams_quietly(wire: WireServer) -> None:
    wire.queue(aw.streamed([{"type": "text", "text": "quiet"}]))
    response = await make(wire).respond(ask())
    assert response.text == "quiet"
    assert body(wire)["stream"] is True


async def test_forced_plain_with_large_max_tokens(wire: WireServer) -> None:
    wire.queue(aw.plain([{"type": "text", "text": "long plain"}]))
    response = await make(wire).respond(ask(settings=ModelSettings(stream=False)))
    assert response.text == "long plain"
    assert "stream" not in body(wire)


# --- tool calls ------------------------------------------------------------------------------------


async def test_one_tool_call(wire: WireServer) -> None:
    call = {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}
    wire.queue(aw.streamed([call], "tool_use"))
    response, events = await respond_streaming(make(wire), ask(tools=(WEATHER,)))

    assert response.stop_reason is StopReason.TOOL_USE
    assert [(c.id, c.name) for c in response.tool_calls] == [("toolu_01", "get_weather")]
    assert json.loads(response.tool_calls[0].arguments) == {"city": "Paris"}  # type: ignore[arg-type]
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    assert (deltas[0].index, deltas[0].tool_call_id, deltas[0].name) == (0, "toolu_01", "get_weather")
    assert "".join(d.arguments_delta for d in deltas) == json.dumps({"city": "Paris"})
    sent = body(wire)
    assert sent["tools"] == [
        {"name": "get_weather", "description": "Weather for a city.", "input_schema": dict(WEATHER.parameters)}
    ]
    assert sent["tool_choice"] == {"type": "auto"}


async def test_parallel_calls_with_interleaved_fragments(wire: WireServer) -> None:
    tool = {"type": "tool_use", "name": "get_weather", "input": {}}
    events = [
        aw.start(aw.usage(30, 40)),
        aw.block_start(0, {"type": "text", "text": ""}),
        aw.delta(0, {"type": "text_delta", "text": "Checking both."}),
        aw.block_stop(0),
        aw.block_start(1, {**tool, "id": "toolu_a"}),
        aw.block_start(2, {**tool, "id": "toolu_b"}),
        aw.delta(1, {"type": "input_json_delta", "partial_json": ""}),
        aw.delta(1, {"type": "input_json_delta", "partial_json": '{"city": "Pa'}),
        aw.delta(2, {"type": "input_json_delta", "partial_json": '{"city"'}),
        aw.PING,
        aw.delta(1, {"type": "input_json_delta", "partial_json": 'ris"}'}),
        aw.delta(2, {"type": "input_json_delta", "partial_json": ': "Oslo"}'}),
        aw.block_stop(1),
        aw.block_stop(2),
        aw.message_delta("tool_use", 40),
        aw.STOP,
    ]
    wire.queue(sse_reply(events, named=True))
    response, seen = await respond_streaming(make(wire), ask(tools=(WEATHER,)))

    assert response.text == "Checking both."
    assert [c.id for c in response.tool_calls] == ["toolu_a", "toolu_b"]
    assert [json.loads(c.arguments) for c in response.tool_calls] == [{"city": "Paris"}, {"city": "Oslo"}]  # type: ignore[arg-type]
    assert response.usage == Usage(input_tokens=30, output_tokens=40)
    by_index: dict[int, str] = {}
    for e in seen:
        if isinstance(e, ToolCallDelta):
            by_index[e.index] = by_index.get(e.index, "") + e.arguments_delta
    assert by_index == {0: '{"city": "Paris"}', 1: '{"city": "Oslo"}'}


async def test_text_then_tool_call_plain(wire: WireServer) -> None:
    content = [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Rome"}},
    ]
    wire.queue(aw.plain(content, "tool_use"))
    response = await make(wire).respond(ask(tools=(WEATHER,), settings=ModelSettings(max_tokens=500)))
    assert response.text == "Let me look."
    assert response.tool_calls[0].arguments == {"city": "Rome"}
    assert response.stop_reason is StopReason.TOOL_USE


async def test_empty_argument_call(wire: WireServer) -> None:
    events = [
        aw.start(aw.usage()),
        aw.block_start(0, {"type": "tool_use", "id": "toolu_e", "name": "now", "input": {}}),
        aw.delta(0, {"type": "input_json_delta", "partial_json": ""}),
        aw.block_stop(0),
        aw.message_delta("tool_use", 7),
        aw.STOP,
    ]
    wire.queue(sse_reply(events, named=True))
    response, _ = await respond_streaming(make(wire), ask())
    assert response.tool_calls[0].name == "now"
    assert response.tool_calls[0].arguments == {}


async def test_unicode_split_across_network_chunks(wire: WireServer) -> None:
    text = "Grüße aus Köln 🌧️ — 東京"
    raw = b"".join(
        f"event: {name}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()
        for name, payload in aw.stream_events([{"type": "text", "text": text}])
    )
    chunks = [raw[i : i + 7] for i in range(0, len(raw), 7)]  # cuts through multi-byte characters
    wire.queue(Reply(200, {"content-type": "text/event-stream"}, chunks=chunks))
    response, events = await respond_streaming(make(wire), ask())
    assert response.text == text
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text


async def test_refusal(wire: WireServer) -> None:
    wire.queue(aw.streamed([{"type": "text", "text": "I can't help with that."}], "refusal"))
    response, _ = await respond_streaming(make(wire), ask())
    assert response.stop_reason is StopReason.REFUSAL
    assert response.refusal == "I can't help with that."


async def test_max_tokens_cuts_tool_input(wire: WireServer) -> None:
    events = [
        aw.start(aw.usage()),
        aw.block_start(0, {"type": "tool_use", "id": "toolu_x", "name": "get_weather", "input": {}}),
        aw.delta(0, {"type": "input_json_delta", "partial_json": '{"city": "Par'}),
        aw.block_stop(0),
        aw.message_delta("max_tokens", 50),
        aw.STOP,
    ]
    wire.queue(sse_reply(events, named=True))
    response, _ = await respond_streaming(make(wire), ask(tools=(WEATHER,)))
    assert response.stop_reason is StopReason.MAX_TOKENS  # the loop never runs calls of such a response
    assert response.tool_calls[0].arguments == '{"city": "Par'


@pytest.mark.parametrize(
    ("wire_reason", "expected"), [("pause_turn", StopReason.PAUSE_TURN), ("stop_sequence", StopReason.END_TURN)]
)
async def test_other_stop_reasons(wire: WireServer, wire_reason: str, expected: StopReason) -> None:
    wire.queue(aw.streamed([{"type": "text", "text": "partial"}], wire_reason))
    response, _ = await respond_streaming(make(wire), ask(settings=ModelSettings(stop=("END",))))
    assert response.stop_reason is expected
    assert body(wire)["stop_sequences"] == ["END"]


# --- thinking ---------------------------------------------------------------------------------------


async def test_thinking_round_trips_with_its_signature(wire: WireServer) -> None:
    content = [
        {"type": "thinking", "thinking": "The user wants weather; call the tool.", "signature": "sig-abc=="},
        {"type": "redacted_thinking", "data": "opaque-redacted"},
        {"type": "tool_use", "id": "toolu_t", "name": "get_weather", "input": {"city": "Lima"}},
    ]
    wire.queue(aw.streamed(content, "tool_use"))
    thinking_option = {"type": "enabled", "budget_tokens": 2000}
    model = make(wire, thinking=thinking_option)
    response, events = await respond_streaming(model, ask(tools=(WEATHER,)))

    assert response.thinking == (
        ThinkingPart("The user wants weather; call the tool.", "sig-abc==", provider="anthropic"),
        ThinkingPart("", "opaque-redacted", redacted=True, provider="anthropic"),
    )
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == content[0]["thinking"]
    assert body(wire, 0)["thinking"] == thinking_option

    foreign = ThinkingPart("openai reasoning", "enc", provider="openai")
    call = ToolCallMessage(
        tool_name="get_weather",
        tool_call_id="toolu_t",
        arguments={"city": "Lima"},
        content="18°C",
        thinking=(*response.thinking, foreign),
    )
    wire.queue(aw.streamed([{"type": "text", "text": "It is 18°C."}]))
    await respond_streaming(model, ModelRequest([UserMessage("Weather in Lima?"), call], (WEATHER,)))
    assistant = body(wire, 1)["messages"][1]
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "The user wants weather; call the tool.", "signature": "sig-abc=="},
            {"type": "redacted_thinking", "data": "opaque-redacted"},
            {"type": "tool_use", "id": "toolu_t", "name": "get_weather", "input": {"city": "Lima"}},
        ],
    }


# --- request mapping ----------------------------------------------------------------------------------


async def test_history_mapping(wire: WireServer) -> None:
    batch = "b1"
    history = [
        SystemMessage("Rule one."),
        SystemMessage("Rule two."),
        UserMessage("Weather in Paris and Oslo?"),
        ToolCallMessage(
            tool_name="get_weather",
            tool_call_id="call_abc123",  # an OpenAI-style id: valid, kept
            arguments={"city": "Paris"},
            content="21°C",
            message="Checking.",
            batch_id=batch,
        ),
        ToolCallMessage(
            tool_name="get_weather",
            tool_call_id="functions.get_weather:1",  # colon and dot: rewritten
            raw_arguments='{"city": "Oslo"',
            content="arguments are not valid JSON",
            status=ToolCallStatus.ERROR,
            batch_id=batch,
        ),
        UserMessage("Also, be quick."),
        AssistantMessage("   "),  # whitespace-only text is never sent
        UserMessage(""),
    ]
    wire.queue(aw.streamed([{"type": "text", "text": "Done."}]))
    await respond_streaming(make(wire), ModelRequest(history, (WEATHER,), tool_choice="required"))

    sent = body(wire)
    assert sent["system"] == "Rule one.\n\nRule two."
    rewritten = sent["messages"][1]["content"][2]["id"]
    assert rewritten != "functions.get_weather:1"
    assert all(ch.isalnum() or ch in "_-" for ch in rewritten) and len(rewritten) <= 64
    assert sent["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Oslo?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "call_abc123", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": rewritten, "name": "get_weather", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_abc123", "is_error": False, "content": "21°C"},
                {
                    "type": "tool_result",
                    "tool_use_id": rewritten,
                    "is_error": True,
                    "content": "Error: arguments are not valid JSON",
                },
                {"type": "text", "text": "Also, be quick."},
            ],
        },
    ]
    assert sent["tool_choice"] == {"type": "any"}


async def test_tool_history_without_tools_declares_them_unusable(wire: WireServer) -> None:
    history = [
        UserMessage("Time?"),
        ToolCallMessage(tool_name="clock", tool_call_id="toolu_c", content="12:00"),
        AssistantMessage("It is noon."),
        UserMessage("Thanks, and summarise."),
    ]
    wire.queue(aw.streamed([{"type": "text", "text": "Summary."}]))
    await respond_streaming(make(wire), ModelRequest(history))
    sent = body(wire)
    assert [t["name"] for t in sent["tools"]] == ["clock"]
    assert sent["tool_choice"] == {"type": "none"}
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user", "assistant", "user"]


async def test_settings_extra_and_parallel_flag(wire: WireServer) -> None:
    wire.queue(aw.streamed([{"type": "text", "text": "ok"}]))
    settings = ModelSettings(parallel_tool_calls=False, extra={"metadata": {"user_id": "u-1"}})
    await respond_streaming(make(wire), ask(tools=(WEATHER,), settings=settings))
    sent = body(wire)
    assert sent["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert sent["metadata"] == {"user_id": "u-1"}


async def test_native_output_through_a_forced_tool(wire: WireServer) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    output = OutputSchema("final result", schema, "The final answer.")
    call = {"type": "tool_use", "id": "toolu_o", "name": "final_result", "input": {"answer": 42}}
    wire.queue(aw.streamed([call], "tool_use"))
    response, _ = await respond_streaming(make(wire, native_output=True), ask(output=output))

    assert response.tool_calls == ()
    assert json.loads(response.text) == {"answer": 42}
    assert response.stop_reason is StopReason.END_TURN
    sent = body(wire)
    assert sent["tools"] == [{"name": "final_result", "description": "The final answer.", "input_schema": schema}]
    assert sent["tool_choice"] == {"type": "tool", "name": "final_result"}


async def test_native_output_with_thinking_only_offers_the_tool(wire: WireServer) -> None:
    wire.queue(aw.streamed([{"type": "text", "text": '{"answer": 1}'}]))
    model = make(wire, native_output=True, thinking={"type": "enabled", "budget_tokens": 1024})
    response, _ = await respond_streaming(model, ask(tools=(WEATHER,), output=OutputSchema("r", {"type": "object"})))
    assert response.text == '{"answer": 1}'
    sent = body(wire)
    assert [t["name"] for t in sent["tools"]] == ["get_weather", "r"]
    assert sent["tool_choice"] == {"type": "auto"}


async def test_output_schema_without_native_output_is_left_to_the_loop(wire: WireServer) -> None:
    wire.queue(aw.streamed([{"type": "text", "text": '{"answer": 1}'}]))
    await respond_streaming(make(wire), ask(output=OutputSchema("r", {"type": "object"})))
    sent = body(wire)
    assert "tools" not in sent and sent["system"] == "Be brief."


# --- streamed and plain agree -------------------------------------------------------------------------

SCENARIOS: dict[str, tuple[list[dict[str, Any]], str, dict[str, Any]]] = {
    "text": ([{"type": "text", "text": "Some answer that spans chunks."}], "end_turn", aw.usage(5, 9)),
    "tools": (
        [
            {"type": "text", "text": "Two calls."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}},
        ],
        "tool_use",
        aw.usage(100, 30, cache_read_input_tokens=50, cache_creation_input_tokens=20),
    ),
    "thinking": (
        [
            {"type": "thinking", "thinking": "Hmm.", "signature": "s1"},
            {"type": "text", "text": "Answer."},
        ],
        "max_tokens",
        aw.usage(3, 4),
    ),
    "refusal": ([{"type": "text", "text": "No."}], "refusal", aw.usage(1, 1)),
}


def normalised(response: ModelResponse) -> Any:
    calls = [
        (c.id, c.name, json.loads(c.arguments) if isinstance(c.arguments, str) else dict(c.arguments))
        for c in response.tool_calls
    ]
    return (response.text, calls, response.stop_reason, response.usage, response.thinking, response.refusal)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_streamed_and_plain_give_the_same_response(wire: WireServer, name: str) -> None:
    content, reason, use = SCENARIOS[name]
    wire.queue(aw.streamed(content, reason, use), aw.plain(content, reason, use))
    model = make(wire)
    streamed, _ = await respond_streaming(model, ask(tools=(WEATHER,)))
    plain = await model.respond(ask(tools=(WEATHER,), settings=ModelSettings(stream=False)))
    assert normalised(streamed) == normalised(plain)
    if name == "tools":
        assert streamed.usage == Usage(input_tokens=170, output_tokens=30, cache_read_tokens=50, cache_write_tokens=20)


# --- errors ---------------------------------------------------------------------------------------------


async def test_401_is_not_retried(wire: WireServer) -> None:
    wire.queue(aw.error_reply(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(AuthenticationError) as info:
        await make(wire).respond(ask())
    assert len(wire.requests) == 1
    assert info.value.status_code == 401
    assert KEY not in str(info.value) and KEY not in repr(info.value.body)


async def test_429_with_retry_after_is_retried(wire: WireServer) -> None:
    wire.queue(
        aw.error_reply(429, "rate_limit_error", "slow down", {"retry-after": "0"}),
        aw.plain([{"type": "text", "text": "after retry"}]),
    )
    response = await make(wire).respond(ask(settings=ModelSettings(max_tokens=100)))
    assert response.text == "after retry"
    assert len(wire.requests) == 2


async def test_429_exhausted_carries_retry_after(wire: WireServer) -> None:
    wire.queue(aw.error_reply(429, "rate_limit_error", "slow down", {"retry-after": "7"}))
    with pytest.raises(RateLimitError) as info:
        await make(wire, max_retries=0).respond(ask())
    assert info.value.retry_after == 7.0
    assert info.value.retryable


@pytest.mark.parametrize(("status", "kind"), [(529, "overloaded_error"), (500, "api_error")])
async def test_server_errors_are_overloaded(wire: WireServer, status: int, kind: str) -> None:
    wire.queue(aw.error_reply(status, kind, "try later"))
    with pytest.raises(ProviderOverloadedError) as info:
        await make(wire, max_retries=0).respond(ask())
    assert info.value.status_code == status


async def test_500_then_success_with_sdk_retry(wire: WireServer) -> None:
    wire.queue(
        aw.error_reply(500, "api_error", "oops", {"retry-after-ms": "1"}), aw.streamed([{"type": "text", "text": "ok"}])
    )
    response, _ = await respond_streaming(make(wire, max_retries=1), ask())
    assert response.text == "ok" and len(wire.requests) == 2


async def test_prompt_too_long_is_context_length(wire: WireServer) -> None:
    wire.queue(aw.error_reply(400, "invalid_request_error", "prompt is too long: 208656 tokens > 200000 maximum"))
    with pytest.raises(ContextLengthError):
        await make(wire).respond(ask())
    assert len(wire.requests) == 1


async def test_other_400_is_bad_request(wire: WireServer) -> None:
    wire.queue(aw.error_reply(400, "invalid_request_error", "messages: text content blocks must be non-empty"))
    with pytest.raises(BadRequestError, match="non-empty"):
        await make(wire).respond(ask())


async def test_overloaded_mid_stream(wire: WireServer) -> None:
    events = [
        aw.start(aw.usage()),
        aw.block_start(0, {"type": "text", "text": ""}),
        aw.delta(0, {"type": "text_delta", "text": "Half"}),
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ]
    wire.queue(sse_reply(events, named=True))
    with pytest.raises(ProviderOverloadedError, match="Overloaded"):
        await respond_streaming(make(wire), ask())


@pytest.mark.parametrize("cut", [True, False])
async def test_stream_without_message_stop_is_a_connection_error(wire: WireServer, cut: bool) -> None:
    events = aw.stream_events([{"type": "text", "text": "Half an answer"}])[:-2]
    wire.queue(sse_reply(events, named=True, cut=cut))
    with pytest.raises(ProviderConnectionError):
        await respond_streaming(make(wire, max_retries=0), ask())


async def test_unreadable_plain_body(wire: WireServer) -> None:
    wire.queue(Reply(200, {"content-type": "application/json"}, b"{not json"))
    with pytest.raises(Exception) as info:
        await make(wire).respond(ask(settings=ModelSettings(max_tokens=10)))
    assert type(info.value).__name__ == "ModelResponseError"


# --- configuration ---------------------------------------------------------------------------------------


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        create(aw.MODEL, provider="anthropic", base_url=None, api_key=None, settings=None)


def test_unknown_option_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="temperatur"):
        create(aw.MODEL, provider="anthropic", base_url=None, api_key=KEY, settings=None, temperatur=1)


def test_key_not_in_repr(wire: WireServer) -> None:
    model = make(wire)
    assert KEY not in repr(model)
    assert repr(model) == f"AnthropicModel(name={aw.MODEL!r}, provider='anthropic', base_url={wire.url!r})"
    assert model.provider == "anthropic" and model.name == aw.MODEL


async def test_environment_key_and_base_url(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", wire.url)
    wire.queue(aw.plain([{"type": "text", "text": "env"}]))
    model = get_model(f"anthropic:{aw.MODEL}", max_tokens=321)
    assert isinstance(model, AnthropicModel)
    _OPEN.append(model)
    response = await model.respond(ask())
    assert response.text == "env"
    assert wire.requests[0].headers["authorization"] == "Bearer sk-from-env"
    assert body(wire)["max_tokens"] == 321


async def test_unknown_model_defaults_to_8192_max_tokens(wire: WireServer) -> None:
    wire.queue(aw.plain([{"type": "text", "text": "x"}]))
    model = make(wire, "claude-future-9")
    await model.respond(ask())
    assert body(wire)["max_tokens"] == 8192
    assert "stream" not in body(wire)


def test_plain_json_reply_helper_shape() -> None:
    reply = json_reply(aw.message([]))
    assert json.loads(reply.body)["type"] == "message"
