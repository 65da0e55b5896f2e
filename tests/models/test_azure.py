"""Azure OpenAI, as its endpoints take requests and answer them.

Two documented ways in: the deployment URLs (``{endpoint}/openai/deployments/{deployment}/chat/
completions?api-version=...`` with the key in an ``api-key`` header, as ``AzureOpenAI`` sends it)
and the v1 API (``{endpoint}/openai/v1/...``, no ``api-version``, the key as a bearer token, as
the plain ``OpenAI`` client sends it). A streamed answer opens with a chunk that has no choices
and no model (the prompt's content-filter results) and every chunk carries filter results.

Served from 127.0.0.1, on both transports and through both ``Agent.run`` and ``Agent.stream``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.models.doors import DOORS, TRANSPORTS, call_arguments, drive, joined
from tests.support.wire import Reply, WireServer, json_reply, sse_reply
from tooloop import Agent, StopReason
from tooloop.errors import AuthenticationError, ConfigurationError
from tooloop.events import TextDelta
from tooloop.messages import UserMessage
from tooloop.models import Model, ModelRequest, get_model

DEPLOYMENT = "gpt-5-mini-prod"
SERVED = "gpt-5-mini-2025-08-07"
KEY = "0123456789abcdef0123456789abcdef"
VERSION = "2024-10-21"
FILTERS = {
    "hate": {"filtered": False, "severity": "safe"},
    "self_harm": {"filtered": False, "severity": "safe"},
    "sexual": {"filtered": False, "severity": "safe"},
    "violence": {"filtered": False, "severity": "safe"},
}


def weather(location: str) -> str:
    """Weather for a city."""
    return "40 C"


def usage(prompt: int = 140, completion: int = 154) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 128, "audio_tokens": 0},
    }


def chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choices = (
        []
        if delta is None
        else [{"content_filter_results": {}, "delta": delta, "finish_reason": finish, "index": 0, "logprobs": None}]
    )
    return {
        "choices": choices,
        "created": 1782321623,
        "id": "chatcmpl-DuLYtUePDgoybMkZrAI7utkb2fiRp",
        "model": SERVED,
        "obfuscation": "BRHU",
        "object": "chat.completion.chunk",
        "system_fingerprint": None,
        "usage": None,
        **extra,
    }


PROMPT_FILTER = {
    "choices": [],
    "created": 0,
    "id": "",
    "model": "",
    "object": "",
    "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": FILTERS}],
}


def completion(message: dict[str, Any], finish: str, counts: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "choices": [
            {
                "content_filter_results": FILTERS,
                "finish_reason": finish,
                "index": 0,
                "logprobs": None,
                "message": {"annotations": [], "refusal": None, "role": "assistant", **message},
            }
        ],
        "created": 1782321623,
        "id": "chatcmpl-DuLYtUePDgoybMkZrAI7utkb2fiRp",
        "model": SERVED,
        "object": "chat.completion",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": FILTERS}],
        "system_fingerprint": None,
        "usage": counts or usage(),
    }


CALL = {"id": "call_tWA8BJziGlCyhQEXhEHn6eXK", "type": "function", "function": {"name": "weather", "arguments": ""}}


def call_turn(door: str) -> Reply:
    if door == "run":
        whole = {**CALL, "function": {"name": "weather", "arguments": '{"location":"Florence, Italy"}'}}
        return json_reply(completion({"content": None, "tool_calls": [whole]}, "tool_calls"))
    return sse_reply(
        [
            PROMPT_FILTER,
            chunk({"content": None, "refusal": None, "role": "assistant", "tool_calls": [{"index": 0, **CALL}]}),
            chunk({"tool_calls": [{"function": {"arguments": '{"location":'}, "index": 0}]}),
            chunk({"tool_calls": [{"function": {"arguments": '"Florence, Italy"}'}, "index": 0}]}),
            chunk({}, "tool_calls"),
            chunk(None, usage=usage()),
        ],
        done=True,
    )


def answer_turn(door: str, text: str = "It is 40 C in Florence.") -> Reply:
    if door == "run":
        return json_reply(completion({"content": text}, "stop", usage(300, 12)))
    return sse_reply(
        [
            PROMPT_FILTER,
            chunk({"content": "", "refusal": None, "role": "assistant"}),
            chunk({"content": text[:9]}),
            chunk({"content": text[9:]}),
            chunk({}, "stop"),
            chunk(None, usage=usage(300, 12)),
        ],
        done=True,
    )


@pytest.fixture
async def made() -> AsyncIterator[list[Model]]:
    models: list[Model] = []
    yield models
    for model in models:
        await model.aclose()  # type: ignore[attr-defined]


@pytest.fixture
def azure(wire: WireServer, made: list[Model]) -> Callable[..., Model]:
    def make(transport: str = "lean", **options: Any) -> Model:
        options.setdefault("base_url", wire.url)
        options.setdefault("api_key", KEY)
        model = get_model(f"azure:{DEPLOYMENT}", max_retries=0, transport=transport, **options)
        made.append(model)
        return model

    return make


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_deployment_urls_with_api_version_and_api_key_header(
    wire: WireServer, azure: Callable[..., Model], transport: str, door: str
) -> None:
    wire.queue(call_turn(door), answer_turn(door))
    result, events = await drive(
        Agent(azure(transport, api_version=VERSION), tools=[weather]), door, "Weather in Florence?"
    )
    assert result.text == "It is 40 C in Florence." and result.stop_reason is StopReason.END_TURN
    assert result.usage.input_tokens == 440
    for sent in wire.requests:
        assert sent.path == f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version={VERSION}"
        assert sent.headers["api-key"] == KEY
        assert "authorization" not in sent.headers
        assert sent.json["model"] == DEPLOYMENT
    assistant, tool = wire.requests[1].json["messages"][-2:]
    assert assistant["tool_calls"][0]["function"] == {"name": "weather", "arguments": '{"location": "Florence, Italy"}'}
    assert tool == {"role": "tool", "tool_call_id": CALL["id"], "content": "40 C"}
    if door == "stream":
        assert joined(events, TextDelta) == "It is 40 C in Florence."
        assert call_arguments(events) == '{"location":"Florence, Italy"}'


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_v1_api_without_api_version(
    wire: WireServer, azure: Callable[..., Model], transport: str, door: str
) -> None:
    wire.queue(answer_turn(door))
    result, _ = await drive(Agent(azure(transport)), door, "Weather?")
    assert result.text == "It is 40 C in Florence."
    sent = wire.requests[0]
    assert sent.path == "/openai/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.json["model"] == DEPLOYMENT


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_served_model_is_read_past_the_prompt_filter_chunk(
    wire: WireServer, azure: Callable[..., Model], transport: str
) -> None:
    wire.queue(answer_turn("stream"))
    response = await azure(transport, api_version=VERSION).respond(ModelRequest([UserMessage("Hi")]), lambda e: None)
    assert response.model == SERVED
    assert response.usage.output_tokens == 12 and response.usage.reasoning_tokens == 128


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_endpoint_key_and_version_come_from_the_azure_environment_variables(
    wire: WireServer, made: list[Model], monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", wire.url + "/")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_VERSION", VERSION)
    model = get_model(f"azure:{DEPLOYMENT}", max_retries=0, transport=transport)
    made.append(model)
    wire.queue(answer_turn("run"))
    assert (await model.respond(ModelRequest([UserMessage("Hi")]))).text == "It is 40 C in Florence."
    assert wire.requests[0].path == f"/openai/deployments/{DEPLOYMENT}/chat/completions?api-version={VERSION}"
    assert wire.requests[0].headers["api-key"] == KEY


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_rejected_key_is_an_authentication_error_that_never_shows_the_key(
    wire: WireServer, azure: Callable[..., Model], transport: str
) -> None:
    body = {"error": {"code": "401", "message": f"Access denied due to invalid subscription key {KEY}."}}
    wire.queue(json_reply(body, 401))
    with pytest.raises(AuthenticationError) as caught:
        await azure(transport, api_version=VERSION).respond(ModelRequest([UserMessage("Hi")]))
    assert KEY not in str(caught.value) and KEY not in repr(caught.value)


def test_an_azure_model_without_an_endpoint_says_where_to_put_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    with pytest.raises(ConfigurationError, match="AZURE_OPENAI_ENDPOINT"):
        get_model(f"azure:{DEPLOYMENT}", api_key=KEY)


async def test_the_responses_api_on_azure_v1(wire: WireServer, made: list[Model]) -> None:
    # The v1 API serves the Responses API to the plain client too: base URL and key, nothing else.
    model = get_model(f"openai-responses:{DEPLOYMENT}", base_url=wire.url + "/openai/v1", api_key=KEY, max_retries=0)
    made.append(model)
    output = [
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Hello.", "annotations": []}],
        }
    ]
    wire.queue(
        json_reply(
            {
                "id": "resp_1",
                "object": "response",
                "created_at": 1,
                "status": "completed",
                "model": SERVED,
                "output": output,
            }
        )
    )
    assert (await model.respond(ModelRequest([UserMessage("Hi")]))).text == "Hello."
    assert wire.requests[0].path == "/openai/v1/responses"
    assert wire.requests[0].headers["authorization"] == f"Bearer {KEY}"
