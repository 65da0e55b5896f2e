"""An in-memory stand-in for the network, to test the transport alone (as ``httpx.MockTransport``).

A :class:`MemoryTransport` answers every request with what its handler returns, through the
transport's real code (framing, keep-alive, retries, SSE), without a socket::

    answers = MemoryTransport(lambda request: MemoryResponse(200, body=b'{"ok": true}'))
    client = Client("http://api.test/v1", {}, retry=RetryPolicy(2), connect_timeout=1,
                    read_timeout=1, connector=answers.connect)
    assert await client.post_json("/chat", {"q": 1}) == {"ok": True}
    assert answers.requests[0].target == "/v1/chat"

A response body given as a list of pieces is sent chunked, one chunk per piece, each fed to the
reader as it would arrive off the wire.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .http import Connection, Endpoint

__all__ = ["MemoryRequest", "MemoryResponse", "MemoryTransport"]


@dataclass(frozen=True, slots=True)
class MemoryRequest:
    """One request as the server would read it: headers with lowercased names."""

    method: str
    target: str
    headers: Mapping[str, str]
    body: bytes
    connection: int
    """Which connection carried it (1 for the first opened)."""


@dataclass(frozen=True, slots=True)
class MemoryResponse:
    """An answer: a whole body (sent with ``content-length``) or pieces (sent chunked, one chunk each)."""

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | Sequence[bytes] = b""

    def pieces(self) -> list[bytes]:
        """The response as the bytes the server writes, piece by piece."""
        head = f"HTTP/1.1 {self.status} Memory\r\n" + "".join(f"{k}: {v}\r\n" for k, v in self.headers.items())
        if isinstance(self.body, bytes):
            return [f"{head}content-length: {len(self.body)}\r\n\r\n".encode() + self.body]
        chunks = [b"%x\r\n%s\r\n" % (len(piece), piece) for piece in self.body if piece]
        return [f"{head}transfer-encoding: chunked\r\n\r\n".encode(), *chunks, b"0\r\n\r\n"]


Handler = Callable[[MemoryRequest], "MemoryResponse | Awaitable[MemoryResponse]"]


class MemoryTransport:
    """Connections that never leave the process: ``connect`` is a :class:`~.http.Pool` connector."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[MemoryRequest] = []
        self.connections = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def connect(self, endpoint: Endpoint) -> Connection:
        """Open an in-memory connection to ``endpoint``."""
        self.connections += 1
        conn = Connection()
        conn.connection_made(_Socket(self, conn, self.connections))  # type: ignore[arg-type]
        return conn

    def _answer(self, request: MemoryRequest, conn: Connection) -> None:
        self.requests.append(request)
        answer = self.handler(request)
        if inspect.isawaitable(answer):
            task = asyncio.get_running_loop().create_task(self._later(answer, conn))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            _feed(answer, conn)

    async def _later(self, answer: Awaitable[MemoryResponse], conn: Connection) -> None:
        _feed(await answer, conn)


def _feed(response: MemoryResponse, conn: Connection) -> None:
    for piece in response.pieces():
        conn.data_received(piece)


class _Socket:
    """The transport of an in-memory connection: reads requests as a server would, hands the
    answers to the connection as the event loop hands it what a socket received."""

    def __init__(self, transport: MemoryTransport, conn: Connection, connection: int) -> None:
        self._server = transport
        self._conn = conn
        self._connection = connection
        self._buffer = bytearray()
        self._closing = False

    def write(self, data: bytes) -> None:
        self._buffer += data
        while (request := self._request()) is not None:
            self._server._answer(request, self._conn)

    def _request(self) -> MemoryRequest | None:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            return None
        lines = self._buffer[:end].decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        size = int(headers.get("content-length", "0"))
        if len(self._buffer) < end + 4 + size:
            return None
        body = bytes(self._buffer[end + 4 : end + 4 + size])
        del self._buffer[: end + 4 + size]
        method, target, _ = lines[0].split(" ", 2)
        return MemoryRequest(method, target, headers, body, self._connection)

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self._conn.connection_lost(None)

    def abort(self) -> None:
        self.close()

    def is_closing(self) -> bool:
        return self._closing

    def pause_reading(self) -> None:
        return None

    def resume_reading(self) -> None:
        return None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default
