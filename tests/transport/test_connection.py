"""The transport's own connection (its protocol) on real sockets: a slow reader pauses the socket
without losing bytes, a connection cut half way fails, a closed idle one is not reused."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from tooloop.transport.http import Endpoint, Pool, TransportError

Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
Start = Callable[[Serve], Awaitable[Pool]]


async def _read_request(reader: asyncio.StreamReader) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    await reader.readexactly(length)


@pytest.fixture
async def serve() -> AsyncIterator[Start]:
    servers: list[asyncio.Server] = []
    pools: list[Pool] = []

    async def start(handler: Serve) -> Pool:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        pool = Pool(Endpoint.parse(f"http://127.0.0.1:{port}"), connect_timeout=5, read_timeout=5)
        pools.append(pool)
        return pool

    yield start
    for pool in pools:
        await pool.aclose()
    for server in servers:
        server.close()
        await server.wait_closed()


HEAD = b"POST /x HTTP/1.1\r\nhost: test\r\ncontent-length: 2\r\n\r\n"


async def test_a_body_larger_than_the_read_buffer_read_slowly_arrives_whole(serve: Start) -> None:
    body = os.urandom(8 * 1024 * 1024)  # four times what a connection buffers before it pauses the socket

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(2):
            await _read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body))
            for start in range(0, len(body), 1 << 20):
                writer.write(body[start : start + (1 << 20)])
                await writer.drain()
        writer.close()

    pool = await serve(handler)
    response = await pool.request(HEAD, b"{}")
    digest, size = hashlib.sha256(), 0
    while piece := await response.piece():
        digest.update(piece)
        size += len(piece)
        await asyncio.sleep(0.005)  # a slow consumer: the server's bytes pile up, then the socket pauses
    assert size == len(body) and digest.digest() == hashlib.sha256(body).digest()
    again = await pool.request(HEAD, b"{}")  # the same connection, kept alive and read to its end
    assert await again.read() == body


async def test_a_connection_cut_inside_the_body_fails_as_a_transport_error(serve: Start) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part")
        await writer.drain()
        writer.transport.abort()

    pool = await serve(handler)
    response = await pool.request(HEAD, b"{}")
    with pytest.raises(TransportError, match=r"closed the connection before the body was complete|broke"):
        await response.read()


async def test_an_idle_connection_the_server_closed_is_replaced(serve: Start) -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()  # without saying so in a header: the client finds out when it looks

    pool = await serve(handler)
    assert await (await pool.request(HEAD, b"{}")).read() == b"ok"
    await asyncio.sleep(0.05)  # the server's close reaches the idle connection
    assert await (await pool.request(HEAD, b"{}")).read() == b"ok"
    assert connections == 2


ANSWERS = [
    b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-request-id: one\r\ncontent-length: 9\r\n\r\n{"n": 1}\n',
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    b"b\r\ndata: two\n\n\r\n",  # and the rest of the chunked body in a second write
    b"HTTP/1.1 100 Continue\r\nx-early: yes\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 5\r\n\r\nthree",
    b"HTTP/1.1 204 No Content\r\nx-request-id: four\r\n\r\n",
    b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: %d\r\n\r\n%s"
    % (len(gzip.compress(b"five")), gzip.compress(b"five")),
    b"HTTP/1.1 200 OK\r\nx-request-id: six\r\ncontent-length: 3\r\n\r\nsix",
]


async def test_one_kept_alive_connection_reads_answers_of_every_framing_one_after_another(serve: Start) -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        for answer in ANSWERS:
            await _read_request(reader)
            writer.write(answer)
            if b"chunked" in answer:
                await writer.drain()
                await asyncio.sleep(0.02)
                writer.write(b"c\r\ndata: more\n\n\r\n0\r\n\r\n")
            await writer.drain()
        await reader.read()  # until the pool closes the connection
        writer.close()

    pool = await serve(handler)
    read = []
    for _ in ANSWERS:
        response = await pool.request(HEAD, b"{}")
        pieces = []
        while piece := await response.piece():
            pieces.append(piece)
        read.append((response.status, response.headers.get("x-request-id"), b"".join(pieces)))
    assert read == [
        (200, "one", b'{"n": 1}\n'),
        (200, None, b"data: two\n\ndata: more\n\n"),
        (201, None, b"three"),
        (204, "four", b""),
        (200, None, b"five"),
        (200, "six", b"six"),
    ]
    assert connections == 1


async def test_an_answer_read_later_keeps_its_own_body_and_headers_while_its_connection_serves_others(
    serve: Start,
) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for n in range(3):
            await _read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nx-n: %d\r\ncontent-length: 6\r\n\r\nbody %d" % (n, n))
            await writer.drain()
        await reader.read()  # until the pool closes the connection
        writer.close()

    pool = await serve(handler)
    first = await pool.request(HEAD, b"{}")  # the whole answer came with its head: the connection is back already
    second = await pool.request(HEAD, b"{}")
    third = await pool.request(HEAD, b"{}")
    assert [await answer.read() for answer in (third, first, second)] == [b"body 2", b"body 0", b"body 1"]
    assert [answer.headers["x-n"] for answer in (first, second, third)] == ["0", "1", "2"]


REAL_HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"Date: Sat, 28 Nov 2026 20:00:00 GMT\r\n"
    b"Content-Type: application/json\r\n"
    b"Connection: keep-alive\r\n"
    b"x-request-id:req_123\r\n"  # no blank after the colon
    b"openai-processing-ms: \t 412 \t\r\n"  # blanks around the value
    b"Set-Cookie: a=1; path=/\r\n"
    b"set-cookie: b=2; path=/\r\n"
    b"X-RateLimit-Remaining-Requests: 9999\r\n"
    b"CONTENT-ENCODING: GZip\r\n"
    b"Content-Length: %d\r\n"
    b"\r\n"
)


async def test_a_head_with_many_headers_in_any_case_written_byte_by_byte_after_an_interim_answer(
    serve: Start,
) -> None:
    body = gzip.compress(b'{"ok": true}')
    answer = b"\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n" + REAL_HEAD % len(body) + body

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        for n in range(len(answer)):
            writer.write(answer[n : n + 1])
            await writer.drain()
        await reader.read()  # until the pool closes the connection
        writer.close()

    pool = await serve(handler)
    response = await pool.request(HEAD, b"{}")
    assert response.status == 200
    assert await response.read() == b'{"ok": true}'
    assert response.plain_length == -1  # encoded: its length on the wire is not the body's
    assert response.headers == {
        "date": "Sat, 28 Nov 2026 20:00:00 GMT",
        "content-type": "application/json",
        "connection": "keep-alive",
        "x-request-id": "req_123",
        "openai-processing-ms": "412",
        "set-cookie": "a=1; path=/, b=2; path=/",
        "x-ratelimit-remaining-requests": "9999",
        "content-encoding": "GZip",
        "content-length": str(len(body)),
    }
