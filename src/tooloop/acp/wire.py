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
import stat
import sys
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["FileWriter", "LineTransport", "Writer", "claim_stdout", "is_regular_file", "open_stdio"]

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


class Writer(Protocol):
    """What :class:`LineTransport` writes to: an ``asyncio.StreamWriter`` or a :class:`FileWriter`."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class FileWriter:
    """Writes to a regular file (``> out.jsonl``), which the event loop's pipe transports refuse."""

    def __init__(self, fd: int):
        self._fd = fd

    def write(self, data: bytes) -> None:
        """Write all of ``data`` (a regular file takes it at once)."""
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    async def drain(self) -> None:
        """Nothing is buffered."""

    def close(self) -> None:
        """Close the file descriptor."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def is_regular_file(fd: int) -> bool:
    """True when ``fd`` is a regular file (a redirection from or to a file), not a pipe or terminal."""
    return stat.S_ISREG(os.fstat(fd).st_mode)


async def open_stdio(protocol_fd: int) -> tuple[asyncio.StreamReader, Writer]:
    """Async streams over stdin and the protocol's file descriptor: pipes, sockets and terminals
    through the event loop, regular files (``< in.jsonl > out.jsonl``) read and written directly."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LIMIT)
    stdin = sys.stdin.fileno()
    if is_regular_file(stdin):
        _pumps.add(asyncio.create_task(_pump_file(reader, stdin)))
    else:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    if is_regular_file(protocol_fd):
        return reader, FileWriter(protocol_fd)
    out = os.fdopen(protocol_fd, "wb", buffering=0)
    # A stream protocol gives the writer flow control (drain); its own reader stays unused.
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), out
    )
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


_pumps: set[asyncio.Task[None]] = set()


async def _pump_file(reader: asyncio.StreamReader, fd: int) -> None:
    loop = asyncio.get_running_loop()
    try:
        while data := await loop.run_in_executor(None, os.read, fd, 1 << 16):
            reader.feed_data(data)
    finally:
        reader.feed_eof()
        _pumps.discard(asyncio.current_task())


class LineTransport:
    """Newline-delimited JSON-RPC over a pair of streams, answering malformed input itself.

    Implements the SDK's message ``Transport`` protocol (``send``, ``receive``, ``close``). At the
    end of input, every request already received is answered before :meth:`receive` says so: a
    prompt sent just before the client closed its side runs to its end, and a request of ours
    the client can no longer answer (a permission) gets an error answer instead of hanging. With
    ``one_at_a_time`` (input from a file, which cannot wait for answers) each request is answered
    before the next message is read, so a prompt never overtakes the ``session/new`` before it.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: Writer, *, one_at_a_time: bool = False):
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()
        self._one_at_a_time = one_at_a_time
        self._unanswered: set[Any] = set()
        """Ids of the client's requests not answered yet."""
        self._asked: set[Any] = set()
        """Ids of our requests the client has not answered yet."""
        self._changed = asyncio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        """Write one message as one line (JSON escapes every newline inside strings)."""
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        asking = "id" in message and "method" in message
        if asking:  # before the write: the client's answer may be read before this call returns
            self._asked.add(message["id"])
            self._changed.set()
        async with self._lock:
            self._writer.write(line.encode())
            await self._writer.drain()
        if "id" in message and not asking:
            self._unanswered.discard(message["id"])
            self._changed.set()

    async def receive(self) -> dict[str, Any] | None:
        """The next well-formed message, or None at the end of input (once everything received
        was answered)."""
        if self._one_at_a_time:  # read on only to find the answer to a question of ours (a permission)
            await self._settled(lambda: not self._unanswered or bool(self._asked))
        while True:
            line = await self._read_line()
            if line is None:
                return await self._at_end()
            if not line.strip():
                continue
            message = await self._parse(line)
            if message is not None:
                if "id" in message:
                    if "method" in message:
                        self._unanswered.add(message["id"])
                    else:
                        self._asked.discard(message["id"])
                return message

    async def _at_end(self) -> dict[str, Any] | None:
        """After the last line: fail our unanswerable requests, wait for the client's to be answered."""
        while True:
            if self._asked:
                asked = self._asked.pop()
                error = {
                    "code": -32603,
                    "message": "Internal error",
                    "data": {"details": "the client closed its input"},
                }
                return {"jsonrpc": "2.0", "id": asked, "error": error}
            if not self._unanswered:
                return None
            await self._settled(lambda: bool(self._asked) or not self._unanswered)

    async def _settled(self, done: Callable[[], bool]) -> None:
        while not done():
            self._changed.clear()
            await self._changed.wait()

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
