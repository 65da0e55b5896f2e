"""Inspection: the exact payloads sent to and received from the provider, credentials redacted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models.openai_wire import chunk, completion, plain, stream, usage, usage_chunk
from tests.support.wire import WireServer
from tooloop import Agent, Hooks, ModelSettings, UserMessage, get_model
from tooloop.models.payloads import ProviderPayload

SECRET = "sk-very-secret-0123456789abcdef"


def openai(wire: WireServer, **options: Any) -> Any:
    return get_model("openai:gpt-4.1-mini", base_url=wire.url + "/v1", api_key=SECRET, max_retries=0, **options)


@pytest.mark.parametrize("mode", ["plain", "stream"])
async def test_the_hook_sees_exactly_what_went_over_the_wire(wire: WireServer, mode: str) -> None:
    if mode == "plain":
        wire.queue(plain(completion({"content": "Hi there."}, "stop", usage(12, 3))))
    else:
        wire.queue(
            stream(
                chunk({"role": "assistant", "content": "Hi "}),
                chunk({"content": "there."}, "stop"),
                usage_chunk(usage(12, 3)),
            )
        )
    seen: list[ProviderPayload] = []
    model = openai(wire)
    agent = Agent(model, system="Be brief.", hooks=Hooks(on_provider_payload=seen.append))
    if mode == "plain":
        result = await agent.run("hello")
    else:
        async with agent.stream("hello") as events:
            async for _ in events:
                pass
        result = events.result  # type: ignore[assignment]
    await model.aclose()
    assert result is not None and result.text == "Hi there."

    request, response = seen
    assert (request.direction, request.provider, request.model) == ("request", "openai", "gpt-4.1-mini")
    assert request.data == wire.requests[0].json  # the body the server received, byte for byte as JSON
    assert json.loads(request.to_json()) == request.data
    assert response.direction == "response"
    if mode == "plain":
        assert response.streamed is False
        assert response.data == completion({"content": "Hi there."}, "stop", usage(12, 3))
    else:
        assert response.streamed is True
        assert [c["choices"][0]["delta"].get("content") for c in response.data[:2]] == ["Hi ", "there."]
        assert response.data[-1]["usage"]["prompt_tokens"] == 12


async def test_credentials_never_appear_in_a_payload(wire: WireServer) -> None:
    wire.queue(plain(completion({"content": "ok"}, "stop", usage(5, 1))))
    seen: list[ProviderPayload] = []
    model = openai(wire)
    settings = ModelSettings(extra={"metadata": {"note": f"key is {SECRET}"}, "user_api_key": "abc", "x": "Bearer tok"})
    await Agent(model, settings=settings, hooks=Hooks(on_provider_payload=seen.append)).run("hi")
    await model.aclose()
    sent = wire.requests[0].json
    assert sent["user_api_key"] == "abc" and SECRET in sent["metadata"]["note"]  # really sent...
    text = seen[0].to_json()
    assert SECRET not in text and "abc" not in text and "Bearer tok" not in text  # ...never shown
    assert seen[0].data["user_api_key"] == "<redacted>"
    assert seen[0].data["metadata"]["note"] == "key is <redacted>"


@pytest.mark.parametrize("streamed", [False, True])
async def test_anthropic_payloads_too(wire: WireServer, streamed: bool) -> None:
    content = [{"type": "text", "text": "Bonjour."}]
    wire.queue(aw.streamed(content) if streamed else aw.plain(content))
    seen: list[ProviderPayload] = []
    model = get_model(f"anthropic:{aw.MODEL}", base_url=wire.url, api_key=SECRET, max_retries=0)
    agent = Agent(model, hooks=Hooks(on_provider_payload=seen.append), settings=ModelSettings(stream=streamed))
    assert (await agent.run("salut")).text == "Bonjour."
    await model.aclose()
    request, response = seen
    assert request.data == wire.requests[0].json
    if streamed:
        assert [event["event"] for event in response.data][:2] == ["message_start", "ping"]
        assert response.data[-1] == {"event": "message_stop", "data": {"type": "message_stop"}}
    else:
        assert response.data["content"] == content


async def test_no_hook_no_payloads_and_test_models_send_none() -> None:
    seen: list[ProviderPayload] = []
    await Agent("test:echo", hooks=Hooks(on_provider_payload=seen.append)).run("hi")
    assert seen == []


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_requests_results_and_tool_calls_read_well() -> None:
    seen: list[str] = []
    hooks = Hooks(on_model_response=lambda step: seen.append(repr(step.request)) and None)
    result = await Agent("test:echo", system="Be brief.", tools=[add], hooks=hooks).run("What is 1 + 1?")
    user = UserMessage("What is 1 + 1?")
    assert seen[0] == f"ModelRequest(messages=[SystemMessage(text='Be brief.'), {user!r}], tools=['add'])"
    assert (
        repr(result.tool_calls[0])
        == "ToolCallMessage(tool_name='add', arguments={'a': 1, 'b': 1}, status='ok', result=2, tool_call_id='call_0')"
    )
    assert repr(result) == (
        "RunResult(stop_reason='end_turn', text='You said: What is 1 + 1?. Tool results: add -> 2', "
        f"tool_calls=1, messages=3, usage={result.usage!r})"
    )
