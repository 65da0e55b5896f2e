"""Keys in provider errors: masked where they stand as values, never by rewriting every matching
substring, and the SDK's own exception (which may quote the key) is not kept on the error."""

from __future__ import annotations

import json
import socket

import pytest

from tests.support.wire import Recorded, Reply, WireServer, json_reply
from tooloop import AuthenticationError, ModelRequest, ProviderConnectionError, ProviderError, UserMessage, get_model

SPECS = [
    ("openai:gpt-4.1", "/v1"),
    ("openai-responses:gpt-4.1", "/v1"),
    ("anthropic:claude-haiku-4-5", ""),
    ("google:gemini-2.5-flash", ""),
]


def _quoting(key: str):  # type: ignore[no-untyped-def]
    def reply(request: Recorded) -> Reply:
        message = f"Incorrect API key provided: {key}. Check your key and make sure it is active."
        return json_reply({"error": {"message": message, "code": 401, "type": "auth", "key": key}}, status=401)

    return reply


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    stack: list[BaseException | None] = [error]
    while stack:
        current = stack.pop()
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        stack += [current.__cause__, current.__context__]
    return seen


@pytest.mark.parametrize(("spec", "path"), SPECS)
async def test_a_one_letter_key_is_masked_where_it_is_a_value_and_nowhere_else(
    wire: WireServer, spec: str, path: str
) -> None:
    wire.queue(_quoting("k"))
    model = get_model(spec, base_url=wire.url + path, api_key="k", max_retries=0, max_tokens=100)
    with pytest.raises(AuthenticationError) as caught:
        await model.respond(ModelRequest([UserMessage("hi")]))
    await model.aclose()  # type: ignore[attr-defined]
    message = str(caught.value)
    assert "Incorrect API key provided: ***. Check your key and make sure it is active." in message
    assert "chec" not in message.replace("Check", "")  # no word was cut
    body = json.dumps(caught.value.body, default=str)
    assert "Check your key" in body and '"key": "k"' not in body


@pytest.mark.parametrize(("spec", "path"), SPECS)
async def test_a_provider_error_keeps_no_exception_that_quotes_the_key(wire: WireServer, spec: str, path: str) -> None:
    key = "sk-live-SECRET-0123456789"
    wire.queue(_quoting(key))
    model = get_model(spec, base_url=wire.url + path, api_key=key, max_retries=0, max_tokens=100)
    with pytest.raises(AuthenticationError) as caught:
        await model.respond(ModelRequest([UserMessage("hi")]))
    await model.aclose()  # type: ignore[attr-defined]
    chain = _chain(caught.value)
    assert not any(key in f"{e} {e!r} {getattr(e, 'body', '')} {getattr(e, 'response', '')}" for e in chain)
    assert caught.value.__context__ is None or isinstance(caught.value.__context__, ProviderError)


@pytest.mark.parametrize(("spec", "path"), SPECS)
async def test_a_refused_connection_with_a_short_key_keeps_its_words(spec: str, path: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = get_model(spec, base_url=f"http://127.0.0.1:{port}{path}", api_key="k", max_retries=0, max_tokens=100)
    with pytest.raises(ProviderConnectionError) as caught:
        await model.respond(ModelRequest([UserMessage("hi")]))
    await model.aclose()  # type: ignore[attr-defined]
    assert "check that the server is running and listening there" in str(caught.value)
