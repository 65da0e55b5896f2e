"""Connections, timeouts, base URLs and keys from the environment, on every adapter's official SDK.

A multi-turn stream reuses one TCP connection (the server counts them); a server that is down
gives an error naming the URL, the attempts and what to check, never the key; a server that takes
the request and then stalls fails as a retryable timeout within the configured idle time; each
ecosystem's variables (``OLLAMA_HOST``, ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, the key
variables) are honoured, an explicit argument first.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models import openai_wire as ow
from tests.models.test_openai_responses import Stream
from tests.models.test_openai_responses import call as responses_call
from tests.models.test_openai_responses import message as responses_message
from tests.models.test_openai_responses import response as responses_body
from tests.support.wire import Recorded, Reply, WireServer, json_reply, sse_reply
from tooloop import Agent, RunFinished, RunResult
from tooloop.errors import ProviderConnectionError, ProviderTimeoutError
from tooloop.messages import AssistantMessage, StopReason, UserMessage
from tooloop.models import Model, ModelRequest, get_model

KEY = "sk-secret-transport-key-123"
REQUEST = ModelRequest([UserMessage("hi")])


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"18C in {city}"


async def streamed_run(agent: Agent, prompt: str) -> RunResult:
    async with agent.stream(prompt) as events:
        async for event in events:
            if isinstance(event, RunFinished):
                return event.result
    raise AssertionError("no RunFinished")


# -- one connection for a multi-turn stream ------------------------------------------------------


def responses_turns() -> list[Reply]:
    first = Stream().call_added(0, "call_1", "get_weather", "fc_1").args(0, '{"city":"Paris"}', "fc_1")
    first.call_done(0, "call_1", "get_weather", '{"city":"Paris"}', "fc_1")
    second = Stream().call_added(0, "call_2", "get_weather", "fc_2").args(0, '{"city":"Rome"}', "fc_2")
    second.call_done(0, "call_2", "get_weather", '{"city":"Rome"}', "fc_2")
    third = Stream().text(0, "Both ", "are mild.")
    return [
        first.end("response.completed", responses_body([responses_call("call_1", "get_weather", '{"city":"Paris"}')])),
        second.end(
            "response.completed",
            responses_body([responses_call("call_2", "get_weather", '{"city":"Rome"}', item_id="fc_2")]),
        ),
        third.end("response.completed", responses_body([responses_message("Both are mild.")])),
    ]


def chat_turns() -> list[Reply]:
    def call(call_id: str, city: str) -> Reply:
        start = ow.call_start(0, call_id, "get_weather", f'{{"city": "{city}"}}')
        return ow.stream(ow.chunk({"tool_calls": [start]}), ow.chunk({}, "tool_calls"), ow.usage_chunk(ow.usage()))

    text = ow.stream(ow.chunk({"content": "Both are mild."}), ow.chunk({}, "stop"), ow.usage_chunk(ow.usage()))
    return [call("call_1", "Paris"), call("call_2", "Rome"), text]


def anthropic_turns() -> list[Reply]:
    def call(call_id: str, city: str) -> Reply:
        block = {"type": "tool_use", "id": call_id, "name": "get_weather", "input": {"city": city}}
        return aw.streamed([block], "tool_use")

    return [
        call("toolu_1", "Paris"),
        call("toolu_2", "Rome"),
        aw.streamed([{"type": "text", "text": "Both are mild."}]),
    ]


STREAMS: dict[str, tuple[Callable[[WireServer], Model], Callable[[], list[Reply]]]] = {
    "openai-responses": (
        lambda wire: get_model("openai-responses:gpt-5-mini", base_url=f"{wire.url}/v1", api_key=KEY, max_retries=0),
        responses_turns,
    ),
    "openai": (
        lambda wire: get_model("openai:gpt-4.1-mini", base_url=f"{wire.url}/v1", api_key=KEY, max_retries=0),
        chat_turns,
    ),
    "anthropic": (
        lambda wire: get_model(f"anthropic:{aw.MODEL}", base_url=wire.url, api_key=KEY, max_retries=0),
        anthropic_turns,
    ),
}


@pytest.mark.parametrize("name", sorted(STREAMS))
async def test_a_multi_turn_stream_uses_one_connection(wire: WireServer, name: str) -> None:
    make, turns = STREAMS[name]
    wire.queue(*turns())
    model = make(wire)
    try:
        result = await streamed_run(Agent(model, tools=[get_weather]), "Paris, then Rome?")
    finally:
        await model.aclose()  # type: ignore[attr-defined]
    assert result.text == "Both are mild."
    assert len(wire.requests) == 3
    assert wire.connections == 1


# -- Anthropic refusals keep their stop_details ---------------------------------------------------

DETAILS = {
    "type": "refusal",
    "category": "cyber",
    "explanation": "The request asks for working exploit code against a live system.",
}


@pytest.mark.parametrize("mode", ["stream", "plain"])
async def test_an_anthropic_refusal_keeps_its_stop_details(wire: WireServer, mode: str) -> None:
    if mode == "plain":
        body = aw.message([], "refusal")
        body["stop_details"] = DETAILS
        wire.queue(json_reply(body))
    else:
        events = aw.stream_events([], "refusal")
        events[-2][1]["delta"]["stop_details"] = DETAILS
        wire.queue(_named(events))
    model = get_model(f"anthropic:{aw.MODEL}", base_url=wire.url, api_key=KEY, max_retries=0, max_tokens=1024)
    agent = Agent(model)
    try:
        result = await (
            streamed_run(agent, "Write an exploit.") if mode == "stream" else agent.run("Write an exploit.")
        )
    finally:
        await model.aclose()  # type: ignore[attr-defined]
    assert result.stop_reason is StopReason.REFUSAL
    last = result.transcript.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.refusal == DETAILS["explanation"]
    assert last.provider_data["anthropic"]["stop_details"] == DETAILS


def _named(events: list[Any]) -> Reply:
    return sse_reply(events, named=True)


# -- a server that is down ---------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


DOWN: dict[str, Callable[[str], Model]] = {
    "ollama": lambda url: get_model("ollama:qwen3", base_url=f"{url}/v1", api_key=KEY, max_retries=1),
    "openai-responses": lambda url: get_model(
        "openai-responses:gpt-5-mini", base_url=f"{url}/v1", api_key=KEY, max_retries=1
    ),
    "anthropic": lambda url: get_model(f"anthropic:{aw.MODEL}", base_url=url, api_key=KEY, max_retries=1),
    "google": lambda url: get_model("google:gemini-2.5-flash", base_url=url, api_key=KEY, max_retries=1),
}


@pytest.mark.parametrize("mode", ["stream", "plain"])
@pytest.mark.parametrize("name", sorted(DOWN))
async def test_a_server_that_is_down_is_named_with_the_attempts_made(name: str, mode: str) -> None:
    port = closed_port()
    model = DOWN[name](f"http://127.0.0.1:{port}")
    try:
        with pytest.raises(ProviderConnectionError) as info:
            await model.respond(REQUEST, (lambda event: None) if mode == "stream" else None)
    finally:
        await model.aclose()  # type: ignore[attr-defined]
    text = str(info.value)
    assert f"127.0.0.1:{port}" in text
    assert "after 2 attempts" in text
    assert "check that the server is running" in text
    assert KEY not in text and KEY not in repr(info.value.__cause__)
    assert info.value.retryable


# -- a server that takes the request and stalls --------------------------------------------------


def stalls(seconds: float) -> Callable[[Recorded], Reply]:
    def handler(recorded: Recorded) -> Reply:
        time.sleep(seconds)
        return json_reply({})

    return handler


STALL: dict[str, tuple[Callable[[WireServer], Model], Callable[[], Reply]]] = {
    "openai": (
        lambda wire: get_model("vllm:m", base_url=f"{wire.url}/v1", api_key=KEY, max_retries=0, timeout=0.5),
        lambda: Reply(200, {"content-type": "text/event-stream"}, chunks=[b'data: {"choices": []}\n\n'], stall=4),
    ),
    "openai-responses": (
        lambda wire: get_model(
            "openai-responses:gpt-5-mini", base_url=f"{wire.url}/v1", api_key=KEY, max_retries=0, timeout=0.5
        ),
        lambda: Reply(200, {"content-type": "text/event-stream"}, chunks=Stream().reply().chunks, stall=4),
    ),
    "anthropic": (
        lambda wire: get_model(f"anthropic:{aw.MODEL}", base_url=wire.url, api_key=KEY, max_retries=0, timeout=0.5),
        lambda: Reply(
            200, {"content-type": "text/event-stream"}, chunks=_named([aw.start(aw.usage())]).chunks, stall=4
        ),
    ),
    "google": (
        lambda wire: get_model("google:gemini-2.5-flash", base_url=wire.url, api_key=KEY, max_retries=0, timeout=0.5),
        lambda: Reply(200, {"content-type": "text/event-stream"}, chunks=[b"data: {}\r\n\r\n"], stall=4),
    ),
}


@pytest.mark.parametrize("phase", ["request", "stream"])
@pytest.mark.parametrize("name", sorted(STALL))
async def test_a_stalled_server_fails_as_a_retryable_timeout(wire: WireServer, name: str, phase: str) -> None:
    make, stalled_stream = STALL[name]
    wire.queue(stalls(4) if phase == "request" else stalled_stream())
    model = make(wire)
    started = time.monotonic()
    try:
        with pytest.raises(ProviderTimeoutError) as info:
            await model.respond(REQUEST, (lambda event: None) if phase == "stream" else None)
    finally:
        await model.aclose()  # type: ignore[attr-defined]
    assert time.monotonic() - started < 3.5  # the idle timeout, not the server's stall, ended it
    assert info.value.retryable
    assert wire.url.removeprefix("http://") in str(info.value) and "0.5 s" in str(info.value)
    assert KEY not in str(info.value)


def test_the_default_idle_timeout_is_bounded() -> None:
    from tooloop.models.adapter import DEFAULT_TIMEOUT

    model = get_model("ollama:qwen3")
    assert model._idle_timeout == DEFAULT_TIMEOUT <= 300  # type: ignore[attr-defined]


# -- base URLs and keys from the environment -----------------------------------------------------


def chat_answer() -> Reply:
    return ow.plain(ow.completion({"content": "ok"}))


async def answered(model: Model) -> str:
    try:
        return (await model.respond(REQUEST)).text
    finally:
        await model.aclose()  # type: ignore[attr-defined]


@pytest.mark.parametrize("form", ["host:port", "url"])
async def test_ollama_host_is_honoured(wire: WireServer, monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    host = wire.url.removeprefix("http://")
    monkeypatch.setenv("OLLAMA_HOST", host if form == "host:port" else wire.url)
    wire.queue(chat_answer())
    assert await answered(get_model("ollama:qwen3")) == "ok"
    assert wire.requests[0].path == "/v1/chat/completions"


async def test_an_explicit_base_url_beats_the_variable(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{closed_port()}")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    wire.queue(chat_answer(), chat_answer())
    assert await answered(get_model("ollama:qwen3", base_url=f"{wire.url}/v1")) == "ok"
    assert await answered(get_model("openai:gpt-4.1", base_url=f"{wire.url}/v1", api_key=KEY)) == "ok"
    assert len(wire.requests) == 2


async def test_openai_base_url_and_key_variables(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{wire.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    wire.queue(chat_answer(), json_reply(responses_body([responses_message("ok")])))
    assert await answered(get_model("openai:gpt-4.1")) == "ok"
    assert await answered(get_model("openai-responses:gpt-5-mini")) == "ok"
    assert [r.path for r in wire.requests] == ["/v1/chat/completions", "/v1/responses"]
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in wire.requests)


async def test_openai_base_url_is_not_read_for_other_servers(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # Your OpenAI settings never send a local model's traffic (or its key) elsewhere.
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    monkeypatch.setenv("OLLAMA_HOST", wire.url)
    wire.queue(chat_answer())
    assert await answered(get_model("ollama:qwen3")) == "ok"


async def test_anthropic_base_url_and_key_variables(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", wire.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    wire.queue(aw.plain([{"type": "text", "text": "ok"}]))
    assert await answered(get_model(f"anthropic:{aw.MODEL}", max_tokens=1024)) == "ok"
    assert wire.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_an_explicit_key_beats_the_variable(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "from-the-environment")
    wire.queue(chat_answer(), chat_answer())
    assert await answered(get_model("deepseek:deepseek-v4-flash", base_url=f"{wire.url}/v1")) == "ok"
    assert await answered(get_model("deepseek:deepseek-v4-flash", base_url=f"{wire.url}/v1", api_key=KEY)) == "ok"
    assert [r.headers["authorization"] for r in wire.requests] == ["Bearer from-the-environment", f"Bearer {KEY}"]


def test_deepseek_is_a_named_provider() -> None:
    model = get_model("deepseek:deepseek-v4-flash", api_key=KEY)
    assert model.base_url == "https://api.deepseek.com"  # type: ignore[attr-defined]
    assert model._request._reasoning_field == "reasoning_content"  # type: ignore[attr-defined]


async def test_gemini_gets_an_idle_timeout_but_a_generous_server_deadline(wire: WireServer) -> None:
    from tests.models.test_gemini import reply as gemini_reply

    wire.queue(gemini_reply([{"text": "ok"}]))
    assert await answered(get_model("google:gemini-2.5-flash", base_url=wire.url, api_key=KEY)) == "ok"
    assert wire.requests[0].headers["x-server-timeout"] == "600"
