"""The Gemini adapter against a local server speaking Gemini's REST wire format (v1beta)."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.deltas import merged
from tests.support.wire import Recorded, Reply, WireServer, json_reply
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
    FrozenDict,
    StopReason,
    SystemMessage,
    ThinkingPart,
    ToolCallMessage,
    ToolCallStatus,
    Usage,
    UserMessage,
)
from tooloop.models import ModelRequest, ModelSettings, OutputSchema, ToolDefinition, get_model
from tooloop.models.gemini import GeminiModel

MODEL = "gemini-2.5-flash"
SIG_A = base64.b64encode(b"signature-a").decode()
SIG_B = base64.b64encode(b"signature-b").decode()
WEATHER = ToolDefinition(
    "get_weather",
    "Weather for a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"$ref": "#/$defs/Unit"}},
        "required": ["city"],
        "$defs": {"Unit": {"enum": ["c", "f"], "type": "string"}},
    },
)


_OPEN: list[GeminiModel] = []


@pytest.fixture(autouse=True)
async def _close_models() -> AsyncIterator[None]:
    yield
    while _OPEN:
        await _OPEN.pop().aclose()


def model(wire: WireServer, name: str = MODEL, **options: Any) -> GeminiModel:
    made = get_model(f"google:{name}", base_url=wire.url, api_key="test-key", **options)
    assert isinstance(made, GeminiModel)
    _OPEN.append(made)
    return made


def usage(prompt: int = 10, out: int = 5, **extra: int) -> dict[str, Any]:
    return {"promptTokenCount": prompt, "candidatesTokenCount": out, "totalTokenCount": prompt + out, **extra}


def candidate(parts: list[dict[str, Any]], finish: str | None = "STOP", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0, **extra}
    if finish:
        body["finishReason"] = finish
    return body


def reply(parts: list[dict[str, Any]], finish: str = "STOP", **extra: Any) -> Reply:
    return json_reply(
        {"candidates": [candidate(parts, finish)], "usageMetadata": usage(**extra), "modelVersion": MODEL}
    )


def sse(*chunks: dict[str, Any] | str, cut: bool = False) -> Reply:
    """Gemini's ``alt=sse`` stream: ``data: {json}`` events separated by CRLF blank lines."""
    raw = [c if isinstance(c, str) else f"data: {json.dumps(c)}\r\n\r\n" for c in chunks]
    return Reply(200, {"content-type": "text/event-stream"}, chunks=[r.encode() for r in raw], cut=cut)


def chunk(parts: list[dict[str, Any]], finish: str | None = None, **usage_counts: int) -> dict[str, Any]:
    body: dict[str, Any] = {"candidates": [candidate(parts, finish)], "modelVersion": MODEL}
    if usage_counts:
        body["usageMetadata"] = usage(**usage_counts)
    return body


def ask(text: str = "Hi", **kwargs: Any) -> ModelRequest:
    return ModelRequest([UserMessage(text)], **kwargs)


def collect() -> tuple[list[ModelEvent], Any]:
    events: list[ModelEvent] = []
    return events, events.append


# ---------------------------------------------------------------- text, config, system


