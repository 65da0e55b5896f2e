"""The Gemini adapter's two transports: the lean path (default) and ``google-genai`` (``transport="sdk"``).

The wire tests in test_gemini.py run on the default path; these show which path a model takes,
that the lean path never loads the SDK, and that both send the same request body for the same
request and read the same answers, retries and failures from the same server.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.models.test_gemini import SIG_A, WEATHER, chunk, error_reply, reply, sse
from tests.support.deltas import merged
from tests.support.wire import Reply, WireServer, json_reply
from tooloop.errors import (
    BadRequestError,
    ConfigurationError,
    ModelResponseError,
    ProviderConnectionError,
    ProviderError,
    ProviderOverloadedError,
)
from tooloop.messages import (
    AssistantMessage,
    ImageContent,
    ModelResponse,
    SystemMessage,
    TextContent,
    ThinkingPart,
    ToolCallMessage,
    ToolCallStatus,
    UserMessage,
)
from tooloop.models import ModelRequest, ModelSettings, OutputSchema, get_model, payloads
from tooloop.models.gemini import GeminiModel
from tooloop.outcome import render_parts

ROOT = Path(__file__).resolve().parents[2]
TRANSPORTS = ("sdk", "lean")
_OPEN: list[GeminiModel] = []


@pytest.fixture(autouse=True)
async def _close_models() -> AsyncIterator[None]:
    yield
    while _OPEN:
        await _OPEN.pop().aclose()


def model(wire: WireServer, name: str = "gemini-2.5-flash", **options: Any) -> GeminiModel:
    options.setdefault("max_retries", 0)
    made = get_model(f"google:{name}", base_url=wire.url, api_key="test-key", **options)
    assert isinstance(made, GeminiModel)
    _OPEN.append(made)
    return made


def listen(mode: str) -> Any:
    return (lambda event: None) if mode == "stream" else None


# ---------------------------------------------------------------- which path


def test_the_lean_path_does_not_load_the_sdk() -> None:
    code = """
import asyncio, sys
from tests.support.wire import WireServer
from tests.models.test_gemini import reply, sse, chunk
from tooloop import get_model
from tooloop.messages import UserMessage
from tooloop.models import ModelRequest

async def main():
    wire = WireServer().start()
    wire.queue(reply([{"text": "plain"}]), sse(chunk([{"text": "streamed"}], "STOP", prompt=1, out=1)))
    model = get_model("google:gemini-2.5-flash", base_url=wire.url, api_key="k")
    assert model.transport == "lean"
    request = ModelRequest([UserMessage("hi")])
    assert (await model.respond(request)).text == "plain"
    assert (await model.respond(request, lambda event: None)).text == "streamed"
    await model.aclose()
    wire.stop()

asyncio.run(main())
loaded = sorted(m for m in sys.modules if m.startswith(("google.genai", "httpx", "pydantic")))
assert not loaded, loaded
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=ROOT)


async def test_transport_sdk_and_a_client_of_your_own_go_through_the_sdk(wire: WireServer) -> None:
    from google import genai
    from google.genai import types

    wire.queue(*[reply([{"text": "ok"}]) for _ in range(3)])
    client = genai.Client(api_key="own-key", http_options=types.HttpOptions(base_url=wire.url, api_version="v1beta"))
    lean, sdk = model(wire), model(wire, transport="sdk")
    own = get_model("google:gemini-2.5-flash", client=client)
    assert isinstance(own, GeminiModel)
    assert (lean.transport, sdk.transport, own.transport) == ("lean", "sdk", "sdk")
    for each in (lean, sdk, own):
        assert (await each.respond(ModelRequest([UserMessage("hi")]))).text == "ok"
    await client.aio.aclose()
    agents = [r.headers["user-agent"] for r in wire.requests]
    assert agents[0].startswith("tooloop/")
    assert agents[1].startswith("google-genai-sdk/") and agents[2].startswith("google-genai-sdk/")
    assert wire.requests[2].headers["x-goog-api-key"] == "own-key"


