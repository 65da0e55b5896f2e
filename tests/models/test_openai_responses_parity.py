"""The Responses adapter's two transports give the same results for the same bytes.

Each scenario is served twice from 127.0.0.1 in the Responses wire format (named SSE events such as
``response.output_text.delta``, ``response.function_call_arguments.delta``, ``response.completed``),
once to a model on the lean transport (the default) and once to one on the ``openai`` SDK
(``transport="sdk"``); the requests sent, the responses read (text, calls, reasoning items and
their encrypted content, usage, ids), the events (joined per kind, as one network read may carry
several) and the errors must be the same. The lean path never loads the SDK.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.models.test_openai_responses import REASONING, WEATHER, Stream, call, message, response
from tests.support.deltas import merged
from tests.support.wire import Reply, WireServer, json_reply, sse_reply
from tooloop.errors import ProviderError
from tooloop.events import ModelEvent
from tooloop.messages import SystemMessage, UserMessage
from tooloop.models import ModelRequest, ModelSettings, get_model
from tooloop.models.openai_responses import OpenAIResponsesModel

KEY = "sk-responses-parity-key"
ROOT = Path(__file__).resolve().parents[2]
ASK = ModelRequest([SystemMessage("Be brief."), UserMessage("Weather in Paris and Rome?")], (WEATHER,))
SAME_HEADERS = (
    "authorization",
    "content-type",
    "accept",
    "x-stainless-retry-count",
    "openai-organization",
    "openai-project",
    "x-team",
)


@pytest.fixture
async def made() -> AsyncIterator[list[OpenAIResponsesModel]]:
    models: list[OpenAIResponsesModel] = []
    yield models
    for model in models:
        await model.aclose()


def error(
    status: int, message: str, kind: str, code: str | None = None, headers: dict[str, str] | None = None
) -> Reply:
    return json_reply({"error": {"message": message, "type": kind, "param": None, "code": code}}, status, headers)


def reasoning_calls() -> Reply:
    """Reasoning (a summary and encrypted content), then two calls with interleaved argument deltas."""
    stream = (
        Stream()
        .add("response.output_item.added", output_index=0, item={"type": "reasoning", "id": "rs_1", "summary": []})
        .add("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0, summary_index=0, delta="Need ")
        .add("response.reasoning_summary_text.delta", item_id="rs_1", output_index=0, summary_index=0, delta="both.")
        .add("response.output_item.done", output_index=0, item=REASONING | {"status": None})
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
        REASONING | {"status": None},
        call("call_a", "get_weather", '{"city":"Paris"}', item_id="fc_a"),
        call("call_b", "get_weather", '{"city":"Rome"}', item_id="fc_b"),
    ]
    return stream.end("response.completed", response(final, inp=50, out=40, cached=32, reasoning=24))


def failed() -> Reply:
    body = response([], "failed")
    body["error"] = {"code": "server_error", "message": "The model failed."}
    return Stream().text(0, "Par").end("response.failed", body)


def not_json() -> Reply:
    return Reply(200, {"content-type": "application/json"}, body=b"<html>bad gateway</html>")


SCENARIOS: dict[str, tuple[bool, Callable[[], list[Reply]]]] = {
    "plain text, cached and reasoning tokens": (
        False,
        lambda: [json_reply(response([message("Mild.")], inp=40, out=9, cached=32, reasoning=4))],
    ),
    "plain reasoning and a call": (
        False,
        lambda: [json_reply(response([REASONING, call("call_a", "get_weather", '{"city":"Paris"}')], reasoning=8))],
    ),
    "plain refusal": (
        False,
        lambda: [
            json_reply(
                response(
                    [
                        {
                            "type": "message",
                            "id": "m",
                            "role": "assistant",
                            "status": "completed",
                            "content": [{"type": "refusal", "refusal": "No."}],
                        }
                    ]
                )
            )
        ],
    ),
    "plain content filter": (False, lambda: [json_reply(response([], "incomplete", "content_filter"))]),
    "streamed text": (
        True,
        lambda: [
            Stream()
            .text(0, "Grüße ", "aus 東", "京 🎉")
            .end("response.completed", response([message("Grüße aus 東京 🎉")]))
        ],
    ),
    "streamed reasoning and parallel calls": (True, lambda: [reasoning_calls()]),
    "streamed max tokens mid arguments": (
        True,
        lambda: [
            Stream()
            .call_added(0, "call_a", "get_weather", "fc_a")
            .args(0, '{"ci', "fc_a")
            .end(
                "response.incomplete",
                response(
                    [call("call_a", "get_weather", '{"ci', "incomplete", "fc_a")], "incomplete", "max_output_tokens"
                ),
            )
        ],
    ),
    "streamed failure": (True, lambda: [failed()]),
    "error event": (
        True,
        lambda: [Stream().add("error", code="context_length_exceeded", message="Too long.", param=None).reply()],
    ),
    "error object in place of an event": (
        True,
        lambda: [
            sse_reply([("response.created", {"error": {"message": "Overloaded.", "type": "server_error"}})], named=True)
        ],
    ),
    "truncated stream": (True, lambda: [Stream().text(0, "Hel").reply(cut=True)]),
    "stream without terminal event": (True, lambda: [Stream().text(0, "Hel").reply()]),
    "429 then ok": (
        False,
        lambda: [
            error(429, "Slow down.", "requests", "rate_limit_exceeded", {"retry-after": "0"}),
            json_reply(response([message("ok")])),
        ],
    ),
    "429 exhausted": (
        False,
        lambda: [error(429, "Slow down.", "requests", "rate_limit_exceeded", {"retry-after": "0"})] * 2,
    ),
    "401 with the key echoed": (
        True,
        lambda: [error(401, f"Incorrect API key provided: {KEY}.", "invalid_request_error", "invalid_api_key")],
    ),
    "500 then a stream": (
        True,
        lambda: [
            error(500, "The server had an error.", "server_error", headers={"retry-after": "0"}),
            Stream().text(0, "ok").end("response.completed", response([message("ok")])),
        ],
    ),
    "400 context length": (
        False,
        lambda: [
            error(400, "Your input exceeds the context window.", "invalid_request_error", "context_length_exceeded")
        ],
    ),
    "an answer that is not JSON": (False, lambda: [not_json()]),
}


async def outcome(model: OpenAIResponsesModel, request: ModelRequest, streamed: bool) -> tuple[Any, list[Any]]:
    """What a caller sees: the response (or the error's type, text, status, body, retry facts), and the events."""
    events: list[ModelEvent] = []
    try:
        result: Any = await model.respond(request, events.append if streamed else None)
    except ProviderError as exc:
        cause = exc.__cause__
        # the words of the connection's failure are each HTTP stack's own; the rest is the same
        text = re.sub(r"\((peer|the server) closed .*\) after", "(closed) after", str(exc))
        facts = (text, exc.status_code, exc.body, exc.retryable, getattr(exc, "retry_after", None))
        result = (type(exc).__name__, *facts, cause is None or KEY not in repr(cause))
    return result, merged(events)


async def both(
    wire: WireServer, made: list[OpenAIResponsesModel], replies: Callable[[], list[Reply]], streamed: bool,
    request: ModelRequest = ASK, **options: Any,
) -> dict[str, tuple[Any, list[Any]]]:  # fmt: skip
    seen: dict[str, tuple[Any, list[Any]]] = {}
    for transport in ("lean", "sdk"):
        start = len(wire.requests)
        wire.queue(*replies())
        model = get_model(
            "openai-responses:gpt-5-mini", base_url=f"{wire.url}/v1", api_key=KEY, max_retries=1,
            transport=transport, default_headers={"x-team": "eval"}, **options,
        )  # fmt: skip
        assert isinstance(model, OpenAIResponsesModel)
        made.append(model)
        seen[transport] = await outcome(model, request, streamed)
        sent = wire.requests[start:]
        seen[transport + " requests"] = (
            [(r.path, r.json, {name: r.headers.get(name) for name in SAME_HEADERS}) for r in sent],
            [],
        )
    return seen


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_both_transports_send_and_read_the_same(
    wire: WireServer, made: list[OpenAIResponsesModel], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-parity")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-parity")
    streamed, replies = SCENARIOS[name]
    seen = await both(wire, made, replies, streamed)
    assert seen["lean"] == seen["sdk"]
    assert seen["lean requests"] == seen["sdk requests"]
    assert all(path == "/v1/responses" for path, _, _ in seen["lean requests"][0])
    assert KEY not in repr(seen["lean"])


async def test_the_results_are_what_the_wire_said(wire: WireServer, made: list[OpenAIResponsesModel]) -> None:
    seen = await both(wire, made, lambda: [reasoning_calls()], True)
    result, events = seen["lean"]
    assert [(c.id, c.arguments) for c in result.tool_calls] == [
        ("call_a", '{"city":"Paris"}'),
        ("call_b", '{"city":"Rome"}'),
    ]
    assert result.provider_data == {"openai-responses": {"reasoning": [REASONING]}}  # sent back as it came
    assert (result.usage.cache_read_tokens, result.usage.reasoning_tokens, result.response_id) == (32, 24, "resp_1")
    assert "".join(e.text for e in events if type(e).__name__ == "ThinkingDelta") == "Need both."


async def test_store_and_previous_response_id_go_as_set(wire: WireServer, made: list[OpenAIResponsesModel]) -> None:
    # Requests are stateless (store false) unless the caller asks for server-side state in extra.
    request = ModelRequest(
        [UserMessage("And tomorrow?")],
        settings=ModelSettings(extra={"store": True, "previous_response_id": "resp_0", "truncation": "auto"}),
    )
    seen = await both(wire, made, lambda: [json_reply(response([message("Rain.")]))], False, request)
    assert seen["lean"] == seen["sdk"]
    assert seen["lean requests"] == seen["sdk requests"]
    body = seen["lean requests"][0][0][1]
    assert (body["store"], body["previous_response_id"], body["truncation"]) == (True, "resp_0", "auto")
    default = await both(
        wire, made, lambda: [json_reply(response([message("Rain.")]))], True, ModelRequest([UserMessage("x")])
    )
    assert default["lean requests"][0][0][1]["store"] is False


def test_the_lean_path_never_loads_the_sdk() -> None:
    code = """
import asyncio, sys
from tests.models.test_openai_responses import Stream, message, response
from tests.support.wire import WireServer, json_reply
from tooloop import get_model
from tooloop.messages import UserMessage
from tooloop.models import ModelRequest

async def main():
    wire = WireServer().start()
    wire.queue(json_reply(response([message("plain")])))
    wire.queue(Stream().text(0, "streamed").end("response.completed", response([message("streamed")])))
    model = get_model("openai-responses:gpt-5-mini", base_url=wire.url + "/v1", api_key="k", max_retries=0)
    request = ModelRequest([UserMessage("hi")])
    assert (await model.respond(request)).text == "plain"
    assert (await model.respond(request, lambda event: None)).text == "streamed"
    await model.aclose()
    wire.stop()

asyncio.run(main())
loaded = sorted(name for name in sys.modules if name.split(".")[0] in ("openai", "httpx2", "httpx", "pydantic"))
assert not loaded, loaded[:5]
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=ROOT)


async def test_a_client_you_pass_and_a_proxy_use_the_sdk(
    wire: WireServer, made: list[OpenAIResponsesModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(api_key=KEY, base_url=f"{wire.url}/v1", max_retries=0)
    wire.queue(json_reply(response([message("ok")])), json_reply(response([message("ok")])))
    mine = get_model("openai-responses:gpt-5-mini", client=client)
    assert (await mine.respond(ModelRequest([UserMessage("hi")]))).text == "ok"
    monkeypatch.setenv("HTTP_PROXY", wire.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxied = get_model("openai-responses:gpt-5-mini", base_url="http://api.example.invalid/v1", api_key=KEY)
    assert isinstance(proxied, OpenAIResponsesModel)
    made.append(proxied)
    assert (await proxied.respond(ModelRequest([UserMessage("hi")]))).text == "ok"
    assert [r.headers["user-agent"].split("/")[0] for r in wire.requests] == ["AsyncOpenAI", "AsyncOpenAI"]
    assert wire.requests[1].path == "http://api.example.invalid/v1/responses"
    await client.close()