async def test_text_plain_request_and_response(wire: WireServer) -> None:
    wire.queue(reply([{"text": "Hello there"}], prompt=12, out=3))
    request = ModelRequest(
        [SystemMessage("Be brief."), UserMessage("Hi")],
        settings=ModelSettings(temperature=0.2, max_tokens=50, top_p=0.9, stop=("END",), seed=7),
    )
    response = await model(wire).respond(request)

    assert response.text == "Hello there"
    assert response.stop_reason is StopReason.END_TURN
    assert response.tool_calls == ()
    assert response.usage == Usage(input_tokens=12, output_tokens=3)
    assert response.model == MODEL
    sent = wire.requests[0]
    assert sent.path == f"/v1beta/models/{MODEL}:generateContent"
    assert sent.headers["x-goog-api-key"] == "test-key"
    assert sent.json["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]
    assert sent.json["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert sent.json["generationConfig"] == {
        "temperature": 0.2,
        "maxOutputTokens": 50,
        "topP": 0.9,
        "stopSequences": ["END"],
        "seed": 7,
    }
    assert "tools" not in sent.json


async def test_text_streaming_with_unicode_split_across_chunks(wire: WireServer) -> None:
    wire.queue(
        sse(
            chunk([{"text": "Grüße "}]),
            chunk([{"text": "aus 東"}]),
            chunk([{"text": "京 🎉"}], "STOP", prompt=4, out=6),
        )
    )
    events, on_event = collect()
    response = await model(wire).respond(ask(), on_event)

    assert response.text == "Grüße aus 東京 🎉"
    assert merged(events) == [TextDelta("Grüße aus 東京 🎉")]  # deltas of one network read come as one
    assert response.usage == Usage(input_tokens=4, output_tokens=6)
    assert wire.requests[0].path == f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"


async def test_unicode_split_inside_a_utf8_sequence_on_the_wire(wire: WireServer) -> None:
    data = f"data: {json.dumps(chunk([{'text': '東京'}], 'STOP', prompt=1, out=1), ensure_ascii=False)}\r\n\r\n"
    raw = data.encode()
    cut_at = raw.index("東".encode()) + 1
    wire.queue(Reply(200, {"content-type": "text/event-stream"}, chunks=[raw[:cut_at], raw[cut_at:]]))
    response = await model(wire).respond(ask(), collect()[1])
    assert response.text == "東京"


# ---------------------------------------------------------------- tool calls


async def test_one_tool_call_and_declarations(wire: WireServer) -> None:
    wire.queue(reply([{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]))
    response = await model(wire).respond(ask("Weather?", tools=(WEATHER,), tool_choice="required"))

    assert response.stop_reason is StopReason.TOOL_USE
    (call,) = response.tool_calls
    assert call.name == "get_weather"
    assert call.arguments == {"city": "Paris"}
    assert call.id.startswith("call_")
    assert response.provider_data == {}  # no Gemini id, no signature: nothing to send back
    body = wire.requests[0].json
    # The SDK writes declarations with proto field names (snake_case), which the API accepts.
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Weather for a city.",
                    "parameters_json_schema": WEATHER.parameters,
                }
            ]
        }
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}


async def test_parallel_calls_streamed_with_ids_and_signature(wire: WireServer) -> None:
    wire.queue(
        sse(
            chunk([{"text": "Checking both."}]),
            chunk(
                [
                    {
                        "functionCall": {"id": "g1", "name": "get_weather", "args": {"city": "Paris"}},
                        "thoughtSignature": SIG_A,
                    },
                    {"functionCall": {"id": "g2", "name": "get_weather", "args": {"city": "Rome"}}},
                ],
                "STOP",
                prompt=20,
                out=9,
            ),
        )
    )
    events, on_event = collect()
    response = await model(wire).respond(ask(tools=(WEATHER,)), on_event)

    assert response.text == "Checking both."
    assert [(c.id, c.arguments) for c in response.tool_calls] == [("g1", {"city": "Paris"}), ("g2", {"city": "Rome"})]
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.usage.tool_calls == 2
    assert events == [
        TextDelta("Checking both."),
        ToolCallDelta(0, "g1", "get_weather", '{"city":"Paris"}'),
        ToolCallDelta(1, "g2", "get_weather", '{"city":"Rome"}'),
    ]
    google = response.provider_data["google"]
    assert google["ids"] == ["g1", "g2"]
    assert base64.urlsafe_b64decode(google["signatures"]["g1"]) == b"signature-a"
    # frozen as a recorded message keeps it, so the batch's first message takes it as it is
    assert type(response.provider_data) is FrozenDict and type(google["signatures"]) is FrozenDict
    with pytest.raises(TypeError):
        google["signatures"]["g2"] = SIG_A
    first = ToolCallMessage(tool_name="get_weather", tool_call_id="g1", provider_data=response.provider_data)
    assert first.provider_data is response.provider_data


async def test_text_then_call_and_empty_arguments(wire: WireServer) -> None:
    wire.queue(reply([{"text": "Let me look."}, {"functionCall": {"name": "now"}}]))
    response = await model(wire).respond(ask(tools=(ToolDefinition("now", "Time.", {"type": "object"}),)))
    assert response.text == "Let me look."
    (call,) = response.tool_calls
    assert (call.name, call.arguments) == ("now", {})
    assert response.tool_calls[0].id != ""


async def test_generated_ids_are_unique(wire: WireServer) -> None:
    parts = [{"functionCall": {"name": "now", "args": {}}}, {"functionCall": {"name": "now", "args": {}}}]
    wire.queue(reply(parts))
    response = await model(wire).respond(ask())
    assert len({c.id for c in response.tool_calls}) == 2


