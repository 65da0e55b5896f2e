"""An API key never appears in an error: not in its message, its body, nor the exception it chains.

The server answers 401 and echoes the credentials it received, as some real servers do.
"""

from __future__ import annotations

import json

import pytest

from tests.support.wire import Recorded, Reply, WireServer, json_reply
from tooloop import AuthenticationError, ModelRequest, UserMessage, get_model

KEY = "sk-live-SECRET-0123456789"


def _echo_credentials(request: Recorded) -> Reply:
    sent = " ".join(request.headers.get(h, "") for h in ("authorization", "x-api-key", "x-goog-api-key"))
    return json_reply({"error": {"message": f"Invalid API key: {sent}", "code": 401, "type": "auth"}}, status=401)


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ("openai:gpt-4.1", "/v1"),
        ("openai-responses:gpt-4.1", "/v1"),
        ("anthropic:claude-haiku-4-5", ""),
        ("google:gemini-2.5-flash", ""),
    ],
)
async def test_the_key_is_masked_in_authentication_errors(wire: WireServer, spec: str, path: str) -> None:
    wire.queue(_echo_credentials)
    model = get_model(spec, base_url=wire.url + path, api_key=KEY, max_retries=0, max_tokens=100)
    with pytest.raises(AuthenticationError) as caught:
        await model.respond(ModelRequest([UserMessage("hi")]))
    error = caught.value
    assert KEY in wire.requests[0].headers.get("authorization", "") + wire.requests[0].headers.get(
        "x-api-key", ""
    ) + wire.requests[0].headers.get("x-goog-api-key", "")  # the server did get the key...
    texts = [str(error), repr(error), json.dumps(error.body, default=str), str(error.__cause__), repr(model)]
    assert not any(KEY in text for text in texts)  # ...and it is nowhere in what the caller sees
    await model.aclose()  # type: ignore[attr-defined]
