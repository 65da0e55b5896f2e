"""FallbackModel against real wire servers: an OpenAI primary and an Anthropic secondary on 127.0.0.1.

Each error class is produced by the primary's server as the provider sends it (status and error
JSON, a refused connection, a server that stalls) and driven through both front doors (``run``
makes plain requests, ``stream`` streamed ones).
"""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from tests.models import anthropic_wire as aw
from tests.models.doors import DOORS, TRANSPORTS, drive
from tests.models.openai_wire import chunk, completion, plain, stream, usage_chunk
from tests.support.wire import Recorded, Reply, WireServer, json_reply, serve
from tooloop import Agent
from tooloop.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    AuthenticationError,
    BadRequestError,
    ProviderConnectionError,
    ProviderError,
    RateLimitError,
)
from tooloop.messages import ToolCallMessage
from tooloop.models import get_model
from tooloop.models.fallback import FallbackModel

ANSWER = "Paris is the capital of France."


@pytest.fixture
def backup() -> Iterator[WireServer]:
    """The secondary's server (Anthropic's wire format)."""
    yield from serve()


@pytest.fixture
async def closing() -> AsyncIterator[list[Any]]:
    made: list[Any] = []
    yield made
    for model in made:
        await model.aclose()


Make = Callable[..., FallbackModel]


@pytest.fixture
def make(wire: WireServer, backup: WireServer, closing: list[Any]) -> Make:
    def build(
        *, primary_url: str | None = None, timeout: float = 5.0, transport: str = "lean", **options: Any
    ) -> FallbackModel:
        primary = get_model(
            "openai:gpt-4.1-mini",
            transport=transport,
            base_url=primary_url or wire.url + "/v1",
            api_key="sk-primary",
            max_retries=0,
            timeout=timeout,
        )
        secondary = get_model(
            f"anthropic:{aw.MODEL}", base_url=backup.url, api_key="sk-backup", max_retries=0, max_tokens=1024
        )
        closing.extend([primary, secondary])
        return FallbackModel([primary, secondary], **options)

    return build


def openai_error(status: int, message: str, type_: str, code: str | None = None) -> Reply:
    return json_reply({"error": {"message": message, "type": type_, "param": None, "code": code}}, status)


def backup_answer(door: str, text: str = ANSWER) -> Reply:
    content = [{"type": "text", "text": text}]
    return aw.streamed(content) if door == "stream" else aw.plain(content)


def stalled(_: Recorded) -> Reply:
    time.sleep(0.6)
    return plain(completion({"content": "too late"}))


def refused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


FAILURES: dict[str, Callable[[], Reply | Callable[[Recorded], Reply]]] = {
    "rate_limit": lambda: openai_error(429, "Rate limit reached for gpt-4.1-mini", "requests", "rate_limit_exceeded"),
    "overloaded": lambda: openai_error(503, "The engine is currently overloaded", "server_error"),
    "server_error": lambda: openai_error(500, "The server had an error processing your request", "server_error"),
    "timeout": lambda: stalled,
}


# the error class each failure is (the one the primary raised, recorded as skipped)
RAISED = {
    "rate_limit": "RateLimitError",
    "overloaded": "ProviderOverloadedError",
    "server_error": "ProviderOverloadedError",
    "timeout": "ProviderTimeoutError",
}


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_each_default_error_class_falls_back(
    wire: WireServer, backup: WireServer, make: Make, door: str, transport: str, failure: str
) -> None:
    wire.queue(FAILURES[failure]())
    backup.queue(backup_answer(door))
    # A short time limit only where the primary stalls: an error answer a loaded machine is slow to
    # send must not turn into a timeout, a skip of another class.
    timeout = 0.2 if failure == "timeout" else 5.0
    result, events = await drive(Agent(make(timeout=timeout, transport=transport)), door, "Capital of France?")
    assert result.transcript.final_text == ANSWER
    assert len(wire.requests) == 1 and len(backup.requests) == 1
    assert backup.requests[0].json["messages"][0]["content"][0]["text"] == "Capital of France?"
    final = result.transcript.final_message
    assert final is not None and final.model == aw.MODEL
    record = final.provider_data["fallback"]
    assert record["model"] == aw.MODEL and record["provider"] == "anthropic"
    assert record["skipped"] == [{"model": "openai:gpt-4.1-mini", "error": RAISED[failure]}]
    if door == "stream":
        assert "".join(getattr(e, "text", "") for e in events) == ANSWER


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_refused_connection_falls_back(backup: WireServer, make: Make, door: str, transport: str) -> None:
    backup.queue(backup_answer(door))
    result, _ = await drive(Agent(make(primary_url=refused_url(), transport=transport)), door, "Capital of France?")
    assert result.transcript.final_text == ANSWER
    assert result.transcript.final_message is not None
    assert result.transcript.final_message.provider_data["fallback"]["skipped"][0]["error"] == "ProviderConnectionError"