async def test_a_configured_proxy_sends_through_the_sdk(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", wire.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    wire.queue(reply([{"text": "via the proxy"}]))
    made = get_model("google:gemini-2.5-flash", base_url="http://gemini.example.invalid", api_key="k")
    assert isinstance(made, GeminiModel)
    _OPEN.append(made)
    assert made.transport == "sdk"
    assert (await made.respond(ModelRequest([UserMessage("hi")]))).text == "via the proxy"
    # a request through a proxy names the absolute URL
    assert wire.requests[0].path == "http://gemini.example.invalid/v1beta/models/gemini-2.5-flash:generateContent"


async def test_the_base_url_variable_and_keep_alive(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", wire.url + "/gateway/")
    monkeypatch.setenv("GEMINI_API_KEY", "env-key")
    wire.queue(reply([{"text": "one"}]), sse(chunk([{"text": "two"}], "STOP", prompt=1, out=1)), reply([{"text": "3"}]))
    made = get_model("google:models/gemini-2.5-flash")
    assert isinstance(made, GeminiModel)
    _OPEN.append(made)
    assert made.base_url == wire.url + "/gateway/"
    request = ModelRequest([UserMessage("hi")])
    texts = [(await made.respond(request, handler)).text for handler in (None, lambda e: None, None)]
    assert texts == ["one", "two", "3"]
    assert [r.path for r in wire.requests] == [
        "/gateway/v1beta/models/gemini-2.5-flash:generateContent",
        "/gateway/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        "/gateway/v1beta/models/gemini-2.5-flash:generateContent",
    ]
    assert {r.headers["x-goog-api-key"] for r in wire.requests} == {"env-key"}
    assert wire.connections == 1  # one kept-alive connection served every request


def test_bad_settings_are_refused_where_given() -> None:
    with pytest.raises(ConfigurationError, match="transport must be 'lean' or 'sdk'"):
        get_model("google:gemini-2.5-flash", api_key="k", transport="grpc")
    for name in ("gemini-2.5-flash?alt=x", "../secrets", "gemini 2.5", "gemini\r\nx: y"):
        with pytest.raises(ConfigurationError, match="not a Gemini model name"):
            get_model(f"google:{name}", api_key="k")
    with pytest.raises(ConfigurationError, match="line break"):
        get_model("google:gemini-2.5-flash", api_key="k\r\nx-evil: 1")


# ---------------------------------------------------------------- the same request, the same answer

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(250, 256)) * 4).decode()
RESULT = (TextContent("sunny"), ImageContent(PNG, "image/png"))
SIG_PLUS = base64.b64encode(b"\xfb\xff\xbe-signature").decode()  # standard base64 with + and /
HISTORY = [
    SystemMessage("Be brief."),
    SystemMessage("Use metric units."),
    UserMessage("Weather in Paris and Zürich? 東京 too 🎉"),
    ToolCallMessage(
        tool_name="get_weather",
        tool_call_id="g1",
        arguments={"city": "Paris", "nested": {"deep": [1, 2.5, None, True]}},
        content=render_parts(RESULT),
        parts=RESULT,
        batch_id="b1",
        message="Checking.",
        thinking=(ThinkingPart("I should check.", signature=SIG_PLUS, provider="google"),),
        provider_data={"google": {"ids": ["g1", "g2"], "signatures": {"g1": SIG_A}, "text_signature": SIG_PLUS}},
    ),
    ToolCallMessage(
        tool_name="get_weather",
        tool_call_id="g2",
        arguments={"city": "Zürich"},
        content="boom",
        status=ToolCallStatus.ERROR,
        batch_id="b1",
    ),
    AssistantMessage("Sunny in Paris.", thinking=(ThinkingPart("foreign", signature="x", provider="anthropic"),)),
    ToolCallMessage(tool_name="get_weather", tool_call_id="toolu_01", arguments={"city": "Oslo"}, content="cold"),
    UserMessage("And tomorrow?"),
]
SETTINGS = ModelSettings(
    temperature=0.3,
    max_tokens=512,
    top_p=0.95,
    stop=("END", "STOP"),
    seed=11,
    extra={
        "thinking_config": {"include_thoughts": True, "thinking_budget": 256},
        "safety_settings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE"}],
        "top_k": 40,
        "labels": {"team": "evals"},
        "cached_content": "abc123",
        "response_modalities": ["TEXT"],
        "presencePenalty": 0.5,
    },
)
ANSWER = [
    {"text": "Thinking it over", "thought": True},
    {"text": "...", "thought": True, "thoughtSignature": SIG_PLUS},
    {"text": "Checking tomorrow. "},
    {"functionCall": {"id": "g3", "name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": SIG_A},
    {"functionCall": {"id": "g4", "name": "get_weather", "args": {"city": "Zürich"}}},
]
USAGE = {"promptTokenCount": 90, "candidatesTokenCount": 12, "thoughtsTokenCount": 30, "cachedContentTokenCount": 8}


def full_request() -> ModelRequest:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "additionalProperties": False}
    return ModelRequest(
        HISTORY, (WEATHER,), tool_choice="required", output=OutputSchema("Out", schema), settings=SETTINGS
    )


