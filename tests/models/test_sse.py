"""Server-sent events, and the JSON events of an OpenAI-style stream, are the same whatever the pieces
the body arrives in."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import msgspec
import pytest

from tooloop.models.openai_chat.chunks import ChunkShapeError, ChunkUsage
from tooloop.models.openai_chat.stream import SSEChunks
from tooloop.transport.client import StreamError
from tooloop.transport.sse import SSEDecoder, data_array, sse_events

BODIES = {
    "openai": (
        b'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n',
        [(None, b'{"a":1}'), (None, b'{"b":2}'), (None, b"[DONE]")],
    ),
    "named events, a comment, multi-line data": (
        b'event: message_start\ndata: {"x":1}\n\n: keep-alive\n\nevent: ping\ndata: {}\n\ndata: a\ndata: b\n\n',
        [("message_start", b'{"x":1}'), ("ping", b"{}"), (None, b"a\nb")],
    ),
    "CRLF, no space after the colon, extra blank lines": (
        b'event: e\r\ndata: {"x":1}\r\n\r\ndata:tight\r\n\r\n\r\n\r\ndata: after\r\n\r\n',
        [("e", b'{"x":1}'), (None, b"tight"), (None, b"after")],
    ),
    "a bare data line, other fields, two spaces": (
        b"data\n\nid: 3\nretry: 5\ndata: x\n\nevent:e\ndata:  two\n\n",
        [(None, b""), (None, b"x"), ("e", b" two")],
    ),
    "named events: two data lines, an id line, a name with spaces": (
        b"event: a b\ndata: 1\ndata: 2\n\nevent: c\nid: 7\ndata: 3\n\nevent: d\n\nevent: e\ndata: 4\n\n",
        [("a b", b"1\n2"), ("c", b"3"), ("e", b"4")],
    ),
    "an event the body ends before its blank line": (
        b"data: whole\n\ndata: cut",
        [(None, b"whole")],
    ),
}


def _split(body: bytes, cuts: tuple[int, ...]) -> list[bytes]:
    edges = [0, *cuts, len(body)]
    return [body[a:b] for a, b in itertools.pairwise(edges)]


def _splits(body: bytes) -> list[tuple[int, ...]]:
    """Where to cut ``body``: nowhere, at every byte, and at every pair of every third byte."""
    return [(), *((i,) for i in range(1, len(body))), *itertools.combinations(range(1, len(body), 3), 2)]


@pytest.mark.parametrize("name", sorted(BODIES))
def test_every_split_of_the_body_gives_the_same_events(name: str) -> None:
    body, expected = BODIES[name]
    for cuts in _splits(body):
        decoder = SSEDecoder()
        events = [event for piece in _split(body, cuts) for event in decoder.feed(piece)]
        assert events == expected, cuts


async def test_sse_events_reads_an_async_body() -> None:
    body, expected = BODIES["named events, a comment, multi-line data"]

    async def pieces() -> AsyncIterator[bytes]:
        for piece in _split(body, (5, 17, 40)):
            await asyncio.sleep(0)
            yield piece

    assert [event async for event in sse_events(pieces())] == expected


@pytest.mark.parametrize("name", sorted(BODIES))
def test_data_alone_is_the_data_of_every_event_for_every_split(name: str) -> None:
    body, expected = BODIES[name]
    for cuts in _splits(body):
        decoder = SSEDecoder()
        assert [data for piece in _split(body, cuts) for data in decoder.data(piece)] == [d for _, d in expected], cuts


@pytest.mark.parametrize("name", sorted(BODIES))
def test_joined_is_the_data_of_the_usual_piece_and_leaves_any_other_to_data(name: str) -> None:
    body, _ = BODIES[name]
    for cuts in _splits(body):
        decoder, reference = SSEDecoder(), SSEDecoder()
        for piece in _split(body, cuts):
            datas = reference.data(piece)
            usual = decoder.joined(piece, b"|")
            if usual is None:  # not taken: the piece is read by the general rule, from the same state
                assert decoder.data(piece) == datas, cuts
            else:
                assert usual == (b"|".join(datas), len(datas)) and datas, cuts


_NOT_USUAL = (
    b'data: {"a":1}\n\ndata: {"b"',  # an event still arriving
    b'data: {"a":\ndata: 1}\n\n',  # data on two lines
    b'data: {"a":1}\nid: 7\n\n',  # another field
    b": ping\n\ndata: {}\n\n",  # a comment first
    b'data: {"a":1}\n\n: ping\n\ndata: {}\n\n',  # a comment between
    b'event: x\ndata: {"a":1}\n\n',  # a named event
    b'data: {"a":1}\r\n\r\n',  # CRLF line ends
)
"""Pieces that are not the usual one (complete one-line ``data:`` events only)."""


def test_joined_takes_only_complete_one_line_data_events() -> None:
    assert SSEDecoder().joined(b'data: {"a":1}\n\ndata: [DONE]\n\n', b",") == (b'{"a":1},[DONE]', 2)
    for other in _NOT_USUAL:
        assert SSEDecoder().joined(other, b",") is None, other


def test_data_array_is_the_usual_piece_as_one_json_array_without_its_closing_line() -> None:
    assert data_array(b'data: {"a":1}\n\ndata: [2]\n\ndata: [DONE]\n\n', b"[DONE]") == (b'[{"a":1},[2]]', 2, True)
    assert data_array(b'data: {"a":1}\n\n', b"[DONE]") == (b'[{"a":1}]', 1, False)
    assert data_array(b"data: [DONE]\n\n", b"[DONE]") == (b"[]", 0, True)
    assert data_array(b"data: [DONE]\n\ndata: 1\n\n", b"[DONE]") == (b"[[DONE],1]", 2, False)  # not last: data
    assert SSEDecoder().array(b"data: 1\n\n", b"[DONE]") == (b"[1]", 1, False)
    held = SSEDecoder()
    assert held.data(b"data: 1\n\ndata: 2") == [b"1"]
    assert held.array(b"\n\n", b"[DONE]") is None  # the decoder holds part of an event: left to data
    for other in _NOT_USUAL:
        assert data_array(other, b"[DONE]") is None, other


NAMED_BODY = b'event: message_start\ndata: {"x":1}\n\nevent: ping\ndata: {}\n\nevent: e\ndata: \n\n'


@pytest.mark.parametrize("body", [NAMED_BODY, *(body for body, _ in BODIES.values())])
def test_named_is_the_events_of_the_usual_named_piece_and_leaves_any_other_to_feed(body: bytes) -> None:
    for cuts in _splits(body):
        decoder, reference = SSEDecoder(), SSEDecoder()
        for piece in _split(body, cuts):
            events = reference.feed(piece)
            named = decoder.named(piece)
            if named is None:  # not taken: the piece is read by the general rule, from the same state
                assert decoder.feed(piece) == events, cuts
            else:
                assert [(name.decode(), value) for name, value in named] == events and events, cuts
                assert SSEDecoder().named_data(piece) == [value for _, value in events], cuts


def test_named_takes_only_complete_two_line_named_events() -> None:
    assert SSEDecoder().named(NAMED_BODY) == [(b"message_start", b'{"x":1}'), (b"ping", b"{}"), (b"e", b"")]
    for other in (
        b"event: a\ndata: 1\n\nevent: b\ndata: {",  # an event still arriving
        b"event: a\ndata: 1\ndata: 2\n\n",  # data on two lines
        b"event: a\nid: 7\ndata: 1\n\n",  # another field
        b"event: a\n\n",  # no data
        b"event: a\ndata: 1\n\n: ping\n\nevent: b\ndata: 2\n\n",  # a comment between
        b"event: a\ndata: 1\n\nxevent: b\ndata: 2\n\n",  # a line that is no field
        b"event: a\ndata: 1\n\ndata: 2\n\n",  # an unnamed event
        b"event: a\ndata: 1\n\n\nevent: b\ndata: 2\n\n",  # an extra blank line
        b"event: a\r\ndata: 1\r\n\r\n",  # CRLF line ends
        b"data: 1\n\n",  # the unnamed usual piece
    ):
        assert SSEDecoder().named(other) is None, other
        assert SSEDecoder().named_data(other) is None, other


class _Body:
    """A response body handed out in the given pieces (what SSEChunks reads from the transport)."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.plain_length = sum(map(len, pieces))
        self._pieces = list(pieces)
        self.closed = False

    async def piece(self) -> bytes:
        return self._pieces.pop(0) if self._pieces else b""

    def close(self) -> None:
        self.closed = True