async def test_history_round_trip_sends_signatures_ids_and_results(wire: WireServer) -> None:
    wire.queue(reply([{"text": "Sunny in Paris, rain in Rome."}]))
    data = {"google": {"ids": ["g1", "g2"], "signatures": {"g1": SIG_A}}}
    thinking = (
        ThinkingPart("I should check.", signature=SIG_B, provider="google"),
        ThinkingPart("foreign", provider="x"),
    )
    messages = [
        UserMessage("Weather?"),
        ToolCallMessage(
            tool_name="get_weather",
            tool_call_id="g1",
            arguments={"city": "Paris"},
            content="sunny",
            batch_id="b",
            message="Checking.",
            thinking=thinking,
            provider_data=data,
        ),
        ToolCallMessage(
            tool_name="get_weather",
            tool_call_id="g2",
            arguments={"city": "Rome"},
            content="boom",
            status=ToolCallStatus.ERROR,
            batch_id="b",
        ),
    ]
    await model(wire).respond(ModelRequest(messages, (WEATHER,)))

    contents = wire.requests[0].json["contents"]
    sig_a = base64.urlsafe_b64encode(b"signature-a").decode()
    sig_b = base64.urlsafe_b64encode(b"signature-b").decode()
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"text": "I should check.", "thought": True, "thoughtSignature": sig_b},
            {"text": "Checking."},
            {"functionCall": {"id": "g1", "name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": sig_a},
            {"functionCall": {"id": "g2", "name": "get_weather", "args": {"city": "Rome"}}},
        ],
    }
    assert contents[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": "g1", "name": "get_weather", "response": {"result": "sunny"}}},
            {"functionResponse": {"id": "g2", "name": "get_weather", "response": {"error": "Error: boom"}}},
        ],
    }


async def test_foreign_history_without_ids_and_gemini3_sentinel(wire: WireServer) -> None:
    wire.queue(reply([{"text": "ok"}]), reply([{"text": "ok"}]))
    messages = [
        UserMessage("Weather?"),
        ToolCallMessage(tool_name="get_weather", tool_call_id="toolu_01", arguments={"city": "Oslo"}, content="cold"),
        AssistantMessage(
            "Cold.", thinking=(ThinkingPart("anthropic thoughts", signature="sig", provider="anthropic"),)
        ),
        UserMessage("Thanks"),
    ]
    await model(wire).respond(ModelRequest(messages))
    await model(wire, "gemini-3-pro-preview").respond(ModelRequest(messages))

    old, new = (r.json["contents"] for r in wire.requests)
    assert old[1] == {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]}
    assert old[2] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "cold"}}}],
    }
    assert old[3] == {"role": "model", "parts": [{"text": "Cold."}]}
    assert new[1]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator"


async def test_turns_of_one_role_merge_so_roles_alternate(wire: WireServer) -> None:
    wire.queue(reply([{"text": "ok"}]))
    messages = [
        UserMessage("One."),
        AssistantMessage(""),  # nothing to send: the two user turns around it become one
        UserMessage("Two."),
        AssistantMessage("A."),
        AssistantMessage("B."),
        UserMessage("Three."),
    ]
    await model(wire).respond(ModelRequest(messages))

    assert wire.requests[0].json["contents"] == [
        {"role": "user", "parts": [{"text": "One."}, {"text": "Two."}]},
        {"role": "model", "parts": [{"text": "A."}, {"text": "B."}]},
        {"role": "user", "parts": [{"text": "Three."}]},
    ]


async def test_thoughts_streamed_and_text_signature_kept(wire: WireServer) -> None:
    wire.queue(
        sse(
            chunk([{"text": "Thinking about ", "thought": True}]),
            chunk([{"text": "it.", "thought": True}]),
            chunk([{"text": "Answer", "thoughtSignature": SIG_A}]),
            chunk([{"text": ""}], "STOP", prompt=3, out=2, thoughtsTokenCount=7, cachedContentTokenCount=2),
        )
    )
    events, on_event = collect()
    response = await model(wire).respond(ask(), on_event)
    assert response.thinking == (ThinkingPart("Thinking about it.", provider="google"),)
    assert response.text == "Answer"
    assert merged(events)[:1] == [ThinkingDelta("Thinking about it.")]
    assert response.usage == Usage(input_tokens=3, output_tokens=9, cache_read_tokens=2, reasoning_tokens=7)

    wire.queue(reply([{"text": "ok"}]))
    message = AssistantMessage(response.text, thinking=response.thinking, provider_data=response.provider_data)
    await model(wire).respond(ModelRequest([UserMessage("Hi"), message, UserMessage("More")]))
    parts = wire.requests[1].json["contents"][1]["parts"]
    assert parts == [
        {"text": "Thinking about it.", "thought": True},
        {"text": "Answer", "thoughtSignature": base64.urlsafe_b64encode(b"signature-a").decode()},
    ]


