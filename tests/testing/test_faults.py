"""Fault injection: each fault fires on the requests it names, acts as a real provider failure would."""

from __future__ import annotations

import json
import time

import pytest

from tooloop.errors import (
    ConfigurationError,
    ProviderConnectionError,
    ProviderError,
    ProviderOverloadedError,
    ProviderTimeoutError,
    RateLimitError,
)
from tooloop.events import ModelEvent, TextDelta, ToolCallDelta
from tooloop.loop.guards import unfinished_json
from tooloop.messages import ModelResponse, StopReason, ToolCall, Usage, UserMessage
from tooloop.models.base import ModelRequest
from tooloop.testing.faults import (
    PROVIDER,
    DroppedConnection,
    Fault,
    FaultyModel,
    FiredFault,
    Latency,
    MalformedToolArguments,
    OrphanedToolCall,
    RateLimit,
    ServerError,
    Timeout,
    TruncatedStream,
    inject,
)

from .helpers import ListModel

REQUEST = ModelRequest([UserMessage("hi")])


def answers(count: int) -> list[ModelResponse]:
    return [ModelResponse(f"answer {n}") for n in range(1, count + 1)]


async def outcomes(model: FaultyModel, count: int) -> list[str]:
    """What each of ``count`` requests gave: the answer text or the error type."""
    seen = []
    for _ in range(count):
        try:
            seen.append((await model.respond(REQUEST)).text)
        except ProviderError as exc:
            seen.append(type(exc).__name__)
    return seen


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        (RateLimit(on=2), RateLimitError),
        (Timeout(on=2), ProviderTimeoutError),
        (DroppedConnection(on=2), ProviderConnectionError),
        (ServerError(on=2), ProviderOverloadedError),
    ],
)
async def test_error_faults_fire_only_on_their_request_and_skip_the_model(fault: Fault, error: type) -> None:
    real = ListModel(answers(2))
    faulty = inject(real, fault)
    assert await outcomes(faulty, 3) == ["answer 1", error.__name__, "answer 2"]
    assert faulty.fired == [FiredFault(2, fault)]
    assert len(real.requests) == 2  # the failed request never reached the model


async def test_error_faults_carry_what_real_errors_carry() -> None:
    faulty = inject(ListModel([]), RateLimit(retry_after=7.5))
    with pytest.raises(RateLimitError) as rate:
        await faulty.respond(REQUEST)
    assert (rate.value.retry_after, rate.value.status_code, rate.value.retryable) == (7.5, 429, True)
    assert rate.value.provider == PROVIDER
    with pytest.raises(ProviderOverloadedError) as server:
        await inject(ListModel([]), ServerError(status=503)).respond(REQUEST)
    assert server.value.status_code == 503
    assert "request 1" in str(server.value)


async def test_on_tuple_every_and_no_trigger() -> None:
    assert await outcomes(inject(ListModel(answers(2)), Timeout(on=(2, 3))), 4) == [
        "answer 1",
        "ProviderTimeoutError",
        "ProviderTimeoutError",
        "answer 2",
    ]
    faulty = inject(ListModel(answers(3)), DroppedConnection(every=2))
    assert await outcomes(faulty, 5) == [
        "answer 1",
        "ProviderConnectionError",
        "answer 2",
        "ProviderConnectionError",
        "answer 3",
    ]
    assert faulty.fired_on(DroppedConnection) == [2, 4]
    always = inject(ListModel([]), RateLimit())
    assert await outcomes(always, 2) == ["RateLimitError", "RateLimitError"]


async def test_probability_is_deterministic_for_a_seed() -> None:
    def run(seed: int) -> FaultyModel:
        return inject(ListModel(answers(40)), ServerError(probability=0.3), seed=seed)

    first, second, other = run(1), run(1), run(2)
    for model in (first, second, other):
        await outcomes(model, 40)
    fired = first.fired_on(ServerError)
    assert fired == second.fired_on(ServerError)
    assert 3 <= len(fired) <= 25
    assert fired != other.fired_on(ServerError)
    assert await outcomes(inject(ListModel(answers(5)), ServerError(probability=0.0)), 5) == [
        f"answer {n}" for n in range(1, 6)
    ]


async def test_truncated_stream_emits_part_of_the_text_then_raises() -> None:
    text = "The weather in Paris is sunny."
    faulty = inject(ListModel([ModelResponse(text)], chunk=4), TruncatedStream(on=1, after_chars=10))
    events: list[ModelEvent] = []
    with pytest.raises(ProviderConnectionError, match="cut after 10 characters"):
        await faulty.respond(REQUEST, events.append)
    assert events == [TextDelta("The "), TextDelta("weat"), TextDelta("he")]
    assert faulty.fired == [FiredFault(1, TruncatedStream(on=1, after_chars=10))]


