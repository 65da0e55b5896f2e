"""The transport's own connection (its protocol) on real sockets: a slow reader pauses the socket
without losing bytes, a connection cut half way fails, a closed idle one is not reused."""

from __future__ import annotations

import asyncio
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