# ---------------------------------------------------------------- stop reasons


async def test_safety_finish_is_refusal(wire: WireServer) -> None:
    wire.queue(json_reply({"candidates": [{"finishReason": "SAFETY", "index": 0}], "usageMetadata": usage(5, 0)}))
    response = await model(wire).respond(ask())
    assert response.stop_reason is StopReason.REFUSAL
    assert response.refusal == "response blocked: SAFETY"


async def test_blocked_prompt_is_refusal(wire: WireServer) -> None:
    wire.queue(
        sse(
            {
                "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
                "usageMetadata": usage(5, 0),
                "modelVersion": MODEL,
            }
        )
    )
    response = await model(wire).respond(ask(), collect()[1])
    assert response.stop_reason is StopReason.REFUSAL
    assert response.refusal is not None and "PROHIBITED_CONTENT" in response.refusal


async def test_max_tokens_streaming(wire: WireServer) -> None:
    wire.queue(sse(chunk([{"text": "The answer is"}]), chunk([{"text": " long"}], "MAX_TOKENS", prompt=5, out=2)))
    response = await model(wire).respond(ask(), collect()[1])
    assert response.stop_reason is StopReason.MAX_TOKENS
    assert response.text == "The answer is long"


async def test_max_tokens_while_writing_a_call_has_no_calls(wire: WireServer) -> None:
    # Gemini sends a function call only once it is complete: a cut-off call never appears.
    wire.queue(reply([{"text": "Calling"}], "MAX_TOKENS"))
    response = await model(wire).respond(ask(tools=(WEATHER,)))
    assert response.stop_reason is StopReason.MAX_TOKENS
    assert response.tool_calls == ()


async def test_malformed_function_call_is_a_model_response_error(wire: WireServer) -> None:
    wire.queue(
        json_reply(
            {
                "candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "bad call", "index": 0}],
                "usageMetadata": usage(5, 0),
            }
        )
    )
    with pytest.raises(ModelResponseError, match="MALFORMED_FUNCTION_CALL"):
        await model(wire).respond(ask())


async def test_structured_output_without_tools(wire: WireServer) -> None:
    wire.queue(reply([{"text": '{"n": 1}'}]), reply([{"text": "x"}]))
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    await model(wire).respond(ask(output=OutputSchema("Out", schema)))
    await model(wire).respond(ask(output=OutputSchema("Out", schema), tools=(WEATHER,)))
    first, second = (r.json["generationConfig"] for r in wire.requests)
    assert first == {"responseMimeType": "application/json", "responseJsonSchema": schema}
    assert "responseMimeType" not in second


# ---------------------------------------------------------------- errors and retries


def error_reply(code: int, status: str, message: str, headers: dict[str, str] | None = None, **extra: Any) -> Reply:
    return json_reply({"error": {"code": code, "message": message, "status": status, **extra}}, code, headers)