@pytest.mark.parametrize("door", DOORS)
@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (
            lambda: openai_error(400, "Invalid value for 'temperature'", "invalid_request_error", "invalid_value"),
            BadRequestError,
        ),
        (
            lambda: openai_error(401, "Incorrect API key provided", "invalid_request_error", "invalid_api_key"),
            AuthenticationError,
        ),
    ],
    ids=["bad_request", "authentication"],
)
async def test_bad_request_and_authentication_never_fall_back_by_default(
    wire: WireServer, backup: WireServer, make: Make, door: str, reply: Callable[[], Reply], error: type[Exception]
) -> None:
    wire.queue(reply())
    with pytest.raises(error):
        await drive(Agent(make()), door, "Capital of France?")
    assert len(backup.requests) == 0


@pytest.mark.parametrize("door", DOORS)
async def test_authentication_falls_back_when_asked(
    wire: WireServer, backup: WireServer, make: Make, door: str
) -> None:
    wire.queue(openai_error(401, "Incorrect API key provided", "invalid_request_error", "invalid_api_key"))
    backup.queue(backup_answer(door))
    result, _ = await drive(Agent(make(on=[AuthenticationError])), door, "Capital of France?")
    assert result.transcript.final_text == ANSWER


async def test_a_function_decides_what_falls_back(wire: WireServer, backup: WireServer, make: Make) -> None:
    wire.queue(openai_error(429, "Rate limit reached", "requests", "rate_limit_exceeded"))
    with pytest.raises(RateLimitError):
        await Agent(make(on=lambda exc: isinstance(exc, BadRequestError))).run("hi")
    assert len(backup.requests) == 0


async def test_a_stream_that_failed_after_its_first_delta_does_not_fall_back(
    wire: WireServer, backup: WireServer, make: Make
) -> None:
    wire.queue(stream(chunk({"content": "Half an ans"}), done=False, cut=True))
    with pytest.raises(ProviderConnectionError):
        await drive(Agent(make()), "stream", "Capital of France?")
    assert len(backup.requests) == 0  # the user saw "Half an ans": a second answer would follow it


async def test_the_last_models_error_is_raised_naming_those_tried_before(
    wire: WireServer, backup: WireServer, make: Make
) -> None:
    wire.queue(openai_error(429, "Rate limit reached", "requests", "rate_limit_exceeded"))
    backup.queue(aw.error_reply(529, "overloaded_error", "Overloaded"))
    with pytest.raises(ProviderError, match="Overloaded") as info:
        await Agent(make()).run("hi")
    assert any("openai:gpt-4.1-mini (RateLimitError)" in note for note in info.value.__notes__)


@pytest.mark.parametrize("door", DOORS)
async def test_a_tool_batch_records_the_model_that_asked(
    wire: WireServer, backup: WireServer, make: Make, door: str
) -> None:
    def lookup(city: str) -> str:
        """The country of a city."""
        return "France"

    wire.queue(openai_error(429, "Rate limit reached", "requests", "rate_limit_exceeded"))
    calls = [{"type": "tool_use", "id": "toolu_01", "name": "lookup", "input": {"city": "Paris"}}]
    if door == "stream":
        backup.queue(aw.streamed(calls, "tool_use"))
    else:
        backup.queue(aw.plain(calls, "tool_use"))
    # the next request: the primary is back
    wire.queue(
        stream(chunk({"content": ANSWER}), chunk({}, "stop"), usage_chunk({"prompt_tokens": 3, "completion_tokens": 2}))
        if door == "stream"
        else plain(completion({"content": ANSWER}))
    )
    result, _ = await drive(Agent(make(), tools=[lookup]), door, "Where is Paris?")
    first = next(m for m in result.transcript if isinstance(m, ToolCallMessage))
    assert first.result == "France"
    assert first.provider_data["fallback"]["model"] == aw.MODEL
    final = result.transcript.final_message
    assert final is not None and final.provider_data["fallback"] == {"model": "gpt-4.1-mini", "provider": "openai"}
    # the primary got the whole conversation, the secondary's call and its result included
    sent = wire.requests[1].json["messages"]
    assert sent[1]["tool_calls"][0]["function"]["name"] == "lookup"
    assert sent[2] == {"role": "tool", "tool_call_id": "toolu_01", "content": "France"}
    assert result.usage.requests == 2


def test_bad_arguments_are_refused_where_given(make: Make) -> None:
    primary = get_model("openai:gpt-4.1-mini", base_url="http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(ArgumentValueError, match="at least two"):
        FallbackModel([primary])
    with pytest.raises(ArgumentTypeError, match="list of models"):
        FallbackModel(primary)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="model 1"):
        FallbackModel([primary, 42])  # type: ignore[list-item]
    with pytest.raises(ArgumentTypeError, match="exception classes"):
        FallbackModel([primary, primary], on=["RateLimitError"])  # type: ignore[list-item]
    with pytest.raises(ArgumentTypeError, match="list of exception classes"):
        FallbackModel([primary, primary], on=RateLimitError)  # type: ignore[arg-type]


def test_name_and_provider_are_the_primarys(make: Make) -> None:
    model = make()
    assert (model.name, model.provider) == ("gpt-4.1-mini", "openai")
    assert repr(model) == f"FallbackModel([openai:gpt-4.1-mini, anthropic:{aw.MODEL}])"
