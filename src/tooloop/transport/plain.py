"""A plain TCP transport on a selector event loop: a connected socket, its reader and writer callbacks.

asyncio's socket transport is general: it wraps the socket for users, asks the kernel for both
addresses, registers itself with the loop and starts in three callbacks one loop turn later, and
every read goes through two methods before the protocol sees the bytes. At a burst of a thousand
new connections that start cost most of what a connection costs the client, and the objects it
keeps are walked by every collection. This transport does what the pool's :class:`~.http.Connection`
needs, with asyncio's semantics for each: writes sent at once and the rest buffered (the protocol
told to pause above 64 KiB and to resume below 16 KiB), reading paused and resumed, ``close``
(what is buffered is sent first) and ``abort``, the end of the stream and errors reported to
``connection_lost``, which closes the socket. TLS connections, and loops without ``add_reader``
(Windows' proactor), keep asyncio's transports.
"""

from __future__ import annotations

import asyncio
import selectors
import socket
from asyncio.selector_events import BaseSelectorEventLoop
from typing import Any

__all__ = ["PlainTransport", "unwatch_writer", "watch"]

_RECEIVE = 256 * 1024
"""Bytes asked of the kernel per read, as asyncio's socket transport asks."""
_HIGH = 64 * 1024
_LOW = _HIGH // 4


class PlainTransport(asyncio.Transport):
    """The transport of one connected, non-blocking TCP socket; starts reading at once."""

    __slots__ = (
        "_buffer",
        "_closing",
        "_fd",
        "_high",
        "_loop",
        "_lost",
        "_low",
        "_protocol",
        "_reading",
        "_sock",
        "_write_paused",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket, protocol: asyncio.Protocol) -> None:
        self._loop = loop
        self._sock = sock
        self._fd = sock.fileno()
        self._protocol = protocol
        self._buffer = bytearray()
        self._closing = False
        self._lost = False
        """connection_lost is scheduled or done."""
        self._reading = True
        self._write_paused = False
        self._high, self._low = _HIGH, _LOW
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # small requests go out now
        protocol.connection_made(self)
        watch(loop, self._fd, selectors.EVENT_READ, self._read_ready)

    # ---- reading

    def _read_ready(self) -> None:
        if self._closing:  # closed by a callback of the same loop turn
            return
        try:
            data = self._sock.recv(_RECEIVE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._force_close(exc)
            return
        if data:
            self._protocol.data_received(data)
            return
        self._loop.remove_reader(self._fd)
        self._reading = False
        if not self._protocol.eof_received():
            self.close()

    def is_reading(self) -> bool:
        return self._reading and not self._closing

    def pause_reading(self) -> None:
        if self._reading and not self._closing:
            self._reading = False
            self._loop.remove_reader(self._fd)

    def resume_reading(self) -> None:
        if not self._reading and not self._closing:
            self._reading = True
            self._loop.add_reader(self._fd, self._read_ready)

    # ---- writing

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data or self._lost:
            return
        buffer = self._buffer
        if not buffer:
            try:
                sent = self._sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                self._force_close(exc)
                return
            if sent == len(data):
                return
            data = memoryview(data)[sent:]
            self._loop.add_writer(self._fd, self._write_ready)
        buffer += data
        if not self._write_paused and len(buffer) > self._high:
            self._write_paused = True
            self._protocol.pause_writing()

    def _write_ready(self) -> None:
        buffer = self._buffer
        try:
            sent = self._sock.send(buffer)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._loop.remove_writer(self._fd)
            buffer.clear()
            self._force_close(exc)
            return
        del buffer[:sent]
        if self._write_paused and len(buffer) <= self._low:
            self._write_paused = False
            self._protocol.resume_writing()
        if not buffer:
            self._loop.remove_writer(self._fd)
            if self._closing and not self._lost:
                self._lost = True
                self._loop.call_soon(self._call_connection_lost, None)

    def get_write_buffer_size(self) -> int:
        return len(self._buffer)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._low, self._high

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._high = _HIGH if high is None else high
        self._low = self._high // 4 if low is None else low

    def can_write_eof(self) -> bool:
        return False

    # ---- the end

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        """Stop reading; send what is buffered, then close."""
        if self._closing:
            return
        self._closing = True
        if self._reading:
            self._loop.remove_reader(self._fd)
        if not self._buffer and not self._lost:
            self._lost = True
            self._loop.call_soon(self._call_connection_lost, None)

    def abort(self) -> None:
        """Close now, dropping what is buffered."""
        self._force_close(None)

    def _force_close(self, exc: BaseException | None) -> None:
        if self._lost:
            return
        if self._buffer:
            self._buffer.clear()
            self._loop.remove_writer(self._fd)
        if not self._closing:
            self._closing = True
            if self._reading:
                self._loop.remove_reader(self._fd)
        self._lost = True
        self._loop.call_soon(self._call_connection_lost, exc)

    def _call_connection_lost(self, exc: BaseException | None) -> None:
        try:
            self._protocol.connection_lost(exc)  # type: ignore[arg-type]  # asyncio passes the error on
        finally:
            self._sock.close()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """``socket``, ``peername`` and ``sockname`` (asked of the socket when asked for)."""
        try:
            if name == "socket":
                return self._sock
            if name == "peername":
                return self._sock.getpeername()
            if name == "sockname":
                return self._sock.getsockname()
        except OSError:
            return default
        return default

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._protocol

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._protocol = protocol  # type: ignore[assignment]


def watch(loop: asyncio.AbstractEventLoop, fd: int, event: int, callback: Any, *args: Any) -> None:
    """``loop.add_reader`` (``event`` is ``EVENT_READ``) or ``add_writer`` for a descriptor the loop does
    not watch yet.

    On asyncio's own selector loops the descriptor goes to the loop's selector directly, with the
    data its event processing reads (a reader's and a writer's handle): what ``add_reader`` ends up
    doing, without its checks, which raise and catch three exceptions for every new descriptor
    (Python 3.11), a third of what opening a connection cost. ``remove_reader``, ``remove_writer``
    and the rest of the loop's API work on it as on any. Any other loop gets the public call.
    """
    selector = _selector(loop)
    if selector is None:
        (loop.add_reader if event == selectors.EVENT_READ else loop.add_writer)(fd, callback, *args)
        return
    handle = asyncio.Handle(callback, args, loop, None)
    selector.register(fd, event, (handle, None) if event == selectors.EVENT_READ else (None, handle))


def unwatch_writer(loop: asyncio.AbstractEventLoop, fd: int) -> None:
    """``loop.remove_writer(fd)`` from the callback :func:`watch` gave it, when nothing else watches ``fd``
    (on asyncio's own loops the selector lets it go directly: the handle to cancel is the one running)."""
    selector = _selector(loop)
    if selector is None:
        loop.remove_writer(fd)
    else:
        selector.unregister(fd)


def _selector(loop: asyncio.AbstractEventLoop) -> selectors.BaseSelector | None:
    """The selector of a loop whose watching of descriptors is asyncio's own, else None."""
    kind = type(loop)
    own = _OWN.get(kind)
    if own is None:
        own = _OWN[kind] = isinstance(loop, BaseSelectorEventLoop) and all(
            getattr(kind, name) is getattr(BaseSelectorEventLoop, name)
            for name in ("_add_reader", "_add_writer", "_remove_reader", "_remove_writer", "_process_events")
        )
    return loop._selector if own else None  # type: ignore[attr-defined]


_OWN: dict[type[asyncio.AbstractEventLoop], bool] = {}
"""Per kind of loop: whether it watches descriptors as asyncio's selector loops do."""