def answer(mode: str) -> Reply:
    if mode == "plain":
        return json_reply({"candidates": [{"content": {"role": "model", "parts": ANSWER}, "finishReason": "STOP"}],
                           "usageMetadata": USAGE, "modelVersion": "gemini-3-pro-001"})  # fmt: skip
    chunks = [chunk(ANSWER[:1]), chunk(ANSWER[1:3]), chunk(ANSWER[3:], "STOP")]
    chunks[-1]["usageMetadata"] = USAGE
    chunks[-1]["modelVersion"] = "gemini-3-pro-001"
    return sse(*chunks)


def comparable(response: ModelResponse) -> tuple[Any, ...]:
    return (
        response.text,
        response.tool_calls,
        response.stop_reason,
        response.usage,
        response.thinking,
        response.model,
        response.provider_data,
    )


@pytest.mark.parametrize("mode", ["plain", "stream"])
async def test_both_transports_send_the_same_body_and_read_the_same_answer(wire: WireServer, mode: str) -> None:
    answers = {}
    events: dict[str, list[Any]] = {}
    for transport in TRANSPORTS:
        wire.queue(answer(mode))
        seen = events[transport] = []
        handler = seen.append if mode == "stream" else None
        answers[transport] = await model(wire, "gemini-3-pro-preview", transport=transport).respond(
            full_request(), handler
        )
    sdk, lean = wire.requests
    assert lean.json == sdk.json
    assert lean.path == sdk.path
    same = ("content-type", "x-goog-api-key", "x-server-timeout", "accept-encoding", "accept")
    assert {k: lean.headers.get(k) for k in same} == {k: sdk.headers.get(k) for k in same}
    assert comparable(answers["lean"]) == comparable(answers["sdk"])
    assert merged(events["lean"]) == merged(events["sdk"])  # the lean path joins the deltas of one read
    # what both sent, spelled out where the transports could differ
    body = lean.json
    assert body["cachedContent"] == "cachedContents/abc123"
    assert body["generationConfig"]["thinkingConfig"] == {"include_thoughts": True, "thinking_budget": 256}
    assert body["generationConfig"]["presencePenalty"] == 0.5
    model_turn = body["contents"][1]["parts"]
    urlsafe = SIG_PLUS.translate(str.maketrans("+/", "-_"))
    assert model_turn[0] == {"text": "I should check.", "thought": True, "thoughtSignature": urlsafe}
    assert model_turn[1] == {"text": "Checking.", "thoughtSignature": urlsafe}
    results = body["contents"][2]["parts"][0]["functionResponse"]
    assert results["parts"][0]["inline_data"]["data"] == PNG.translate(str.maketrans("+/", "-_"))
    assert answers["lean"].provider_data["google"]["signatures"]["g3"] == SIG_A
    assert answers["lean"].thinking[0].signature == urlsafe


async def test_a_field_only_the_sdk_can_send_is_refused_on_the_lean_path(wire: WireServer) -> None:
    extra = ModelSettings(extra={"http_options": {"headers": {"x-trace": "t1"}}})
    request = ModelRequest([UserMessage("hi")], settings=extra)
    with pytest.raises(ConfigurationError, match=r"'http_options'.*transport='sdk'"):
        await model(wire).respond(request)
    assert wire.requests == []
    wire.queue(reply([{"text": "ok"}]))
    assert (await model(wire, transport="sdk").respond(request)).text == "ok"
    assert wire.requests[0].headers["x-trace"] == "t1"
    with pytest.raises(ConfigurationError, match="'response_schema'"):  # a model's own settings: at once
        model(wire, settings=ModelSettings(extra={"response_schema": {"type": "object"}}))


# ---------------------------------------------------------------- retries and failures, both paths


