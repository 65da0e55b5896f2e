"""A Gemini stream's network read is parsed in one call; what the reader gets is the same as event by event.

Each answer is served from 127.0.0.1 in Gemini's ``alt=sse`` format (CRLF line ends, as Gemini
sends them) twice: every event in one HTTP chunk (one read), then each event in its own chunk.
An error event or bad JSON among a read's events still comes after the events before it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.models.test_gemini import chunk, sse
from tests.support.deltas import merged
from tests.support.wire import Reply, WireServer
from tooloop.errors import ProviderError
from tooloop.events import ModelEvent, TextDelta
from tooloop.messages import ModelResponse, UserMessage
from tooloop.models import ModelRequest, get_model
from tooloop.models.gemini import GeminiModel

BIG = 123456789012345678901234567890
ERROR = {"error": {"code": 500, "message": "Internal error.", "status": "INTERNAL"}}


@pytest.fixture
async def gemini(wire: WireServer) -> AsyncIterator[GeminiModel]:
    made = get_model("google:gemini-2.5-flash", base_url=wire.url, api_key="test-key", max_retries=0)
    assert isinstance(made, GeminiModel)
    yield made
    await made.aclose()


def one_read(reply: Reply) -> Reply:
    assert reply.chunks is not None
    return Reply(reply.status, reply.headers, chunks=[b"".join(reply.chunks)])


async def answer(model: GeminiModel) -> tuple[ModelResponse | ProviderError, list[ModelEvent]]:
    events: list[ModelEvent] = []
    try:
        return await model.respond(ModelRequest([UserMessage("hi")]), events.append), events
    except ProviderError as exc:
        return exc, events


async def both(wire: WireServer, model: GeminiModel, reply: Reply) -> tuple[Any, list[ModelEvent], Any, list[Any]]:
    wire.queue(one_read(reply), reply)
    together, together_events = await answer(model)
    apart, apart_events = await answer(model)
    return together, together_events, apart, apart_events


async def test_a_read_of_text_and_a_call_with_a_large_integer(wire: WireServer, gemini: GeminiModel) -> None:
    call = {"functionCall": {"id": "g1", "name": "keep", "args": {"n": BIG, "f": 0.25}}}
    reply = sse(chunk([{"text": "Kee"}]), chunk([{"text": "ping."}]), chunk([call], "STOP", prompt=3, out=2))
    together, together_events, apart, _ = await both(wire, gemini, reply)
    assert isinstance(together, ModelResponse) and together == apart
    assert together.text == "Keeping."
    assert dict(together.tool_calls[0].arguments) == {"n": BIG, "f": 0.25}
    assert type(together.tool_calls[0].arguments["n"]) is int
    assert together_events[0] == TextDelta("Keeping.")  # one delta for the read's run of text


async def test_an_error_event_in_a_read_comes_after_the_text_before_it(wire: WireServer, gemini: GeminiModel) -> None:
    reply = sse(chunk([{"text": "Hel"}]), chunk([{"text": "lo"}]), ERROR, chunk([{"text": " never"}]))
    together, together_events, apart, apart_events = await both(wire, gemini, reply)
    assert type(together) is type(apart) and isinstance(together, ProviderError)
    assert "google 500 (INTERNAL): Internal error." in str(together) and str(together) == str(apart)
    assert together_events == [TextDelta("Hello")]
    assert merged(apart_events) == merged(together_events)


async def test_bad_json_in_a_read_comes_after_the_text_before_it(wire: WireServer, gemini: GeminiModel) -> None:
    reply = sse(chunk([{"text": "Hel"}]), "data: {not json\r\n\r\n", chunk([{"text": "lo"}]))
    together, together_events, apart, apart_events = await both(wire, gemini, reply)
    assert type(together) is type(apart) and isinstance(together, ProviderError)
    assert together_events == apart_events == [TextDelta("Hel")]


async def test_data_that_is_not_one_value_each_is_read_event_by_event(wire: WireServer, gemini: GeminiModel) -> None:
    # two values in one event's data: joined with the others they would parse as one more event
    reply = sse(chunk([{"text": "Hi"}]), 'data: {"candidates": []}, {"candidates": []}\r\n\r\n')
    together, _, apart, _ = await both(wire, gemini, reply)
    assert type(together) is type(apart) and isinstance(together, ProviderError)


def recut(reply: Reply, size: int, *, line_end: bytes = b"\r\n") -> Reply:
    """The same stream with ``line_end`` for its line ends, written in pieces of ``size`` bytes."""
    assert reply.chunks is not None
    body = b"".join(reply.chunks).replace(b"\r\n", line_end)
    return Reply(reply.status, reply.headers, chunks=[body[i : i + size] for i in range(0, len(body), size)])


@pytest.mark.parametrize(("size", "line_end"), [(7, b"\r\n"), (64, b"\r\n"), (1, b"\r\n"), (9, b"\n"), (9, b"\r")])
async def test_pieces_cut_anywhere_read_as_whole_events(
    wire: WireServer, gemini: GeminiModel, size: int, line_end: bytes
) -> None:
    call = {"functionCall": {"id": "g1", "name": "keep", "args": {"n": 1}}, "thoughtSignature": "c2ln"}
    reply = sse(chunk([{"text": "Kee"}]), ": keep-alive\r\n\r\n", chunk([{"text": "ping."}]), chunk([call], "STOP"))
    wire.queue(one_read(reply), recut(reply, size, line_end=line_end))
    whole, whole_events = await answer(gemini)
    cut, cut_events = await answer(gemini)
    assert isinstance(whole, ModelResponse) and isinstance(cut, ModelResponse)
    assert (whole.text, cut.text) == ("Keeping.", "Keeping.")
    assert [dict(c.arguments) for c in cut.tool_calls] == [{"n": 1}]
    assert cut.provider_data == whole.provider_data == {"google": {"signatures": {"g1": "c2ln"}, "ids": ["g1"]}}
    assert merged(cut_events) == merged(whole_events)


async def test_whole_pieces_then_a_cut_one(wire: WireServer, gemini: GeminiModel) -> None:
    # the first read is whole events, the second ends inside one: the rest is the decoder's
    first = sse(chunk([{"text": "One "}])).chunks
    rest = sse(chunk([{"text": "two "}]), ERROR).chunks
    assert first is not None and rest is not None
    tail = b"".join(rest)
    wire.queue(Reply(200, {"content-type": "text/event-stream"}, chunks=[*first, tail[:20], tail[20:]]))
    failed, events = await answer(gemini)
    assert isinstance(failed, ProviderError) and "Internal error." in str(failed)
    assert merged(events) == [TextDelta("One two ")]
