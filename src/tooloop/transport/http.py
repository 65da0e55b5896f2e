"""HTTP/1.1 on asyncio: a keep-alive pool per endpoint, one request, its response's body.

Why it exists: an SDK's request pipeline (options models, header merging, an ``httpx`` request
and response, a connection pool that scans every connection per request) costs about ten times
the CPU of the HTTP exchange itself, and at a thousand concurrent conversations that decides how
many machines a rollout needs. This client does only what those endpoints need, on asyncio's
transports (a protocol of its own per connection, not a stream reader and writer pair: at a
thousand concurrent requests their objects and coroutines are a measurable share of the CPU and of
the garbage collector's work): a keep-alive pool per event loop (no scan: an idle list) capped at ``max_connections``
with the waiters served in turn, TLS through :mod:`ssl` trusting what the SDK's HTTP stack trusts,
the framing (``content-length``, chunked and close-delimited bodies) by llhttp through
``httptools``, gzip/deflate (raw deflate too), a connect timeout and an idle timeout on every read
and every write. Auth, retries and error classes are the
caller's (:mod:`.client`); a pool is bound to the event loop that opened its connections.

Failures surface as :class:`TransportError` (connection refused, reset, cut body) and its subclasses
:class:`ReadTimeout` (no bytes for the idle time), :class:`WriteTimeout` (the server took no bytes
for the idle time) or :class:`ConnectTimeout`.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import functools
import os
import re
import ssl
import sys
import zlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Protocol, TypeVar, overload
from urllib.parse import unquote, urlsplit

import httptools

from .._deadline import deadline
from .connect import Addresses, connect
from .idle import Expiry

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "ConnectTimeout",
    "Connection",
    "Connector",
    "Endpoint",
    "Pool",
    "ReadTimeout",
    "Recovery",
    "RedirectError",
    "Response",
    "TransportError",
    "WriteTimeout",
    "check_headers",
    "tls_context",
]

DEFAULT_MAX_CONNECTIONS = 1000
"""Connections one pool keeps open at most, as the SDKs' HTTP stack does; more requests wait their turn."""

Connector = Callable[["Endpoint"], Awaitable["Connection"]]
"""Opens a connection to an endpoint (a :class:`Connection` whose ``connection_made`` was called)."""
_BROKEN = (OSError, asyncio.IncompleteReadError)
"""What a read raises when the connection broke (a reset, a TLS failure, the end of the stream)."""
_MAX_HEAD = 65536
_READ_LIMIT = 2 * 1024 * 1024
_T = TypeVar("_T")
"""Bytes received and not yet read past which the connection stops reading from the socket."""


class _Answer:
    """What llhttp (through ``httptools``) reported so far of the answer a connection is reading."""

    __slots__ = ("body", "complete", "idle", "keep", "status")

    body: list[bytes]
    """The pieces of the body parsed and not yet read (a new list per answer: the last one handed out stays its own)."""

    def __init__(self) -> None:
        self.next_answer()

    def next_answer(self) -> None:
        """Start over for the next answer."""
        self.status = 0
        """The status once the head is complete (0 before; a 1xx is replaced by the answer that follows)."""
        self.body = []
        self.complete = self.keep = False
        self.idle = 0
        """Bytes fed in a row that held no body (a bound on chunk lines and trailers)."""