async def test_401_is_not_retried(wire: WireServer) -> None:
    wire.queue(error_reply(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."))
    with pytest.raises(AuthenticationError) as info:
        await model(wire).respond(ask())
    assert info.value.status_code == 401
    assert len(wire.requests) == 1
    assert "test-key" not in str(info.value)


async def test_invalid_key_400_is_authentication(wire: WireServer) -> None:
    details = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]
    wire.queue(error_reply(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", details=details))
    with pytest.raises(AuthenticationError):
        await model(wire).respond(ask())


async def test_429_retry_info_then_ok(wire: WireServer) -> None:
    retry = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.05s"}]
    wire.queue(error_reply(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", details=retry), reply([{"text": "ok"}]))
    response = await model(wire).respond(ask())
    assert response.text == "ok"
    assert len(wire.requests) == 2


async def test_429_retry_after_header_streaming_then_ok(wire: WireServer) -> None:
    wire.queue(
        error_reply(429, "RESOURCE_EXHAUSTED", "Slow down.", {"retry-after": "0"}),
        sse(chunk([{"text": "ok"}], "STOP", prompt=1, out=1)),
    )
    response = await model(wire).respond(ask(), collect()[1])
    assert response.text == "ok"
    assert len(wire.requests) == 2


async def test_429_exhausted_carries_retry_after(wire: WireServer) -> None:
    wire.queue(*[error_reply(429, "RESOURCE_EXHAUSTED", "Slow down.", {"retry-after": "0"}) for _ in range(2)])
    with pytest.raises(RateLimitError) as info:
        await model(wire, max_retries=1).respond(ask())
    assert info.value.retry_after == 0
    assert len(wire.requests) == 2


async def test_500_is_overloaded_after_retries(wire: WireServer) -> None:
    wire.queue(*[error_reply(500, "INTERNAL", "Internal error.", {"retry-after": "0"}) for _ in range(3)])
    with pytest.raises(ProviderOverloadedError) as info:
        await model(wire).respond(ask())
    assert info.value.status_code == 500
    assert len(wire.requests) == 3


async def test_400_context_length(wire: WireServer) -> None:
    message = "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
    wire.queue(error_reply(400, "INVALID_ARGUMENT", message))
    with pytest.raises(ContextLengthError, match="exceeds"):
        await model(wire).respond(ask())
    assert len(wire.requests) == 1


async def test_other_400_is_bad_request(wire: WireServer) -> None:
    wire.queue(error_reply(400, "INVALID_ARGUMENT", "Invalid JSON payload received."))
    with pytest.raises(BadRequestError):
        await model(wire).respond(ask())


async def test_truncated_stream_is_connection_error(wire: WireServer) -> None:
    wire.queue(sse(chunk([{"text": "Hel"}]), cut=True))
    events, on_event = collect()
    with pytest.raises(ProviderConnectionError):
        await model(wire).respond(ask(), on_event)
    assert events == [TextDelta("Hel")]
    assert len(wire.requests) == 1  # text was already shown: never retried behind the caller's back


async def test_stream_ending_without_finish_reason_is_connection_error(wire: WireServer) -> None:
    wire.queue(sse(chunk([{"text": "Hel"}])))
    with pytest.raises(ProviderConnectionError, match="ended before"):
        await model(wire, max_retries=0).respond(ask(), collect()[1])


def test_missing_key_names_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match=r"GEMINI_API_KEY.*GOOGLE_API_KEY"):
        get_model("gemini:gemini-2.5-flash")


async def test_key_from_environment(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "env-key")
    wire.queue(reply([{"text": "ok"}]))
    made = get_model("gemini:gemini-2.5-flash", base_url=wire.url)
    assert isinstance(made, GeminiModel)
    async with made:
        await made.respond(ask())
    assert wire.requests[0].headers["x-goog-api-key"] == "env-key"


def test_unknown_option_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="colour"):
        get_model("google:gemini-2.5-flash", api_key="k", colour="red")


# ---------------------------------------------------------------- end to end through the loop


async def test_agent_runs_a_tool_and_sends_the_result_back(wire: WireServer) -> None:
    from tooloop import Agent

    def get_weather(city: str) -> str:
        """Weather for a city."""
        return f"sunny in {city}"

    def check_result(recorded: Recorded) -> Reply:
        contents = recorded.json["contents"]
        expected = {"functionResponse": {"id": "g1", "name": "get_weather", "response": {"result": "sunny in Paris"}}}
        if contents[-1] != {"role": "user", "parts": [expected]}:
            return error_reply(400, "INVALID_ARGUMENT", f"unexpected tool result: {contents[-1]}")
        return reply([{"text": "It is sunny in Paris."}], prompt=30, out=6)

    wire.queue(
        reply(
            [
                {
                    "functionCall": {"id": "g1", "name": "get_weather", "args": {"city": "Paris"}},
                    "thoughtSignature": SIG_A,
                }
            ]
        ),
        check_result,
    )
    result = await Agent(model(wire), system="Be brief.", tools=[get_weather]).run("Weather in Paris?")

    assert result.text == "It is sunny in Paris."
    assert result.stop_reason is StopReason.END_TURN
    assert result.usage.input_tokens == 40 and result.usage.requests == 2
    second = wire.requests[1].json
    assert second["contents"][1]["parts"] == [
        {
            "functionCall": {"id": "g1", "name": "get_weather", "args": {"city": "Paris"}},
            "thoughtSignature": base64.urlsafe_b64encode(b"signature-a").decode(),
        }
    ]
    assert second["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
