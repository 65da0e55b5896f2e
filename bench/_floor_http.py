"""The floor for the adapter benches: one JSON POST on a raw asyncio socket with orjson, no SDK.

The same idea as the shared bench's ``floor_raw`` contestant, for any provider's wire format:
what one Python process minimally spends to send a JSON body and read a JSON (or SSE) answer
over a kept-alive HTTP/1.1 connection. Handles ``content-length`` and chunked answers.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import orjson


class FloorClient:
    """POSTs to one server over kept-alive connections (one per request in flight, reused)."""

    def __init__(self, base_url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.headers = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def post(self, path: str, body: Any) -> list[Any]:
        """The JSON answer (one item), or the JSON of every SSE ``data:`` line of a streamed answer."""
        conn = self.idle.pop() if self.idle else await asyncio.open_connection(self.host, self.port)
        reader, writer = conn
        data = orjson.dumps(body)
        head = f"POST {path} HTTP/1.1\r\nhost: {self.host}\r\n{self.headers}content-length: {len(data)}\r\n\r\n"
        writer.write(head.encode() + data)
        raw = (await reader.readuntil(b"\r\n\r\n")).lower()
        if b"transfer-encoding: chunked" in raw:
            pieces = []
            while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                pieces.append((await reader.readexactly(size + 2))[:-2])
            await reader.readuntil(b"\r\n")
            payload = b"".join(pieces)
        else:
            length = int(raw.split(b"content-length:")[1].split(b"\r\n")[0])
            payload = await reader.readexactly(length)
        self.idle.append(conn)
        if b"text/event-stream" not in raw:
            return [orjson.loads(payload)]
        return [orjson.loads(line[5:]) for line in payload.splitlines() if line.startswith(b"data:")]

    async def close(self) -> None:
        idle, self.idle = self.idle, []
        for _, writer in idle:
            writer.close()