class Connection(_Answer, asyncio.Protocol):
    """One connection's protocol: the bytes the server sent, kept until they are taken, and the
    transport to write to; what its parser found of the answer being read (the :class:`_Answer` it is).

    A reader waits with :meth:`waiter` (None when there is something to take) and takes with
    :meth:`take`: the bytes that arrived, ``b""`` once the server closed its side, or the error the
    connection broke with. Reading from the socket pauses while more than 2 MB wait to be taken.
    """

    __slots__ = (
        "_buffered",
        "_closed",
        "_data",
        "_eof",
        "_error",
        "_lost",
        "_paused",
        "_waiter",
        "_writable",
        "_write_paused",
        "loop",
        "parser",
        "transport",
    )

    def __init__(self) -> None:
        self.status = 0  # the rest of the answer's state is made when an answer starts (next_answer)
        self.loop = asyncio.get_running_loop()
        """The event loop the connection belongs to."""
        self.transport: asyncio.Transport = None  # type: ignore[assignment]  # set by connection_made
        self._data: list[bytes] | None = None
        """What arrived and was not taken yet (None when nothing: a waiting connection keeps no list)."""
        self._buffered = 0
        self._eof = False
        self._lost = False
        self._error: BaseException | None = None
        self._paused = False
        self._write_paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self._closed: asyncio.Future[None] | None = None
        self.parser: httptools.HttpResponseParser | None = None
        """The parser of the connection's answers (made with the first answer, kept for the next:
        llhttp reads one answer after another on a kept-alive connection). It reports to its pool's
        :class:`_Feeder`, not to this object: no callbacks made per connection."""

    # ---- what the event loop calls

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._data is None:
            self._data = [data]
        else:
            self._data.append(data)
        self._buffered += len(data)
        if self._buffered > _READ_LIMIT and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def eof_received(self) -> None:
        self._eof = True
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = self._lost = True
        if exc is not None:
            self._error = exc
        self._wake()
        for future in (self._writable, self._closed):
            if future is not None and not future.done():
                future.set_result(None)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        writable = self._writable
        if writable is not None and not writable.done():
            writable.set_result(None)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    # ---- what the pool calls

    def waiter(self) -> asyncio.Future[None] | None:
        """None when :meth:`take` has something to give (bytes, the end, an error); else a future
        set when it has."""
        if self._data or self._eof:
            return None
        waiter = self._waiter = self.loop.create_future()
        return waiter

    def take(self) -> bytes:
        """The bytes received since the last take; ``b""`` once the server closed its side (and
        nothing is left); the connection's error if it broke."""
        data = self._data
        if data:
            taken = data[0] if len(data) == 1 else b"".join(data)
            self._data = None
            self._buffered = 0
            if self._paused:
                self._paused = False
                self.transport.resume_reading()
            return taken
        if self._error is not None:
            raise self._error
        return b""

    def at_eof(self) -> bool:
        """True when the server closed its side and every byte it sent was taken."""
        return self._eof and not self._data

    def write(self, data: bytes) -> None:
        """Hand ``data`` to the transport (it sends what the kernel takes and keeps the rest)."""
        self.transport.write(data)

    async def drain(self) -> None:
        """Wait while the transport holds more than its high-water mark; an error once the connection is lost."""
        while True:
            if self._lost:
                raise self._error if self._error is not None else ConnectionResetError("Connection lost")
            if not self._write_paused:
                return
            writable = self._writable = self.loop.create_future()
            await writable

    def is_closing(self) -> bool:
        """True once the connection is closed or closing."""
        return self.transport.is_closing()

    def close(self) -> None:
        """Close the connection (what was written is still sent)."""
        self.transport.close()

    def abort(self) -> None:
        """Close the connection now, dropping whatever is still buffered for sending."""
        self.transport.abort()

    async def wait_closed(self) -> None:
        """Wait until the connection is lost (after :meth:`close`)."""
        if not self._lost:
            if self._closed is None:
                self._closed = self.loop.create_future()
            await self._closed

    def get_extra_info(self, name: str, default: object = None) -> object:
        """The transport's ``get_extra_info``."""
        return self.transport.get_extra_info(name, default)


class TransportError(Exception):
    """The exchange failed below HTTP: no connection, a reset, a body cut short."""

    @classmethod
    def caused_by(cls, exc: BaseException) -> TransportError:
        """This error for ``exc`` (an SDK's or its HTTP library's), chained to it."""
        error = cls(str(exc) or type(exc).__name__)
        error.__cause__ = exc
        return error

    @staticmethod
    def timeout(exc: BaseException) -> TransportError:
        """The timeout error for an SDK's: :class:`ConnectTimeout` when it came while connecting (its
        HTTP library's ``ConnectTimeout`` in the chain: httpx, httpcore), else :class:`ReadTimeout`."""
        seen: BaseException | None = exc
        while seen is not None:
            if type(seen).__name__ == "ConnectTimeout":
                return ConnectTimeout.caused_by(exc)
            seen = seen.__cause__ or seen.__context__
        return ReadTimeout.caused_by(exc)


class ConnectTimeout(TransportError):
    """The server did not accept the connection within the connect timeout."""


class ReadTimeout(TransportError):
    """The server sent nothing for longer than the idle timeout."""


class WriteTimeout(TransportError):
    """The server took none of the request's bytes for longer than the idle timeout."""


