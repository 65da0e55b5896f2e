"""Opening a connection to an endpoint: its addresses, resolved once, and a socket connected to one.

``loop.create_connection(factory, host, port)`` goes through asyncio's general path on every new
connection: the address resolved again (a thread-pool ``getaddrinfo`` for every connection to a
host name, a parse for a numeric one), then ``sock_connect`` with its checks, partials and done
callbacks. At a burst that opens a thousand connections at once it was a large share of the
client's CPU. Here an endpoint's addresses are looked up once and kept (:class:`Addresses`;
concurrent connections share the one lookup), the socket is connected with ``connect_ex`` and one
wait for it to become writable, and given a transport: the lean :class:`~.plain.PlainTransport` for
plain HTTP on a selector loop, else ``create_connection(sock=...)``'s (TLS, its handshake checked
against the host name).

A connection that fails on every address raises what asyncio raises there (its one error, or
``Multiple exceptions: ...``), with the same text, so the messages built on it do not change.
"""

from __future__ import annotations

import asyncio
import errno
import math
import os
import selectors
import socket
import ssl
from collections.abc import Callable
from typing import Any, TypeVar

from .plain import PlainTransport, unwatch_writer, watch

__all__ = ["TTL", "Addresses", "connect"]

TTL = 10.0
"""Seconds a host name's looked-up addresses are used for new connections before it is looked up again."""

P = TypeVar("P", bound=asyncio.Protocol)

Address = tuple[int, int, int, Any]
"""What ``getaddrinfo`` gives for one address, less the canonical name: family, type, protocol, socket address."""


class Addresses:
    """Where one ``host:port`` is reached: a numeric host parsed once and for good; a host name
    looked up once for every connection opened within :data:`TTL` seconds, and again after
    that, or at once after no address it gave could be connected to."""

    __slots__ = ("_known", "_pending", "_until", "host", "port")

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._known = _numeric(host, port)
        self._until = math.inf if self._known else 0.0
        self._pending: asyncio.Task[list[Address]] | None = None

    async def get(self, loop: asyncio.AbstractEventLoop) -> list[Address]:
        """The addresses to try in turn (``socket.gaierror`` when the name does not resolve)."""
        if self._known and loop.time() < self._until:
            return self._known
        pending = self._pending
        if pending is None or pending.get_loop() is not loop:
            pending = self._pending = loop.create_task(self._look_up(loop))
            pending.add_done_callback(_retrieve)
        # shielded: one connection's timeout must not cancel the lookup the others wait for
        return await asyncio.shield(pending)

    def forget(self) -> None:
        """No address could be connected to: look the name up again for the next connection."""
        if self._until != math.inf:
            self._until = 0.0

    async def _look_up(self, loop: asyncio.AbstractEventLoop) -> list[Address]:
        try:
            infos = await loop.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        finally:
            self._pending = None
        if not infos:
            raise OSError("getaddrinfo() returned empty list")  # asyncio's words
        self._known = [(family, kind, proto, address) for family, kind, proto, _, address in infos]
        self._until = loop.time() + TTL
        return self._known


def _retrieve(task: asyncio.Task[list[Address]]) -> None:
    """Take a failed lookup's error: not reported as unretrieved when every connection waiting for it gave up."""
    if not task.cancelled():
        task.exception()


def _numeric(host: str, port: int) -> list[Address] | None:
    """The address of a numeric IPv4 or IPv6 host, as ``getaddrinfo`` would give it; None for a name."""
    if "%" in host:  # an IPv6 zone: getaddrinfo knows the interface's index
        return None
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        address = (host, port) if family == socket.AF_INET else (host, port, 0, 0)
        return [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, address)]
    return None


async def connect(
    addresses: Addresses,
    factory: Callable[[], P],
    tls: ssl.SSLContext | None,
) -> P:
    """A protocol from ``factory`` on a new connection to the first of ``addresses`` that accepts
    one (TLS with ``tls``, the certificate checked against the host name); OSError when none does."""
    loop = asyncio.get_running_loop()
    errors: list[OSError] = []
    for family, kind, proto, address in await addresses.get(loop):
        try:
            sock = await _connected(loop, family, kind, proto, address)
            break
        except OSError as exc:
            errors.append(exc)
    else:
        addresses.forget()
        raise _one(errors)
    if tls is None and isinstance(loop, asyncio.SelectorEventLoop):
        protocol = factory()
        try:
            PlainTransport(loop, sock, protocol)
        except BaseException:
            sock.close()
            raise
        return protocol
    hostname = addresses.host if tls is not None else None
    _, protocol = await loop.create_connection(factory, sock=sock, ssl=tls, server_hostname=hostname)
    return protocol


async def _connected(
    loop: asyncio.AbstractEventLoop, family: int, kind: int, proto: int, address: Any
) -> socket.socket:
    """A non-blocking socket connected to ``address`` (closed again if that fails or is cancelled)."""
    sock = socket.socket(family, kind, proto)
    try:
        sock.setblocking(False)
        if not isinstance(loop, asyncio.SelectorEventLoop):  # no add_writer (Windows' proactor)
            await loop.sock_connect(sock, address)
            return sock
        code = sock.connect_ex(address)
        if code in (errno.EINPROGRESS, errno.EAGAIN, errno.EINTR):  # the usual case: the handshake is under way
            fd = sock.fileno()
            writable = loop.create_future()
            watch(loop, fd, selectors.EVENT_WRITE, _writable, loop, fd, writable)
            try:
                await writable
            finally:
                if writable.cancelled() or not writable.done():  # the connect timeout: stop watching the socket
                    loop.remove_writer(fd)
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                raise OSError(code, f"Connect call failed {address}")  # asyncio's words (an errno subclass)
        elif code:
            raise OSError(code, os.strerror(code))  # failed at once, as socket.connect raises it
    except BaseException:
        sock.close()
        raise
    return sock


def _writable(loop: asyncio.AbstractEventLoop, fd: int, writable: asyncio.Future[None]) -> None:
    unwatch_writer(loop, fd)
    if not writable.done():
        writable.set_result(None)


def _one(errors: list[OSError]) -> OSError:
    """The error of a connection that failed on every address, as asyncio words it."""
    if len(errors) == 1 or all(str(error) == str(errors[0]) for error in errors):
        return errors[0]
    return OSError("Multiple exceptions: {}".format(", ".join(str(error) for error in errors)))