async def _read(
    body: bytes, cuts: tuple[int, ...], typed: bool
) -> tuple[list[object], BaseException | None, SSEChunks]:
    """What SSEChunks hands out for ``body`` in these pieces: chunk records (``read``), or JSON
    values (iteration), as plain values to compare; then the failure, if any."""
    chunks = SSEChunks(_Body(_split(body, cuts)))  # type: ignore[arg-type]
    taken: list[object] = []
    try:
        if typed:
            await chunks.read(lambda records: taken.extend(msgspec.to_builtins(r) for r in records))
        else:
            async for event in chunks:
                taken.append(event)
    except Exception as exc:
        return taken, exc, chunks
    return taken, None, chunks


def _cuts(body: bytes) -> list[tuple[int, ...]]:
    return [(), *((i,) for i in range(1, len(body)))]


def _record(**fields: object) -> dict[str, object]:
    """A chunk record as plain values: every field, null when not sent (``choices``: left out)."""
    return {"usage": None, "model": None, "id": None, "error": None, "prompt_token_ids": None, **fields}


def _as_read(typed: bool, *events: dict[str, object]) -> list[object]:
    return [_record(**e) for e in events] if typed else list(events)


both = pytest.mark.parametrize("typed", [True, False], ids=["records", "json"])


@both
async def test_events_of_a_stream_in_any_pieces_up_to_done(typed: bool) -> None:
    body = (
        b'data: {"model":"a","object":"x"}\n\ndata: {"usage":{"n":[2,3]}}\n\ndata: {"model":"x,y"}\n\n'
        b'data: [DONE]\n\ndata: {"model":"late"}\n\n'
    )
    expected = _as_read(typed, {"model": "a", "object": "x"}, {"usage": {"n": [2, 3]}}, {"model": "x,y"})
    if typed:
        expected[0] = _record(model="a")  # fields a chunk record does not have are skipped
        expected[1] = _record(usage=msgspec.to_builtins(ChunkUsage()))  # as are those of its usage
    for cuts in _cuts(body):
        taken, failure, chunks = await _read(body, cuts, typed)
        assert (taken, failure, chunks.done) == (expected, None, True), cuts


