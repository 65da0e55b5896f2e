"""Server-sent events are split the same way whatever the pieces the body arrives in."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest

from tooloop.models._lean_http import SSEDecoder, sse_events

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


@pytest.mark.parametrize("name", sorted(BODIES))
def test_every_split_of_the_body_gives_the_same_events(name: str) -> None:
    body, expected = BODIES[name]
    splits = [(), *((i,) for i in range(1, len(body))), *itertools.combinations(range(1, len(body), 3), 2)]
    for cuts in splits:
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
