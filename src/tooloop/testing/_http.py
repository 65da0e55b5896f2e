"""The HTTP side of the test servers that carry many conversations at once (``token_server`` and
the tests' rollout server): keep-alive HTTP/1.1 on 127.0.0.1, each request a JSON body answered
whole, with none of a framework's cost per request; and a thread to run one in."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Answer", "Listener", "running_in_thread"]

Answer = tuple[str, bytes, bytes]
"""A response: its status (``"200 OK"``), content type and body."""


class Listener:
    """Answers each request with ``respond(path, JSON body)`` on connections kept open."""

    def __init__(self, respond: Callable[[str, dict[str, Any]], Awaitable[Answer]]):
        self._respond = respond
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, port: int = 0) -> int:
        """Listen on 127.0.0.1 (``port`` 0: any free port); the port listened on."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port, backlog=4096)
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and wait for the open connections to close."""
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while True:
                await self._one(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._connections.discard(task)
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        path = lines[0].split(b" ")[1].decode()
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        body = json.loads(await reader.readexactly(length)) if length else {}
        status, kind, payload = await self._respond(path, body)
        writer.write(
            f"HTTP/1.1 {status}\r\ncontent-type: ".encode()
            + kind
            + f"\r\ncontent-length: {len(payload)}\r\nconnection: keep-alive\r\n\r\n".encode()
            + payload
        )
        await writer.drain()


@contextmanager
def running_in_thread(
    start: Callable[[], Awaitable[object]], close: Callable[[], Awaitable[object]], name: str
) -> Iterator[None]:
    """A server (its ``start`` and ``close``) on an event loop of its own in a thread, while the block runs."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def main() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(close())
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()

    thread = threading.Thread(target=main, name=name, daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError(f"the {name} did not start")
    try:
        yield
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