class RedirectError(TransportError):
    """A redirect that is not followed: to plain HTTP from HTTPS, without a location, or one too many."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where requests go: ``base_url`` split once."""

    url: str
    """The base URL without the credentials it may carry (for messages)."""
    host: str
    port: int
    path: str
    tls: bool
    basic: str | None = None
    """The ``authorization`` header of credentials in the URL (``http://user:pass@host``), as httpx sends them."""

    @classmethod
    def parse(cls, base_url: str) -> Endpoint:
        """The endpoint of an ``http://`` or ``https://`` base URL (path kept, no trailing slash)."""
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        tls = parts.scheme == "https"
        try:
            port = parts.port or (443 if tls else 80)
        except ValueError:
            raise ValueError(f"not an http(s) URL: bad port in {base_url!r}") from None
        basic = None
        if parts.username is not None or parts.password is not None:
            pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            basic = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
            base_url = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
        return cls(base_url.rstrip("/"), parts.hostname, port, parts.path.rstrip("/"), tls, basic)

    @property
    def origin(self) -> tuple[bool, str, int]:
        """Scheme, host and port: what a redirect must keep for the credentials to follow it."""
        return self.tls, self.host, self.port

    @property
    def authority(self) -> str:
        """The ``host`` header value."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.tls else 80
        return host if self.port == default else f"{host}:{self.port}"


class _Feeder:
    """Feeds a pool's parsers and takes what they report for the answer being fed.

    llhttp (through ``httptools``) reports to callbacks it looks up once, when a parser is made;
    looked up on an object they would be bound methods made per parser, four tracked objects for
    every connection open. A pool's parsers report to its :attr:`sink`, whose callbacks are this
    feeder's, bound once; feeding is synchronous and a pool is used by one event loop, so the feeder
    knows which answer it is feeding. No callback per header: a real server sends twenty or so, and
    a call into Python for each cost more than the rest of the head. The head is kept as the bytes it
    came in (:func:`_final_head`) and read for the few headers the transport needs.
    """

    __slots__ = ("answer", "parser")

    def __init__(self) -> None:
        self.answer = _NO_ANSWER
        """The answer being fed (a stand-in between feeds: no connection kept alive from here)."""
        self.parser: httptools.HttpResponseParser | None = None

    @property
    def sink(self) -> SimpleNamespace:
        """What the pool's parsers are made with: this feeder's callbacks (keep it with the feeder
        rather than on it: the callbacks refer to the feeder, and a link back would be a cycle)."""
        return SimpleNamespace(
            on_message_begin=self.on_message_begin,
            on_headers_complete=self.on_headers_complete,
            on_body=self.on_body,
            on_message_complete=self.on_message_complete,
        )

    def feed(self, parser: httptools.HttpResponseParser, answer: _Answer, data: bytes) -> None:
        """Parse ``data``, the next bytes of ``answer`` (``parser``'s connection's)."""
        self.answer, self.parser = answer, parser
        try:
            parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            if not isinstance(exc.__context__, _Extra):
                raise
            answer.keep = False
        except httptools.HttpParserError as exc:
            raise TransportError(f"the server sent a malformed response: {exc}") from None
        finally:
            self.answer, self.parser = _NO_ANSWER, None

    def on_message_begin(self) -> None:
        answer = self.answer
        if answer.status >= 200:  # bytes after the answer: nothing may follow on this connection
            raise _Extra
        answer.complete = False

    def on_headers_complete(self) -> None:
        answer, parser = self.answer, self.parser
        assert parser is not None
        answer.status = parser.get_status_code()
        answer.keep = parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self.answer.body.append(body)

    def on_message_complete(self) -> None:
        self.answer.complete = True


_NO_ANSWER = _Answer()
_NO_BODY: list[bytes] = []
"""An idle connection's body (never fed: each answer starts with a new list, :meth:`_Answer.next_answer`)."""


def _final_head(data: bytes) -> bytes:
    """The head of the answer (its status line and header lines, each ending with CRLF, without the
    blank line) from ``data``, the bytes of the answer whose head llhttp found complete: past any 1xx
    answer's head (a 1xx has no body) and any blank lines before the status line (llhttp skips them)."""
    start = 0
    while True:
        while data[start : start + 1] in (b"\r", b"\n"):
            start += 1
        end = data.find(b"\r\n\r\n", start)  # llhttp takes only CRLF line ends, and no folded lines
        if data[start + 9 : start + 10] != b"1":  # "HTTP/1.1 1xx": an informational answer came first
            return data[start : end + 2]
        start = end + 4