@both
async def test_an_error_event_raises_after_the_events_before_it_whatever_the_pieces(typed: bool) -> None:
    body = b'data: {"model":"a"}\n\ndata: {"error":{"message":"overloaded"}}\n\ndata: {"model":"b"}\n\n'
    for cuts in _cuts(body):
        taken, failure, _ = await _read(body, cuts, typed)
        assert taken == _as_read(typed, {"model": "a"}), cuts
        assert isinstance(failure, StreamError) and failure.message == "overloaded", cuts


@both
async def test_text_that_merely_says_error_is_an_ordinary_event(typed: bool) -> None:
    body = b'data: {"model":"error"}\n\ndata: {"error":null}\n\ndata: [DONE]\n\n'
    taken, failure, _ = await _read(body, (), typed)
    assert (taken, failure) == (_as_read(typed, {"model": "error"}, {"error": None}), None)


@both
@pytest.mark.parametrize("bad", [b"not json", b"1,2", b'{"a":1},{"b":2}', b"[1", b""])
async def test_data_that_is_not_one_json_value_fails_after_the_events_before_it(typed: bool, bad: bytes) -> None:
    body = b'data: {"model":"a"}\n\ndata: ' + bad + b'\n\ndata: {"model":"b"}\n\n'
    for cuts in _cuts(body):
        taken, failure, _ = await _read(body, cuts, typed)
        assert taken == _as_read(typed, {"model": "a"}), cuts
        assert isinstance(failure, ValueError), cuts


@pytest.mark.parametrize("bad", [b"[1]", b'"text"', b'{"choices":5}', b'{"choices":[{"delta":"x"}]}'])
async def test_json_that_is_not_a_chunk_fails_after_the_chunks_before_it(bad: bytes) -> None:
    body = b'data: {"model":"a"}\n\ndata: ' + bad + b'\n\ndata: {"model":"b"}\n\n'
    for cuts in _cuts(body):
        taken, failure, _ = await _read(body, cuts, typed=True)
        assert taken == [_record(model="a")], cuts
        assert isinstance(failure, ChunkShapeError), cuts


@both
async def test_half_a_surrogate_pair_that_the_fast_decoders_refuse_is_still_read(typed: bool) -> None:
    body = b'data: {"model":"\\ud83d"}\n\ndata: {"model":"\\ude00"}\n\ndata: [DONE]\n\n'
    taken, failure, _ = await _read(body, (), typed)
    assert (taken, failure) == (_as_read(typed, {"model": "\ud83d"}, {"model": "\ude00"}), None)
