"""The stdio side of the ACP server: stdout carries protocol messages and nothing else.

:func:`claim_stdout` moves the process's real standard output to a private file descriptor and
points descriptor 1 (and ``sys.stdout``) at standard error, so a ``print`` in a tool, a log
handler, or a child process that inherits stdout (an MCP server) can never corrupt the stream.

:class:`LineTransport` frames JSON-RPC messages one per line. It answers what the SDK would only
log and skip: a line that is not JSON gets ``-32700`` and one that is not a JSON-RPC message gets
``-32600``, and the agent carries on with the next line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from typing import Any

__all__ = ["LineTransport", "claim_stdout", "open_stdio"]

_log = logging.getLogger("tooloop.acp")

_LIMIT = 50 * 1024 * 1024
"""Longest line accepted (prompts may embed whole files)."""


def claim_stdout() -> int:
    """Keep the real stdout for the protocol and send everything else written there to stderr.

    Returns the file descriptor the protocol must write to.
    """
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


async def open_stdio(protocol_fd: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Async streams over stdin and the protocol's file descriptor (both must be pipes or sockets)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = os.fdopen(protocol_fd, "wb", buffering=0)
    # A stream protocol gives the writer flow control (drain); its own reader stays unused.
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), out
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer


def _write_protocol() -> asyncio.StreamReaderProtocol:
    return asyncio.StreamReaderProtocol(asyncio.StreamReader())


class LineTransport:
    """Newline-delimited JSON-RPC over a pair of streams, answering malformed input itself.

    Implements the SDK's message ``Transport`` protocol (``send``, ``receive``, ``close``).
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message as one line (JSON escapes every newline inside strings)."""
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        async with self._lock:
            self._writer.write(line.encode())
            await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message, or None at the end of input."""
        while True:
            line = await self._read_line()
            if line is None:
                return None
            if not line.strip():
                continue
            message = await self._parse(line)
            if message is not None:
                return message

    async def close(self) -> None:
        """Close the output stream."""
        self._writer.close()

    async def _read_line(self) -> bytes | None:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial or None
        except asyncio.LimitOverrunError:
            await self._skip_long_line()
            await self._error(None, -32600, "Invalid request", f"the message is longer than {_LIMIT} bytes")
            return b""
        return line

    async def _skip_long_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                await self._reader.readexactly(exc.consumed)
            except asyncio.IncompleteReadError:
                return

    async def _parse(self, line: bytes) -> dict[str, Any] | None:
        try:
            message = json.loads(line)
        except ValueError as exc:
            _log.warning("ignored a line that is not JSON: %s", exc)
            await self._error(None, -32700, "Parse error", str(exc))
            return None
        problem = _invalid(message)
        if problem is not None:
            _log.warning("ignored an invalid JSON-RPC message: %s", problem)
            message_id = message.get("id") if isinstance(message, dict) else None
            await self._error(_valid_id(message_id), -32600, "Invalid request", problem)
            return None
        result: dict[str, Any] = message
        return result

    async def _error(self, message_id: Any, code: int, text: str, details: str) -> None:
        error = {"code": code, "message": text, "data": {"details": details}}
        await self.send({"jsonrpc": "2.0", "id": message_id, "error": error})


def _invalid(message: Any) -> str | None:
    """Why ``message`` is not a JSON-RPC 2.0 request, notification or response (None when it is)."""
    if not isinstance(message, dict):
        return "a JSON-RPC message must be a JSON object (batches are not used by ACP)"
    if "method" in message:
        if not isinstance(message["method"], str):
            return "'method' must be a string"
        if "id" in message and _valid_id(message["id"]) is None and message["id"] is not None:
            return "'id' must be a string, a number or null"
        return None
    if "id" not in message or ("result" not in message and "error" not in message):
        return "a message needs 'method' (request or notification) or 'id' with 'result' or 'error' (response)"
    return None


def _valid_id(value: Any) -> str | int | None:
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None