class _Extra(Exception):
    """Bytes came after the end of the answer."""


class Response:
    """Status and headers of one response; read the body once with :meth:`read` or :meth:`iter_bytes`.

    The framing (``content-length``, chunked, up to the end of the connection; none for 1xx,
    204 and 304) is llhttp's, the parser Node.js uses, through ``httptools``.
    """

    __slots__ = ("_body", "_conn", "_decoder", "_head", "_headers", "_pool", "plain_length", "status")

    def __init__(self, pool: Pool, conn: Connection, head: bytes) -> None:
        self.status = conn.status
        self._pool = pool
        self._conn: Connection | None = conn
        """The connection while the body is still coming (what its parser found is this answer's until then)."""
        self._head = head
        """The head as it came (:func:`_final_head`): the headers are read from it when asked for."""
        self._body = conn.body
        """The pieces of the body parsed and not yet read."""
        self._headers: dict[str, str] | None = None
        self._decoder: _Decoder | None = None
        # The two headers this client needs, found in the head lowercased (llhttp checked its lines:
        # CRLF ends, no folding, no blank before the colon, one content-length at most).
        low = head.lower()
        at = low.find(b"\ncontent-encoding:")
        while at >= 0:
            encoding = low[at + 18 : low.find(b"\r", at)].strip()
            if encoding and encoding != b"identity":
                self._decoder = _decoder(encoding)
            at = low.find(b"\ncontent-encoding:", at + 18)
        length = -1
        if self._decoder is None:
            at = low.find(b"\ncontent-length:")
            if at >= 0:
                length = int(low[at + 16 : low.find(b"\r", at)])  # llhttp checked it is a number
        self.plain_length = length
        """The body's length as it arrives when the server gave it and the body is not encoded, else -1."""
        if conn.complete:
            self._done()

    @property
    def headers(self) -> dict[str, str]:
        """The response headers, names lowercased (repeated headers joined with ``", "``)."""
        if self._headers is None:
            headers: dict[str, str] = {}
            for line in self._head.split(b"\r\n")[1:-1]:  # the status line first, the empty rest last
                raw_name, _, raw_value = line.partition(b":")
                name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1").strip()
                headers[name] = f"{headers[name]}, {value}" if name in headers else value
            self._headers = headers
        return self._headers

    async def read(self) -> bytes:
        """The whole body (the connection goes back to the pool); the idle timeout holds for each read."""
        body = self._body
        if self._conn is None and body:  # the usual case: the whole body came with the head
            data = body[0] if len(body) == 1 else b"".join(body)
            body.clear()
        else:
            data = await self._raw_piece()
        if self._conn is not None:
            pieces = [data]
            while piece := await self._raw_piece():
                pieces.append(piece)
            data = b"".join(pieces)
        decoder = self._decoder
        if decoder is None:
            return data
        try:
            return decoder.decompress(data) + decoder.flush()
        except zlib.error as exc:
            raise _undecodable(exc) from None

    async def piece(self) -> bytes:
        """The next piece of the body as it arrives, decoded; ``b""`` once the body is all read.

        The connection goes back to the pool as soon as the body's last byte is read. A method
        rather than an async generator: a streamed answer asks for a few pieces, and a generator
        costs more than the pieces (finalizer hooks, a frame on every resume).
        """
        if self._decoder is None:  # the usual case, without a second coroutine when nothing is to wait for
            body = self._body
            if body:
                data = body[0] if len(body) == 1 else b"".join(body)
                body.clear()
                return data
            if self._conn is None:
                return b""
        while data := await self._raw_piece():
            if self._decoder is None:
                return data
            try:
                if data := self._decoder.decompress(data):
                    return data
            except zlib.error as exc:
                raise _undecodable(exc) from None
        if self._decoder is not None:
            decoder, self._decoder = self._decoder, None
            try:
                return decoder.flush()
            except zlib.error as exc:
                raise _undecodable(exc) from None
        return b""

    async def iter_bytes(self) -> AsyncIterator[bytes]:
        """The body as it arrives, decoded."""
        while piece := await self.piece():
            yield piece

    def close(self) -> None:
        """Drop the connection without reading the rest (a stream abandoned half way)."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            self._pool.release(conn, False)

    async def _raw_piece(self) -> bytes:
        """The next bytes of the body as they came off the wire, framing removed; ``b""`` at its end."""
        body = self._body
        while True:
            if body:
                taken = body[0] if len(body) == 1 else b"".join(body)
                body.clear()
                return taken
            conn = self._conn
            if conn is None:
                return b""
            try:  # a failure or a cancel half way: the connection cannot be reused
                data = await self._pool.next_bytes(conn)
                if not data:
                    self._end(conn)
                    continue
                assert conn.parser is not None
                self._pool.feeder.feed(conn.parser, conn, data)
                if conn.complete:
                    self._done()  # back in the pool before the caller even looks at the bytes
                elif not body:
                    conn.idle += len(data)
                    if conn.idle > _MAX_HEAD:  # chunk lines, extensions or trailers without end
                        raise TransportError(
                            "the server sent too many bytes that are not the body (chunk lines, trailers)"
                        )
                else:
                    conn.idle = 0
            except BaseException:
                self.close()
                raise

    def _end(self, conn: Connection) -> None:
        """The server closed the connection: the end of a body framed by it, else a body cut short."""
        headers = self.headers
        if conn.complete or conn.keep or "content-length" in headers or "transfer-encoding" in headers:
            raise TransportError("the server closed the connection before the body was complete")
        conn.complete = True
        self._done()

    def _done(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.body = _NO_BODY  # the list is this response's: the connection keeps none while idle
            self._pool.release(conn, conn.keep)


class _Decoder(Protocol):
    """What :func:`zlib.decompressobj` returns (its type is private)."""

    def decompress(self, data: bytes, /) -> bytes: ...

    def flush(self) -> bytes: ...


def _decoder(encoding: bytes) -> _Decoder:
    if encoding in (b"gzip", b"x-gzip"):
        return zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip, or a zlib stream labelled gzip
    if encoding == b"deflate":
        return _Deflate()
    name = encoding[:40].decode("latin-1")
    raise TransportError(f"the server sent a body encoded as {name!r}, which is not supported")


class _Deflate:
    """``deflate`` as servers send it: a zlib stream, or (as some do) a raw deflate stream without a header."""

    __slots__ = ("_inflate", "_started")

    def __init__(self) -> None:
        self._inflate = zlib.decompressobj()
        self._started = False

    def decompress(self, data: bytes) -> bytes:
        if self._started:
            return self._inflate.decompress(data)
        self._started = True
        try:
            return self._inflate.decompress(data)
        except zlib.error:
            self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._inflate.decompress(data)

    def flush(self) -> bytes:
        return self._inflate.flush()


def _undecodable(exc: zlib.error) -> TransportError:
    return TransportError(f"the server sent a compressed body that does not decompress: {exc}")


class Recovery(Protocol):
    """What a caller of :meth:`Pool.request` does with a first outcome that is not a success."""

    def recover(self, pool: Pool, path: str, body: bytes, outcome: Response | TransportError) -> Awaitable[Response]:
        """The successful response to the request of ``body`` to ``path`` on ``pool``, whose first
        attempt ended with ``outcome`` (an answer with a status of 300 or more, or the error): after
        the retries and redirects the caller makes; else the caller's error."""
        ...


