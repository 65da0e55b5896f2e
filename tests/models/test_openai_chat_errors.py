"""Failures of the Chat Completions adapter: HTTP errors, retries, broken streams, unreadable answers."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest

from tests.models.openai_wire import chunk, completion, plain, stream, usage_chunk
from tests.support.wire import Recorded, Reply, WireServer, json_reply
from tooloop.errors import (
    AuthenticationError,
    BadRequestError,
    ContextLengthError,
    ModelResponseError,
    ProviderConnectionError,
    ProviderError,
    ProviderOverloadedError,
    ProviderTimeoutError,
    RateLimitError,
)
from tooloop.messages import UserMessage
from tooloop.models import ModelRequest, get_model
from tooloop.models.openai_chat import OpenAIChatModel

Make = Callable[..., OpenAIChatModel]
REQUEST = ModelRequest([UserMessage("hi")])
MODES = ["stream", "plain"]
FAST = {"retry-after-ms": "1"}  # the SDK waits this long before retrying


def error(
    status: int, message: str, type_: str, code: str | None = None, headers: dict[str, str] | None = None
) -> Reply:
    return json_reply({"error": {"message": message, "type": type_, "param": None, "code": code}}, status, headers)


async def call(model: OpenAIChatModel, mode: str) -> object:
    return await model.respond(REQUEST, (lambda e: None) if mode == "stream" else None)


@pytest.mark.parametrize("mode", MODES)
async def test_401_is_never_retried(wire: WireServer, make_model: Make, mode: str) -> None:
    wire.queue(error(401, "Incorrect API key provided: sk-test-key.", "invalid_request_error", "invalid_api_key"))
    model = make_model(max_retries=2)
    with pytest.raises(AuthenticationError) as info:
        await call(model, mode)
    assert len(wire.requests) == 1
    assert info.value.status_code == 401
    assert info.value.provider == "openai"
    assert not info.value.retryable
    # the server echoed the key: it must not reach the message, the body or the cause chain
    assert "sk-test-key" not in str(info.value)
    assert "sk-test-key" not in repr(info.value.body)
    assert info.value.__cause__ is None


async def test_403_is_an_authentication_error(wire: WireServer, make_model: Make) -> None:
    wire.queue(error(403, "Project does not have access to model", "invalid_request_error", "model_not_found"))
    with pytest.raises(AuthenticationError):
        await call(make_model(max_retries=2), "plain")
    assert len(wire.requests) == 1


@pytest.mark.parametrize("mode", MODES)
async def test_429_is_retried_after_retry_after(wire: WireServer, make_model: Make, mode: str) -> None:
    ok = stream(chunk({"content": "ok"}), chunk({}, "stop"), usage_chunk({"prompt_tokens": 1, "completion_tokens": 1}))
    wire.queue(
        error(429, "Rate limit reached", "requests", "rate_limit_exceeded", {"retry-after-ms": "5"}),
        ok if mode == "stream" else plain(completion({"content": "ok"})),
    )
    response = await call(make_model(max_retries=2), mode)
    assert getattr(response, "text", None) == "ok"
    assert len(wire.requests) == 2
    assert wire.requests[0].json == wire.requests[1].json


async def test_429_when_retries_are_exhausted(wire: WireServer, make_model: Make) -> None:
    limited = error(429, "Rate limit reached", "requests", "rate_limit_exceeded", {"retry-after-ms": "5"})
    wire.queue(limited, limited)
    with pytest.raises(RateLimitError) as info:
        await call(make_model(max_retries=1), "plain")
    assert len(wire.requests) == 2
    assert info.value.retry_after == pytest.approx(0.005)
    assert info.value.status_code == 429
    assert info.value.retryable


async def test_429_retry_after_in_seconds(wire: WireServer, make_model: Make) -> None:
    wire.queue(error(429, "Slow down", "requests", "rate_limit_exceeded", {"retry-after": "7"}))
    with pytest.raises(RateLimitError) as info:
        await call(make_model(max_retries=0), "stream")
    assert info.value.retry_after == 7.0


@pytest.mark.parametrize("status", [500, 503, 529])
async def test_server_errors_are_overloaded(wire: WireServer, make_model: Make, status: int) -> None:
    failure = error(status, "The server had an error while processing your request.", "server_error", None, FAST)
    wire.queue(failure, failure)
    with pytest.raises(ProviderOverloadedError) as info:
        await call(make_model(max_retries=1), "plain")
    assert info.value.status_code == status
    assert len(wire.requests) == 2  # the SDK retried once


async def test_server_error_then_success(wire: WireServer, make_model: Make) -> None:
    wire.queue(
        error(500, "oops", "server_error", headers={"retry-after-ms": "1"}),
        plain(completion({"content": "recovered"})),
    )
    response = await call(make_model(max_retries=2), "plain")
    assert getattr(response, "text", None) == "recovered"


@pytest.mark.parametrize("mode", MODES)
async def test_context_length_by_code(wire: WireServer, make_model: Make, mode: str) -> None:
    message = (
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. "
        "Please reduce the length of the messages."
    )
    wire.queue(error(400, message, "invalid_request_error", "context_length_exceeded"))
    with pytest.raises(ContextLengthError) as info:
        await call(make_model(max_retries=2), mode)
    assert info.value.status_code == 400
    assert len(wire.requests) == 1


async def test_context_length_by_message_of_a_compatible_server(wire: WireServer, make_model: Make) -> None:
    # vLLM's error object: no OpenAI code, the status repeated as "code"
    wire.queue(
        json_reply(
            {
                "object": "error",
                "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
            400,
        )
    )
    with pytest.raises(ContextLengthError):
        await call(make_model("vllm:m"), "plain")


@pytest.mark.parametrize("status", [400, 404, 422])
async def test_other_client_errors_are_bad_requests(wire: WireServer, make_model: Make, status: int) -> None:
    wire.queue(error(status, "Invalid value for 'temperature'", "invalid_request_error", "invalid_value"))
    with pytest.raises(BadRequestError) as info:
        await call(make_model(max_retries=2), "plain")
    assert info.value.status_code == status
    assert "temperature" in str(info.value)
    assert info.value.body["code"] == "invalid_value"
    assert len(wire.requests) == 1


async def test_truncated_stream_is_a_connection_error(wire: WireServer, make_model: Make) -> None:
    wire.queue(stream(chunk({"content": "Half an ans"}), done=False, cut=True))
    with pytest.raises(ProviderConnectionError) as info:
        await call(make_model(), "stream")
    assert info.value.retryable


async def test_stream_ending_before_finish_reason_is_a_connection_error(wire: WireServer, make_model: Make) -> None:
    wire.queue(stream(chunk({"content": "Half an ans"}), done=False))
    with pytest.raises(ProviderConnectionError, match="finish_reason"):
        await call(make_model(), "stream")


async def test_invalid_json_in_a_chunk(wire: WireServer, make_model: Make) -> None:
    wire.queue(stream(chunk({"content": "Hi"}), "data: {not json\n\n", chunk({}, "stop")))
    with pytest.raises(ModelResponseError):
        await call(make_model(), "stream")


async def test_chunk_of_the_wrong_shape(wire: WireServer, make_model: Make) -> None:
    wire.queue(stream({"id": "x", "choices": "nope"}, chunk({}, "stop")))
    with pytest.raises(ModelResponseError):
        await call(make_model(), "stream")


async def test_error_event_inside_a_stream(wire: WireServer, make_model: Make) -> None:
    wire.queue(
        stream(
            chunk({"content": "Hi"}),
            {"error": {"message": "The server had an error while processing your request.", "type": "server_error"}},
        )
    )
    with pytest.raises(ProviderOverloadedError, match="server had an error"):
        await call(make_model(), "stream")


async def test_invalid_json_body(wire: WireServer, make_model: Make) -> None:
    wire.queue(Reply(200, {"content-type": "application/json"}, b'{"choices": [tru'))
    with pytest.raises(ModelResponseError):
        await call(make_model(), "plain")


async def test_body_without_choices(wire: WireServer, make_model: Make) -> None:
    wire.queue(json_reply({"id": "x", "object": "chat.completion", "choices": []}))
    with pytest.raises(ModelResponseError, match="without choices"):
        await call(make_model(), "plain")


async def test_error_object_with_status_200(wire: WireServer, make_model: Make) -> None:
    wire.queue(json_reply({"error": {"message": "upstream provider failed", "code": 502}}))
    with pytest.raises(ProviderError, match="upstream provider failed"):
        await call(make_model("openrouter:some/model"), "plain")


async def test_connection_refused(models: list[OpenAIChatModel]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = get_model("ollama:qwen3", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    assert isinstance(model, OpenAIChatModel)
    models.append(model)
    with pytest.raises(ProviderConnectionError):
        await call(model, "plain")


async def test_timeout(wire: WireServer, make_model: Make) -> None:
    def slow(_: Recorded) -> Reply:
        time.sleep(0.5)
        return plain(completion({"content": "late"}))

    wire.queue(slow)
    with pytest.raises(ProviderTimeoutError):
        await call(make_model(timeout=0.1), "plain")
