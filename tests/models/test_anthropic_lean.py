"""The Anthropic adapter's two transports: the lean path (the default) and the ``anthropic`` SDK.

The wire tests of the adapter (test_anthropic.py and the cross-provider tests) run on the default
path; these show what is particular to the choice: the lean path does not load the SDK, sends the
headers the SDK sends, retries as the SDK does, and both paths send and read the same; the SDK is
used for ``transport="sdk"``, a ``client`` you pass and a configured proxy.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.support.wire import WireServer, sse_reply
from tooloop.errors import (
    BadRequestError,
    ConfigurationError,
    ProviderConnectionError,
    ProviderError,
    ProviderOverloadedError,
    RateLimitError,
)
from tooloop.messages import UserMessage
from tooloop.models import ModelRequest, ModelSettings, get_model
from tooloop.models.anthropic import ANTHROPIC_VERSION, AnthropicModel, create

KEY = "sk-ant-lean-test"
REQUEST = ModelRequest([UserMessage("hi")], settings=ModelSettings(max_tokens=100))
ROOT = Path(__file__).resolve().parents[2]
TEXT = [{"type": "text", "text": "Hello there."}]


@pytest.fixture
async def made() -> AsyncIterator[list[AnthropicModel]]:
    models: list[AnthropicModel] = []
    yield models
    for model in models:
        await model.aclose()


@pytest.fixture
def make(wire: WireServer, made: list[AnthropicModel]) -> Callable[..., AnthropicModel]:
    def make(**options: Any) -> AnthropicModel:
        options.setdefault("max_retries", 0)
        options.setdefault("base_url", wire.url)
        model = create(aw.MODEL, api_key=KEY, **options)
        made.append(model)
        return model

    return make


def listener(event: object) -> None:
    pass


# -- which path ----------------------------------------------------------------------------------


def test_the_lean_path_is_the_default_and_never_loads_the_sdk() -> None:
    code = """
import asyncio, sys
from tests.models import anthropic_wire as aw
from tests.support.wire import WireServer
from tooloop import get_model
from tooloop.messages import UserMessage
from tooloop.models import ModelRequest, ModelSettings

async def main():
    wire = WireServer().start()
    wire.queue(aw.plain([{"type": "text", "text": "plain"}]), aw.streamed([{"type": "text", "text": "streamed"}]))
    wire.queue(aw.error_reply(529, "overloaded_error", "Overloaded"))
    model = get_model("anthropic:claude-haiku-4-5", base_url=wire.url, api_key="k", max_retries=0, max_tokens=100)
    request = ModelRequest([UserMessage("hi")])
    assert (await model.respond(request)).text == "plain"
    assert (await model.respond(request, lambda event: None)).text == "streamed"
    try:
        await model.respond(request)
    except Exception as exc:
        assert type(exc).__name__ == "ProviderOverloadedError", exc
    await model.aclose()
    wire.stop()

asyncio.run(main())
loaded = sorted(name for name in sys.modules if name.split(".")[0] in ("anthropic", "httpx2", "httpx"))
assert not loaded, loaded[:5]
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=ROOT)


