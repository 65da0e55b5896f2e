"""The stdio transport: the server as a subprocess we know by pid, with its stderr's tail kept.

The server runs in a process group of its own, so stopping it also stops what it started (``npx``
and shell wrappers spawn children). Stopping follows the MCP rule: close stdin, wait, then
SIGTERM, then SIGKILL. Every group still running when the interpreter exits is killed
(``tooloop._children``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from mcp import types

from .._children import forget, track
from ..errors import ToolSourceError

__all__ = ["StdioProcess", "StdioSpec", "stdio_transport"]

MAX_MESSAGE_SIZE = 32 * 1024 * 1024
"""The largest message (in bytes) read from a server by default; a larger answer fails its call."""
_STOP_WAIT = 2.0
_TAIL_LINES = 20
_TAIL_LINE = 1000  # characters kept of one line of stderr (its end)


@dataclass(frozen=True, slots=True, kw_only=True)
class StdioSpec:
    """How to start a stdio server."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    max_message_size: int = MAX_MESSAGE_SIZE

    @property
    def command_line(self) -> str:
        """The command as a person would type it."""
        return subprocess.list2cmdline([self.command, *self.args])


@dataclass(slots=True)
class StdioProcess:
    """What we know of a running server process."""

    pid: int
    stderr_tail: deque[str] = field(default_factory=lambda: deque(maxlen=_TAIL_LINES))
    returncode: int | None = None
    stderr_closed: anyio.Event = field(default_factory=anyio.Event)

    def tail(self) -> str:
        """The last lines the server wrote to stderr."""
        return "\n".join(self.stderr_tail)


def _executable(spec: StdioSpec) -> str:
    found = shutil.which(spec.command, path=(spec.env or {}).get("PATH") or os.environ.get("PATH"))
    if found is None:
        raise ToolSourceError(f"command {spec.command!r} was not found")
    return found


@asynccontextmanager
async def stdio_transport(
    spec: StdioSpec,
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage], StdioProcess]
]:
    """Start the server; yield the session's streams and the process; stop it on exit."""
    process = await anyio.open_process(
        [_executable(spec), *spec.args],
        env={**get_default_environment(), **(spec.env or {})},
        cwd=spec.cwd,
        start_new_session=True,
    )
    track(process.pid)
    known = StdioProcess(process.pid)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_read_stdout, process, read_writer, spec.max_message_size)
            group.start_soon(_write_stdin, process, write_reader)
            group.start_soon(_read_stderr, process, known)
            try:
                yield read_stream, write_stream, known
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process)
                    known.returncode = process.returncode
                    with anyio.move_on_after(_STOP_WAIT):  # keep its last words for error messages
                        await known.stderr_closed.wait()
                group.cancel_scope.cancel()
    finally:
        forget(process.pid)
        for stream in (read_stream, write_stream, read_writer, write_reader):
            stream.close()


async def _read_stdout(
    process: anyio.abc.Process, sink: MemoryObjectSendStream[SessionMessage | Exception], limit: int
) -> None:
    assert process.stdout is not None
    lines = _Lines(limit)
    async with sink:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for chunk in process.stdout:
                for line, size in lines.feed(chunk):
                    if size > limit:
                        answer = _too_long(line, limit)
                        if answer is None:
                            return  # too large, and nobody can tell whose: the connection ends
                        await sink.send(answer)
                    elif line.strip():
                        await sink.send(_parse(line))


class _Lines:
    """Splits a byte stream into lines in time linear in its size. A line longer than ``limit``
    bytes is not kept: only its first bytes come out (with its full size), enough to see whose
    answer it was."""

    _HEAD = 256

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pieces: list[bytes] = []
        self.size = 0

    def feed(self, chunk: bytes) -> Iterator[tuple[bytes, int]]:
        """The lines ``chunk`` completes, each with its size in bytes."""
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            yield self._take(chunk[start:end])
            start = end + 1
        self._keep(chunk[start:])

    def _keep(self, piece: bytes) -> None:
        self.size += len(piece)
        if self.size <= self.limit:
            self.pieces.append(piece)
        elif self.size - len(piece) <= self.limit:  # just went over: keep the head only
            self.pieces = [b"".join([*self.pieces, piece])[: self._HEAD]]

    def _take(self, piece: bytes) -> tuple[bytes, int]:
        self._keep(piece)
        line, size = b"".join(self.pieces), self.size
        self.pieces, self.size = [], 0
        return line, size


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


_ANSWER_ID = re.compile(
    rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"[^"\\]*")\s*,\s*"(?:result|error)"'
)


def _too_long(head: bytes, limit: int) -> SessionMessage | None:
    """The error answer for a message over the size limit, for the request it answers; None when
    the head does not say which request that is."""
    found = _ANSWER_ID.match(head)
    if found is None:
        return None
    request_id = json.loads(found.group(1))
    error = types.ErrorData(
        code=types.INTERNAL_ERROR,
        message=f"the server's answer is larger than the maximum message size of {limit} bytes (max_message_size)",
    )
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


async def _write_stdin(process: anyio.abc.Process, source: MemoryObjectReceiveStream[SessionMessage]) -> None:
    assert process.stdin is not None
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async with source:
            async for item in source:
                line = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await process.stdin.send(line.encode())


async def _read_stderr(process: anyio.abc.Process, known: StdioProcess) -> None:
    assert process.stderr is not None
    current = bytearray()
    cut = False
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        async for chunk in process.stderr:
            *complete, rest = chunk.split(b"\n")
            for piece in complete:
                current += piece
                known.stderr_tail.append(_tail_line(current, cut))
                current.clear()
                cut = False
            current += rest
            if len(current) > 2 * _TAIL_LINE:  # a line without end: keep its end only
                del current[:-_TAIL_LINE]
                cut = True
    if current:
        known.stderr_tail.append(_tail_line(current, cut))
    known.stderr_closed.set()
    await process.wait()
    known.returncode = process.returncode


def _tail_line(line: bytearray, cut: bool) -> str:
    """The end of a line of stderr, at most ``_TAIL_LINE`` characters, marked when cut."""
    text = line.decode(errors="replace")
    if cut or len(text) > _TAIL_LINE:
        return "[...]" + text[-_TAIL_LINE:]
    return text


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin, wait; then SIGTERM the group, wait; then SIGKILL it."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            _signal_group(process.pid, sig)
        with anyio.move_on_after(_STOP_WAIT):
            await process.wait()
            break
    _signal_group(process.pid, signal.SIGKILL)  # children the server left behind in its group
    await process.aclose()


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