@pytest.mark.parametrize("mode", ["plain", "stream"])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_429_and_503_with_retry_after_are_retried(wire: WireServer, transport: str, mode: str) -> None:
    wire.queue(
        error_reply(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", {"retry-after": "0"}),
        error_reply(503, "UNAVAILABLE", "The model is overloaded.", {"retry-after": "0"}),
        sse(chunk([{"text": "ok"}], "STOP", prompt=1, out=1)) if mode == "stream" else reply([{"text": "ok"}]),
    )
    response = await model(wire, transport=transport, max_retries=2).respond(
        ModelRequest([UserMessage("hi")]), listen(mode)
    )
    assert response.text == "ok"
    assert len(wire.requests) == 3
    assert len({r.body for r in wire.requests}) == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_retry_after_beyond_the_limit_is_raised_at_once(wire: WireServer, transport: str) -> None:
    wire.queue(error_reply(503, "UNAVAILABLE", "Come back later.", {"retry-after": "3600"}))
    with pytest.raises(ProviderOverloadedError, match="Come back later"):
        await model(wire, transport=transport, max_retries=2).respond(ModelRequest([UserMessage("hi")]))
    assert len(wire.requests) == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_stream_cut_before_anything_was_shown_is_retried(wire: WireServer, transport: str) -> None:
    wire.queue(sse(chunk([{"text": "Hel"}]), cut=True), sse(chunk([{"text": "Hello"}], "STOP", prompt=1, out=1)))
    streamed = ModelRequest([UserMessage("hi")], settings=ModelSettings(stream=True))
    response = await model(wire, transport=transport, max_retries=1).respond(streamed)
    assert response.text == "Hello"  # nothing of the cut attempt leaks into the answer
    assert len(wire.requests) == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_stream_cut_after_text_was_shown_fails(wire: WireServer, transport: str) -> None:
    wire.queue(sse(chunk([{"text": "Hel"}]), cut=True))
    seen: list[Any] = []
    with pytest.raises(ProviderConnectionError) as info:
        await model(wire, transport=transport, max_retries=2).respond(ModelRequest([UserMessage("hi")]), seen.append)
    assert len(seen) == 1 and len(wire.requests) == 1
    assert wire.url.removeprefix("http://") in str(info.value)


ERRORS: list[tuple[str, Reply, type[ProviderError], str]] = [
    (
        "error event in a stream",
        sse(chunk([{"text": ""}]), {"error": {"code": 500, "message": "Internal error.", "status": "INTERNAL"}}),
        ProviderOverloadedError,
        "google 500 (INTERNAL): Internal error.",
    ),
    (
        "error list",
        json_reply([{"error": {"code": 400, "message": "Bad field.", "status": "INVALID_ARGUMENT"}}], 400),
        BadRequestError,
        "google 400 (INVALID_ARGUMENT): Bad field.",
    ),
    (
        "html gateway page",
        Reply(502, {"content-type": "text/html"}, b"<html>Bad Gateway</html>"),
        ProviderOverloadedError,
        "google 502",
    ),
    ("not json", Reply(200, {"content-type": "application/json"}, b"<html>oops</html>"), ModelResponseError, "JSON"),
    ("empty body", Reply(200, {"content-type": "application/json"}, b""), ModelResponseError, "no candidate"),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(("case", "failing", "cls", "text"), ERRORS, ids=[e[0] for e in ERRORS])
async def test_error_payloads_give_the_same_error_on_both_paths(
    wire: WireServer, transport: str, case: str, failing: Reply, cls: type[ProviderError], text: str
) -> None:
    wire.queue(failing)
    streamed = failing.chunks is not None
    with pytest.raises(ProviderError) as info:
        await model(wire, transport=transport).respond(
            ModelRequest([UserMessage("hi")]), listen("stream" if streamed else "plain")
        )
    assert type(info.value) is cls
    assert text in str(info.value)
    assert "test-key" not in str(info.value)


# ---------------------------------------------------------------- payload inspection


@pytest.mark.parametrize("mode", ["plain", "stream"])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_payload_listeners_see_what_went_over_the_wire(wire: WireServer, transport: str, mode: str) -> None:
    chunks = [chunk([{"text": "Hi "}]), chunk([{"text": "there."}], "STOP", prompt=3, out=2)]
    plain = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi there."}]}, "finishReason": "STOP"}]}
    wire.queue(sse(*chunks) if mode == "stream" else json_reply(plain))
    seen: list[payloads.ProviderPayload] = []
    with payloads.listen(seen.append):
        response = await model(wire, transport=transport).respond(ModelRequest([UserMessage("hello")]), listen(mode))
    assert response.text == "Hi there."
    request, answer = seen
    assert (request.direction, request.provider, request.model) == ("request", "google", "gemini-2.5-flash")
    if transport == "lean":
        assert request.data == wire.requests[0].json  # the body the server received
    else:
        assert request.data["contents"] == wire.requests[0].json["contents"]
    assert "test-key" not in request.to_json()
    assert answer.streamed is (mode == "stream")
    assert answer.data == (chunks if mode == "stream" else plain)  # the server's JSON, on either path