@pytest.mark.parametrize("mode", ["plain", "stream"])
async def test_both_transports_send_and_read_the_same(
    wire: WireServer, make: Callable[..., AnthropicModel], mode: str
) -> None:
    content = [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    answers = {}
    for transport in ("sdk", "lean"):
        wire.queue(aw.streamed(content, "tool_use") if mode == "stream" else aw.plain(content, "tool_use"))
        model = make(transport=transport, default_headers={"x-team": "eval"})
        response = await model.respond(REQUEST, listener if mode == "stream" else None)
        answers[transport] = (response.text, response.tool_calls, response.stop_reason, response.usage)
    sdk, lean = wire.requests
    assert sdk.json == lean.json
    assert sdk.path == lean.path == "/v1/messages"
    same = ("authorization", "anthropic-version", "content-type", "accept", "x-stainless-retry-count", "x-team")
    assert {k: sdk.headers.get(k) for k in same} == {k: lean.headers.get(k) for k in same}
    assert answers["sdk"] == answers["lean"]
    assert sdk.headers["user-agent"].startswith("AsyncAnthropic/")
    assert lean.headers["user-agent"].startswith("tooloop/")


async def test_the_lean_path_sends_the_headers_the_sdk_sends(
    wire: WireServer, make: Callable[..., AnthropicModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    from anthropic._constants import ANTHROPIC_API_VERSION

    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "x-from-env: one\nx-both: env")
    wire.queue(aw.plain(TEXT))
    await make(default_headers={"x-both": "option"}).respond(REQUEST)
    headers = wire.requests[0].headers
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["anthropic-version"] == ANTHROPIC_VERSION == ANTHROPIC_API_VERSION
    assert headers["user-agent"].startswith("tooloop/")
    assert headers["content-type"] == "application/json" and headers["accept"] == "application/json"
    assert headers["x-stainless-retry-count"] == "0"
    assert (headers["x-from-env"], headers["x-both"]) == ("one", "option")  # default_headers win, as in the SDK


async def test_transport_sdk_and_a_client_use_the_sdk(wire: WireServer, make: Callable[..., AnthropicModel]) -> None:
    from anthropic import AsyncAnthropic

    client = AsyncAnthropic(api_key=KEY, base_url=wire.url, max_retries=0)
    wire.queue(aw.plain(TEXT), aw.plain(TEXT))
    await make(transport="sdk").respond(REQUEST)
    with_client = make(client=client, transport="lean")  # your own client is always used as it is
    await with_client.respond(REQUEST)
    assert [r.headers["user-agent"].split("/")[0] for r in wire.requests] == ["AsyncAnthropic", "AsyncAnthropic"]
    assert repr(with_client) == repr(make())
    await client.close()


async def test_a_configured_proxy_is_used_through_the_sdk(
    wire: WireServer, make: Callable[..., AnthropicModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", wire.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    wire.queue(aw.plain(TEXT))
    response = await make(base_url="http://api.example.invalid").respond(REQUEST)
    assert response.text == "Hello there."
    # the request line of a request through a proxy carries the absolute URL
    assert wire.requests[0].path == "http://api.example.invalid/v1/messages"
    assert wire.requests[0].headers["user-agent"].startswith("AsyncAnthropic/")


def test_the_sdk_path_without_the_sdk_says_what_to_install() -> None:
    code = """
import sys
sys.modules["anthropic"] = None  # as if the package were not installed
from tooloop import get_model
from tooloop.errors import ConfigurationError
get_model("anthropic:claude-haiku-4-5", base_url="http://127.0.0.1:9", api_key="k")  # lean: no SDK needed
try:
    get_model("anthropic:claude-haiku-4-5", base_url="http://127.0.0.1:9", api_key="k", transport="sdk")
except ConfigurationError as exc:
    assert 'pip install "tooloop[anthropic]"' in str(exc), exc
else:
    raise AssertionError("no error")
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=ROOT)


def test_an_unknown_transport_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="transport must be 'lean' or 'sdk'"):
        get_model(f"anthropic:{aw.MODEL}", api_key=KEY, transport="curl")


# -- retries, as the SDK retries ---------------------------------------------------------------------


async def test_retry_after_is_waited_for(wire: WireServer, make: Callable[..., AnthropicModel]) -> None:
    wire.queue(aw.error_reply(429, "rate_limit_error", "slow down", {"retry-after-ms": "400"}), aw.plain(TEXT))
    started = time.monotonic()
    response = await make(max_retries=1).respond(REQUEST)
    assert response.text == "Hello there."
    assert time.monotonic() - started >= 0.4
    assert [r.headers["x-stainless-retry-count"] for r in wire.requests] == ["0", "1"]
    assert wire.requests[0].json == wire.requests[1].json


@pytest.mark.parametrize(
    ("status", "verdict", "requests"),
    [(500, "false", 1), (400, "true", 2), (529, None, 2), (408, None, 2), (409, None, 2), (400, None, 1)],
)
async def test_which_statuses_are_retried(
    wire: WireServer, make: Callable[..., AnthropicModel], status: int, verdict: str | None, requests: int
) -> None:
    headers = {"retry-after-ms": "1", **({"x-should-retry": verdict} if verdict else {})}
    wire.queue(aw.error_reply(status, "api_error", "failed", headers), aw.plain(TEXT))
    model = make(max_retries=1)
    if requests == 2:
        assert (await model.respond(REQUEST)).text == "Hello there."
    else:
        with pytest.raises(ProviderError) as info:
            await model.respond(REQUEST)
        assert info.value.status_code == status
    assert len(wire.requests) == requests


async def test_529_exhausted_is_overloaded_with_the_whole_body(
    wire: WireServer, make: Callable[..., AnthropicModel]
) -> None:
    wire.queue(*[aw.error_reply(529, "overloaded_error", "Overloaded", {"retry-after-ms": "1"})] * 2)
    with pytest.raises(ProviderOverloadedError) as info:
        await make(max_retries=1).respond(REQUEST)
    assert len(wire.requests) == 2
    error = info.value
    assert error.status_code == 529 and error.retryable
    assert "overloaded_error" in str(error) and "Overloaded" in str(error)
    assert error.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
        "request_id": "req_01",
    }


@pytest.mark.parametrize("transport", ["sdk", "lean"])
async def test_both_transports_give_the_same_rate_limit_error(
    wire: WireServer, make: Callable[..., AnthropicModel], transport: str
) -> None:
    wire.queue(aw.error_reply(429, "rate_limit_error", "slow down", {"retry-after": "30"}))
    with pytest.raises(RateLimitError) as info:
        await make(transport=transport).respond(REQUEST)
    error = info.value
    assert (error.status_code, error.retry_after) == (429, 30.0)
    assert str(error) == "anthropic 429 (rate_limit_error): slow down"
    assert error.body["request_id"] == "req_01"


# -- streams -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["sdk", "lean"])
async def test_an_error_event_in_a_200_stream(
    wire: WireServer, make: Callable[..., AnthropicModel], transport: str
) -> None:
    error = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad tool schema"}}
    wire.queue(sse_reply([aw.start(aw.usage()), aw.PING, ("error", error)], named=True))
    with pytest.raises(BadRequestError) as info:
        await make(transport=transport).respond(REQUEST, listener)
    assert info.value.status_code is None
    assert str(info.value) == "anthropic stream error (invalid_request_error): bad tool schema"
    assert info.value.body == error


async def test_a_stream_cut_short_fails_and_the_next_request_gets_a_fresh_connection(
    wire: WireServer, make: Callable[..., AnthropicModel]
) -> None:
    events = aw.stream_events(TEXT)[:4]  # message_start, ping, the block's start and first delta
    wire.queue(sse_reply(events, named=True, cut=True), aw.streamed(TEXT))
    model = make(max_retries=2)
    with pytest.raises(ProviderConnectionError) as info:
        await model.respond(REQUEST, listener)
    assert "1 attempt" in str(info.value)  # a stream that broke after its first byte is not retried
    assert (await model.respond(REQUEST, listener)).text == "Hello there."
    assert len(wire.requests) == 2


async def test_event_data_that_is_not_json_is_a_response_error(
    wire: WireServer, make: Callable[..., AnthropicModel]
) -> None:
    wire.queue(sse_reply([aw.start(aw.usage()), "event: content_block_start\ndata: {not json\n\n"], named=True))
    with pytest.raises(Exception) as info:
        await make().respond(REQUEST, listener)
    assert type(info.value).__name__ == "ModelResponseError"


async def test_keep_alive_serves_every_turn_plain_and_streamed(
    wire: WireServer, make: Callable[..., AnthropicModel]
) -> None:
    model = make()
    for _ in range(3):
        wire.queue(aw.plain(TEXT), aw.streamed(TEXT))
        assert (await model.respond(REQUEST)).text == "Hello there."
        assert (await model.respond(REQUEST, listener)).text == "Hello there."
    assert wire.connections == 1


# -- long plain requests -----------------------------------------------------------------------------


async def test_a_forced_plain_request_with_a_large_max_tokens_gets_a_longer_idle_timeout(
    wire: WireServer, make: Callable[..., AnthropicModel]
) -> None:
    wire.queue(aw.plain(TEXT), aw.plain(TEXT))
    model = make()
    settings = ModelSettings(max_tokens=64_000, stream=False)
    assert (await model.respond(ModelRequest([UserMessage("hi")], settings=settings))).text == "Hello there."
    assert (await model.respond(REQUEST)).text == "Hello there."  # the model's own client, for a small one
    sent = [json.loads(r.body) for r in wire.requests]
    assert [("stream" in body, body["max_tokens"]) for body in sent] == [(False, 64_000), (False, 100)]
    assert model._idle_timeout == 120.0
    assert [lean.pools.first.read_timeout for lean in model._channel._long.values()] == [1800.0]  # an hour per 128k


def _piece(*events: tuple[str, Any]) -> bytes:
    return b"".join(b"event: %s\ndata: %s\n\n" % (name.encode(), json.dumps(data).encode()) for name, data in events)


_BLOCKS = [
    {"type": "thinking", "thinking": "Sum them.", "signature": "sig"},
    {"type": "text", "text": "Adding up."},
    {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
]
_USUAL = _piece(*aw.stream_events(_BLOCKS, "tool_use", aw.usage(5, 9, cache_read_input_tokens=3)))
_DELTA = aw.delta(0, {"type": "text_delta", "text": "x"})
_HOUR = {"input_tokens": 1, "output_tokens": 2, "cache_creation": {"ephemeral_1h_input_tokens": 4}}


def _raised(feed: Callable[[Any], None], events: Any) -> str | None:
    try:
        feed(events)
    except Exception as exc:
        return repr(exc)
    return None


@pytest.mark.parametrize(
    ("piece", "taken"),
    [
        (_USUAL, True),
        (_piece(aw.start(_HOUR)), True),
        (_piece(("x", {"type": "ping"}), aw.STOP), True),  # the name counts for nothing when the data has a type
        (_piece(("x", {"a": 1})), False),  # data without a type: the event's name names it
        (_piece(("error", {"type": "error", "error": {"type": "overloaded_error"}, "request_id": "r"})), False),
        (_piece(("x", {"type": "x"})), False),  # an event type tooloop does not know
        (_piece(("x", {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "x"}})), False),
        (_piece(aw.delta(0, {"type": "citations_delta", "citation": {}})), False),
        (_piece(("message_start", {"type": "message_start", "message": None})), False),
        (_piece(("message_start", {"type": "message_start", "message": {"usage": [["a", 1]]}})), False),
        (_piece(_DELTA, ("x", "text"), aw.PING), True),  # data that is a JSON string fails the same way
        (_piece(aw.PING) + b": keep-alive\n\n", False),  # a comment line
        (b'event: x\nid: 7\ndata: {"type": "ping"}\n\n', False),  # another field between name and data
        (b'event: x\ndata: {"type":\ndata: "ping"}\n\n', False),  # data over two lines
        (b'event: x\ndata: {"type": "ping"}\n\nevent: y\n\n', False),  # an event without data
        (b'event: a","b\ndata: {"type": "ping"}\n\n', False),  # a name that would break out of a JSON string
        (b'event: x\r\ndata: {"type": "ping"}\r\n\r\n', False),  # CRLF line ends
        (b'event: x\ndata: {"type": "ping"}\n', False),  # an unfinished event
        (b'data: {"type": "ping"}\n\n', False),  # no name
    ],
)
def test_the_usual_piece_is_read_as_the_general_decoder_reads_it_or_left_to_it(piece: bytes, taken: bool) -> None:
    from tooloop.models.anthropic.response import usage_from
    from tooloop.models.anthropic.stream import StreamReader, _usual_events
    from tooloop.transport.sse import SSEDecoder

    found = _usual_events(piece)
    assert (found is not None) is taken  # any other piece is left to the general decoder
    if found is None:
        return
    fast: list[Any] = []
    general: list[Any] = []
    fast_reader, general_reader = StreamReader(fast.append), StreamReader(general.append)
    fast.append(_raised(fast_reader.feed_typed, found))
    general.append(_raised(general_reader.feed_all, SSEDecoder().feed(piece)))
    assert fast == general  # the same deltas, and the same error if any
    assert fast_reader.stopped is general_reader.stopped
    if general_reader.stopped:
        assert fast_reader.result() == general_reader.result()
    else:
        assert (fast_reader.model, fast_reader.response_id) == (general_reader.model, general_reader.response_id)
        assert usage_from(fast_reader.usage) == usage_from(general_reader.usage)
