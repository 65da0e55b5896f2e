"""One error table for every provider: the same failure gets the same class, however it arrives.

Through each official SDK against the scripted server: an HTTP status, and the same failure as an
error event inside a 200 stream, give the same tooloop error; status codes mean the same on every
provider; every provider reads ``retry-after`` the same way and knows the same "too long" phrases.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models.openai_wire import stream
from tests.support.wire import Reply, WireServer, json_reply, sse_reply
from tooloop.errors import (
    BadRequestError,
    ContextLengthError,
    ProviderError,
    ProviderOverloadedError,
    ProviderTimeoutError,
    RateLimitError,
)
from tooloop.messages import UserMessage
from tooloop.models import Model, ModelRequest, get_model
from tooloop.models.error_table import error_class

REQUEST = ModelRequest([UserMessage("hi")])
GROQ_FAILURE = {
    "message": "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.",
    "type": "invalid_request_error",
    "code": "tool_use_failed",
    "failed_generation": '<function=get_weather{"city": "Paris"}</function>',
}


def chat(wire: WireServer, spec: str = "groq:llama-3.3-70b-versatile") -> Model:
    return get_model(spec, base_url=f"{wire.url}/v1", api_key="gsk-test", max_retries=0)


def anthropic(wire: WireServer) -> Model:
    return get_model(f"anthropic:{aw.MODEL}", base_url=wire.url, api_key="sk-ant-test", max_retries=0)


async def failure(model: Model, streamed: bool) -> ProviderError:
    try:
        with pytest.raises(ProviderError) as info:
            await model.respond(REQUEST, (lambda event: None) if streamed else None)
    finally:
        await model.aclose()  # type: ignore[attr-defined]
    return info.value


@pytest.mark.parametrize(
    ("reply", "streamed"),
    [
        (json_reply({"error": GROQ_FAILURE}, 400), False),
        (json_reply({"error": GROQ_FAILURE}, 400), True),
        (stream({"error": GROQ_FAILURE}, done=False), True),  # Groq reports it inside the 200 stream
    ],
    ids=["status-plain", "status-stream", "stream-event"],
)
async def test_groq_tool_use_failed_is_one_class(wire: WireServer, reply: Reply, streamed: bool) -> None:
    wire.queue(reply)
    error = await failure(chat(wire), streamed)
    assert type(error) is BadRequestError
    assert "tool_use_failed" in str(error) and "Failed to call a function" in str(error)
    assert error.provider == "groq" and not error.retryable


@pytest.mark.parametrize(
    ("reply", "streamed"),
    [
        (aw.error_reply(529, "overloaded_error", "Overloaded"), False),
        (aw.error_reply(529, "overloaded_error", "Overloaded"), True),
        (
            sse_reply(
                [
                    aw.start(aw.usage()),
                    ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
                ],
                named=True,
            ),
            True,
        ),
    ],
    ids=["status-plain", "status-stream", "stream-event"],
)
async def test_anthropic_overloaded_is_one_class(wire: WireServer, reply: Reply, streamed: bool) -> None:
    wire.queue(reply)
    error = await failure(anthropic(wire), streamed)
    assert type(error) is ProviderOverloadedError and error.retryable


STATUS_CASES: list[tuple[int, type[ProviderError]]] = [
    (408, ProviderTimeoutError),
    (504, ProviderTimeoutError),
    (529, ProviderOverloadedError),
    (409, ProviderOverloadedError),
    (503, ProviderOverloadedError),
    (404, BadRequestError),
]


def openai_error(status: int) -> Reply:
    return json_reply({"error": {"message": "failed", "type": "server", "param": None, "code": None}}, status)


@pytest.mark.parametrize(("status", "expected"), STATUS_CASES)
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_status_means_the_same_on_every_provider(
    wire: WireServer, provider: str, status: int, expected: type[ProviderError]
) -> None:
    if provider == "openai":
        wire.queue(openai_error(status))
        model = chat(wire, "openai:gpt-4.1-mini")
    else:
        wire.queue(aw.error_reply(status, "api_error", "failed"))
        model = anthropic(wire)
    error = await failure(model, streamed=False)
    assert type(error) is expected
    assert error.status_code == status


def http_date(seconds_from_now: int) -> str:
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


RETRY_CASES: list[tuple[Callable[[], dict[str, str]], float, float]] = [
    (lambda: {"retry-after-ms": "1500"}, 1.5, 1.5),
    (lambda: {"retry-after": "7"}, 7.0, 7.0),
    (lambda: {"retry-after": http_date(300)}, 200.0, 300.0),  # an HTTP date: seconds from now
]


@pytest.mark.parametrize(("header", "low", "high"), RETRY_CASES, ids=["ms", "seconds", "http-date"])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "google"])
async def test_retry_after_is_read_the_same_everywhere(
    wire: WireServer, provider: str, header: Callable[[], dict[str, str]], low: float, high: float
) -> None:
    headers = header()
    make: dict[str, Callable[[], tuple[Reply, Model]]] = {
        "openai": lambda: (
            json_reply(
                {"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}}, 429, headers
            ),
            chat(wire, "openai:gpt-4.1-mini"),
        ),
        "anthropic": lambda: (aw.error_reply(429, "rate_limit_error", "slow down", headers), anthropic(wire)),
        "google": lambda: (
            json_reply({"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}, 429, headers),
            get_model("google:gemini-2.5-flash", base_url=wire.url, api_key="g-test", max_retries=0),
        ),
    }
    reply, model = make[provider]()
    wire.queue(reply)
    error = await failure(model, streamed=False)
    assert isinstance(error, RateLimitError)
    assert error.retry_after is not None and low <= error.retry_after <= high


TOO_LONG = [
    "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
    "prompt is too long: 210000 tokens > 200000 maximum",
    "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
]


@pytest.mark.parametrize("message", TOO_LONG)
@pytest.mark.parametrize("provider", ["openai", "anthropic", "google"])
async def test_every_provider_knows_every_too_long_phrase(wire: WireServer, provider: str, message: str) -> None:
    replies: dict[str, Callable[[], tuple[Reply, Model]]] = {
        "openai": lambda: (
            json_reply({"error": {"message": message, "type": "invalid_request_error"}}, 400),
            chat(wire, "vllm:Qwen/Qwen3-8B"),
        ),
        "anthropic": lambda: (aw.error_reply(400, "invalid_request_error", message), anthropic(wire)),
        "google": lambda: (
            json_reply({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}, 400),
            get_model("google:gemini-2.5-flash", base_url=wire.url, api_key="g-test", max_retries=0),
        ),
    }
    reply, model = replies[provider]()
    wire.queue(reply)
    error = await failure(model, streamed=False)
    assert type(error) is ContextLengthError


def test_the_table_decides_by_status_first_then_by_code() -> None:
    cases: list[tuple[int | None, list[Any], str, type[ProviderError]]] = [
        (None, ["tool_use_failed", "invalid_request_error"], "x", BadRequestError),
        (400, ["tool_use_failed"], "x", BadRequestError),
        (400, ["API_KEY_INVALID"], "API key not valid", error_class(401, [], "")),
        (None, [], "upstream failed", ProviderOverloadedError),
        (None, ["something_new"], "x", ProviderError),
        (429, [], "prompt is too long", RateLimitError),  # a rate limit is never a context error
    ]
    for status, codes, message, expected in cases:
        assert error_class(status, codes, message) is expected, (status, codes, message)