class Pool:
    """Keep-alive connections to one endpoint, for the event loop that opens them.

    At most ``max_connections`` are open at once; a request that finds none idle and the pool full
    waits, in arrival order, for one to come back. A connection that cannot be opened for lack of
    file descriptors waits the same way while the pool has others open.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        connect_timeout: float | None,
        read_timeout: float | None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        connector: Connector | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.connector = connector
        """Opens a connection instead of the network (an in-memory stand-in in tests: :mod:`.memory`)."""
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_connections = max_connections
        self._idle: list[Connection] = []
        self._open_count = 0
        """Connections open: idle, or lent to a response."""
        self._waiters: deque[asyncio.Future[Connection | None]] = deque()
        self._ssl: ssl.SSLContext | None = tls_context() if endpoint.tls else None
        self._addresses = Addresses(endpoint.host, endpoint.port)
        self._elsewhere: dict[tuple[bool, str, int], Pool] = {}
        self._expiry: Expiry | None = None
        """The idle timeout of the reads (made on the first wait, on the loop of the connections)."""
        self.feeder = _Feeder()
        """Feeds the parsers of the pool's connections (see :class:`_Feeder`)."""
        self._sink = self.feeder.sink

    def elsewhere(self, endpoint: Endpoint) -> Pool:
        """The pool, with this one's settings and loop, for another origin (a redirect's)."""
        if endpoint.origin == self.endpoint.origin:
            return self
        pool = self._elsewhere.get(endpoint.origin)
        if pool is None:
            pool = self._elsewhere[endpoint.origin] = Pool(
                endpoint,
                connect_timeout=self.connect_timeout,
                read_timeout=self.read_timeout,
                max_connections=self.max_connections,
                connector=self.connector,
            )
        return pool

    async def next_bytes(self, conn: Connection) -> bytes:
        """The next bytes ``conn`` received (``b""`` once the server closed it), waiting at most the
        idle timeout: :class:`ReadTimeout` after it, :class:`TransportError` when the connection broke."""
        try:
            waiter = self._watched(conn)
            if waiter is not None:  # else the bytes (or the end) are there already: no wait, no deadline
                await waiter
            return conn.take()
        except _BROKEN as exc:
            raise self._failure(exc) from (None if isinstance(exc, TimeoutError) else exc)

    def _watched(self, conn: Connection) -> asyncio.Future[None] | None:
        """``conn``'s waiter (None when there is something to take), failing with ``TimeoutError``
        unless it is done within the idle timeout."""
        waiter = conn.waiter()
        if waiter is None or self.read_timeout is None:
            return waiter
        expiry = self._expiry
        if expiry is None or expiry.loop is not conn.loop:
            expiry = self._expiry = Expiry(conn.loop, self.read_timeout)
        expiry.watch(waiter)
        return waiter

    def _failure(self, exc: BaseException) -> TransportError:
        """The transport error for what a read raised."""
        if isinstance(exc, TimeoutError):
            return ReadTimeout(f"no data from {self.endpoint.url} for {self.read_timeout:g} s")
        return TransportError(f"the connection to {self.endpoint.url} broke: {exc or type(exc).__name__}")

    @overload
    async def request(self, head: bytes, body: bytes, recovery: Recovery | None = None, path: str = "") -> Response: ...

    @overload
    async def request(
        self,
        head: bytes,
        body: bytes,
        recovery: Recovery | None,
        path: str,
        finish: Callable[[Response], Awaitable[_T]],
    ) -> _T: ...

    async def request(  # noqa: C901 - one coroutine on purpose (see the comment below)
        self,
        head: bytes,
        body: bytes,
        recovery: Recovery | None = None,
        path: str = "",
        finish: Callable[[Response], Awaitable[Any]] | None = None,
    ) -> Any:
        """Send one request (``head`` ends with the blank line) and read the response's status and headers.

        A reused connection that turns out closed or reset before any answer came is a stale one:
        the request goes again on another, as the SDK's HTTP stack does. With ``recovery``, an answer
        that is not a success (a status of 300 or more) or a :class:`TransportError` goes to its
        :meth:`~Recovery.recover` (the caller's retries and redirects, for the request to ``path``),
        and what that gives back is the response. With ``finish``, the response's ``finish(response)``
        (its body read) is what the request gives.
        """
        # One coroutine from the connection to the answer, the caller's retries included when one
        # is needed, and its body: at a thousand requests in flight every frame more is an object
        # more that waits (and that the collector walks), and a level every resume passes through.
        while True:
            found = self._reuse()  # the usual case, without a coroutine to get a connection
            if found is not None:
                conn, fresh = found, False
            else:
                conn, fresh = await self._acquire()
            try:
                if len(body) < 65536:
                    conn.write(head + body)
                else:
                    conn.write(head)
                    conn.write(body)
                    await self._drain(conn)
                waiter = self._watched(conn)
                if waiter is not None:  # the usual case: the answer is still to come
                    try:
                        await waiter
                    except TimeoutError as exc:
                        raise self._failure(exc) from None
                data = self._answer_starts(conn)
                if conn.status < 200:  # the head is not all there (or a 1xx came first)
                    data = await self._rest_of_head(conn, data)
                response = Response(self, conn, _final_head(data))
            except TransportError as exc:
                self._drop(conn, failed=True)
                if _stale(exc, fresh):
                    continue  # a stale connection: the request goes again on another
                if recovery is None:
                    raise
                outcome: Response | TransportError = exc  # recovered outside the handler: no chained context
            except BaseException:
                self._drop(conn, failed=True)  # cancelled or failed mid-exchange: the connection's state is unknown
                raise
            else:
                if recovery is None or response.status < 300:
                    break
                outcome = response
            response = await recovery.recover(self, path, body, outcome)
            break
        return response if finish is None else await finish(response)

    def _answer_starts(self, conn: Connection) -> bytes:
        """The first bytes of the answer, fed to the connection's parser."""
        try:
            data = conn.take()
        except _BROKEN as exc:
            raise self._failure(exc) from exc
        # The parser is made once the first answer starts (a thousand requests waiting for their
        # first answers hold no parser each), then kept for the connection's next answers.
        parser = conn.parser
        if parser is None:
            parser = conn.parser = httptools.HttpResponseParser(self._sink)
        conn.next_answer()
        if data:
            self.feeder.feed(parser, conn, data)
        return data

    def _reuse(self) -> Connection | None:
        """An idle connection still open, if there is one (the closed ones found are dropped)."""
        idle = self._idle
        while idle:
            conn = idle.pop()
            if not (conn.at_eof() or conn.is_closing()):
                return conn
            self._drop(conn)
        return None

    async def _acquire(self) -> tuple[Connection, bool]:
        """A connection (idle, else new, else the next one released) and whether it is new."""
        while True:
            conn = self._reuse()
            if conn is not None:
                return conn, False
            if self._open_count < self.max_connections:
                self._open_count += 1
                try:
                    return await self._open(), True
                except _NoDescriptor as exc:
                    self._open_count -= 1
                    if not self._open_count:  # nothing of ours to wait for
                        raise exc.error from None
                except BaseException:
                    self._open_count -= 1
                    self._wake()
                    raise
            handed = await self._wait()
            if handed is not None:
                return handed, False

    async def _wait(self) -> Connection | None:
        """Wait in line for a released connection (or None: room to open one)."""
        waiter: asyncio.Future[Connection | None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # handed over as we were cancelled: pass it on
                conn = waiter.result()
                if conn is None:
                    self._wake()
                else:
                    self.release(conn, True)
            raise

    def _wake(self) -> None:
        """Tell the first waiter there is room for one more connection."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def release(self, conn: Connection, reusable: bool) -> None:
        """Take a connection back (``reusable`` when its response was read to the end)."""
        if not reusable or conn.at_eof():
            self._drop(conn)
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        self._idle.append(conn)

    def _drop(self, conn: Connection, *, failed: bool = False) -> None:
        if failed:  # whatever is still buffered for sending is dropped with it, now
            conn.abort()
        else:
            conn.close()
        self._open_count -= 1
        self._wake()

    def __del__(self) -> None:
        # A model dropped without aclose(): close its sockets now (closing a transport needs no
        # await), instead of leaving each to warn "unclosed" when it is collected.
        if hasattr(self, "_elsewhere"):  # not when __init__ failed
            self.abandon()

    def abandon(self) -> None:
        """Close the idle connections without waiting (their event loop may be closed already)."""
        idle = self._idle[:]
        self._idle.clear()
        for pool in self._elsewhere.values():
            pool.abandon()
        for conn in idle:
            _close_now(conn)

    async def aclose(self) -> None:
        """Close every idle connection."""
        idle = self._idle[:]
        self._idle.clear()
        self._open_count -= len(idle)
        for pool in self._elsewhere.values():
            await pool.aclose()
        for conn in idle:
            conn.close()
        for conn in idle:
            try:
                await conn.wait_closed()
            except (OSError, asyncio.CancelledError):
                pass

    async def _open(self) -> Connection:
        endpoint = self.endpoint
        if self.connector is not None:
            opening = self.connector(endpoint)
        else:
            opening = connect(self._addresses, Connection, self._ssl)
        try:
            if self.connect_timeout is None:
                return await opening
            with deadline(self.connect_timeout):  # a thousand conversations may open at once
                return await opening
        except TimeoutError:
            raise ConnectTimeout(f"could not connect to {endpoint.url} within {self.connect_timeout:g} s") from None
        except OSError as exc:
            error = TransportError(f"could not connect to {endpoint.url}: {_reason(exc)}")
            if exc.errno in (errno.EMFILE, errno.ENFILE):
                raise _NoDescriptor(error) from exc
            raise error from exc

    async def _rest_of_head(self, conn: Connection, data: bytes) -> bytes:
        """Read until the answer's head is complete; ``data``, the first bytes, were fed already.
        Every byte received so far, joined."""
        received = [data]
        size = len(data)
        while True:
            if not data:  # the server closed the connection
                raise self._cut(size)
            if size > _MAX_HEAD and not conn.status:
                raise TransportError("the response head is too long")
            if conn.status >= 200:  # a 1xx informational answer is skipped: the real one follows
                return b"".join(received)
            data = await self.next_bytes(conn)
            received.append(data)
            size += len(data)
            if data:
                assert conn.parser is not None
                self.feeder.feed(conn.parser, conn, data)

    def _cut(self, received: int) -> TransportError:
        """The error for a connection the server closed before the response head was complete."""
        partial = b"-" if received else b""
        error = self._failure(asyncio.IncompleteReadError(partial, None))
        error.__cause__ = asyncio.IncompleteReadError(partial, None)
        error.__suppress_context__ = True
        return error

    async def _drain(self, conn: Connection) -> None:
        """Wait until the kernel took what was written, for at most the idle timeout without progress."""
        try:
            if self.read_timeout is None:
                await conn.drain()
            else:
                with deadline(self.read_timeout):
                    await conn.drain()
        except TimeoutError:
            raise WriteTimeout(
                f"{self.endpoint.url} took none of the request for {self.read_timeout:g} s (it stopped reading)"
            ) from None
        except OSError as exc:
            raise TransportError(f"the connection to {self.endpoint.url} broke while sending: {_reason(exc)}") from exc


class _NoDescriptor(Exception):
    """No file descriptor left for a new connection; ``error`` is what to raise if waiting cannot help."""

    def __init__(self, error: TransportError) -> None:
        self.error = error


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def _close_now(conn: Connection) -> None:
    """Close a connection whose event loop may be gone (then its socket is closed directly)."""
    try:
        conn.close()
    except RuntimeError:  # its event loop is closed: nothing will run the transport's close
        sock = conn.get_extra_info("socket")
        if sock is not None:
            sock.shutdown(2)  # type: ignore[attr-defined]  # the peer sees the end now; the descriptor goes with the transport


@functools.cache
def _tls_context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    if cafile or capath:  # only what the variable names, as httpx: not the system store as well
        return ssl.create_default_context(cafile=cafile or None, capath=None if cafile else capath)
    if sys.platform in ("win32", "darwin"):
        return ssl.create_default_context()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    paths = ssl.get_default_verify_paths()  # compiled-in locations: the variables were handled above
    found_file = paths.openssl_cafile if os.path.isfile(paths.openssl_cafile) else None
    found_dir = paths.openssl_capath if os.path.isdir(paths.openssl_capath) else None
    if found_file or found_dir:
        context.load_verify_locations(found_file, found_dir)
    return context


def tls_context() -> ssl.SSLContext:
    """The TLS client context the SDKs' HTTP stack builds: only ``SSL_CERT_FILE`` when it is set,
    else only ``SSL_CERT_DIR``, else the system's trust store; hostnames checked."""
    return _tls_context(os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None)


_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]|^[ \t]|[ \t]$")


def check_headers(headers: Mapping[str, str], secret: str | None = None) -> None:
    """Refuse header names and values HTTP does not allow (a line break would end the header, and
    with it the request, early), naming the header but never showing its value."""
    for name, value in headers.items():
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise ValueError(f"header name {name!r} is not a valid HTTP header name")
        if not isinstance(value, str):
            raise ValueError(f"the value of header {name!r} is a {type(value).__name__}, not a str")
        found = _BAD_VALUE.search(value)
        if found is not None:
            what = "a line break" if found.group() in "\r\n" else "a control character or blank at an end"
            whose = "the API key" if secret and secret in value else f"the value of header {name!r}"
            raise ValueError(
                f"{whose} contains {what} (the value is not shown); HTTP does not allow it"
                + (": a key read from a file keeps its trailing newline, strip it" if found.group() in "\r\n" else "")
            )


def _stale(exc: TransportError, fresh: bool) -> bool:
    """True when ``exc`` says a reused (not ``fresh``) connection was closed or reset before any answer came."""
    if fresh:
        return False
    cause = exc.__cause__
    if isinstance(cause, asyncio.IncompleteReadError):
        return not cause.partial
    return isinstance(cause, ConnectionError) and not isinstance(exc, ReadTimeout)