async def test_truncated_stream_fails_without_a_listener_and_on_its_request_only() -> None:
    faulty = inject(ListModel(answers(2)), TruncatedStream(on=1, after_chars=3))
    with pytest.raises(ProviderConnectionError):
        await faulty.respond(REQUEST)
    events: list[ModelEvent] = []
    assert (await faulty.respond(REQUEST, events.append)).text == "answer 2"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "answer 2"


async def test_malformed_tool_arguments_become_invalid_json_text() -> None:
    calls = (ToolCall("c1", "get_weather", {"city": "Paris"}), ToolCall("c2", "get_time", '{"zone": "CET"}'))
    real = ListModel([ModelResponse("checking", calls, usage=Usage(3, 4)), ModelResponse("done")])
    faulty = inject(real, MalformedToolArguments(every=1))

    response = await faulty.respond(REQUEST)
    assert [(c.id, c.name) for c in response.tool_calls] == [("c1", "get_weather"), ("c2", "get_time")]
    for call, original in zip(response.tool_calls, ('{"city": "Paris"}', '{"zone": "CET"}'), strict=True):
        assert isinstance(call.arguments, str)
        assert call.arguments == original.replace('"', "'")  # complete, not cut off: see unfinished_json
        assert not unfinished_json(call.arguments)
        with pytest.raises(json.JSONDecodeError):
            json.loads(call.arguments)
    assert (response.text, response.usage, response.stop_reason) == ("checking", Usage(3, 4), StopReason.TOOL_USE)
    # A response without tool calls is left alone and the fault is not reported.
    assert (await faulty.respond(REQUEST)).text == "done"
    assert faulty.fired_on(MalformedToolArguments) == [1]


async def test_malformed_empty_arguments_are_still_invalid() -> None:
    faulty = inject(ListModel([ModelResponse("", (ToolCall("c1", "now", {}),))]), MalformedToolArguments())
    (call,) = (await faulty.respond(REQUEST)).tool_calls
    assert call.arguments == "{arguments}"
    with pytest.raises(json.JSONDecodeError):
        json.loads(call.arguments)


async def test_orphaned_tool_call_is_added_after_the_real_calls() -> None:
    real = ListModel([ModelResponse("Paris is sunny."), ModelResponse("", (ToolCall("c1", "get_weather", {}),))])
    faulty = inject(real, OrphanedToolCall(tool_name="delete_everything"))
    first = await faulty.respond(REQUEST)
    assert first.text == "Paris is sunny."
    assert first.stop_reason is StopReason.TOOL_USE
    assert first.tool_calls == (ToolCall("orphan_1", "delete_everything", {}),)
    second = await faulty.respond(REQUEST)
    assert [c.name for c in second.tool_calls] == ["get_weather", "delete_everything"]
    assert faulty.fired_on(OrphanedToolCall) == [1, 2]


async def test_latency_delays_the_request() -> None:
    faulty = inject(ListModel(answers(2)), Latency(0.05, on=1))
    start = time.perf_counter()
    await faulty.respond(REQUEST)
    slow = time.perf_counter() - start
    start = time.perf_counter()
    await faulty.respond(REQUEST)
    fast = time.perf_counter() - start
    assert slow >= 0.05 > fast
    assert faulty.fired == [FiredFault(1, Latency(0.05, on=1))]


async def test_faults_combine_in_order_and_streaming_passes_through() -> None:
    calls = (ToolCall("c1", "f", {"a": 1}),)
    faulty = FaultyModel(
        ListModel([ModelResponse("x", calls)]), [Latency(0.0), MalformedToolArguments(), OrphanedToolCall()]
    )
    events: list[ModelEvent] = []
    response = await faulty.respond(REQUEST, events.append)
    assert [type(f.fault) for f in faulty.fired] == [Latency, MalformedToolArguments, OrphanedToolCall]
    assert [c.name for c in response.tool_calls] == ["f", "no_such_tool"]
    assert response.tool_calls[0].arguments == "{'a': 1}"
    assert ToolCallDelta(0, "c1", "f") in events
    assert faulty.name == "list-model"


def test_bad_fault_settings_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="request numbers from 1"):
        RateLimit(on=0)
    with pytest.raises(ConfigurationError, match="every"):
        Timeout(every=0)
    with pytest.raises(ConfigurationError, match="probability"):
        DroppedConnection(probability=1.5)
    with pytest.raises(ConfigurationError, match="5xx"):
        ServerError(status=404)
    with pytest.raises(ConfigurationError, match="not a fault"):
        FaultyModel(ListModel([]), [RateLimitError("x")])  # type: ignore[list-item]
