"""HTTP/1.1 on asyncio streams: a keep-alive pool per endpoint, one request, its response's body.

Why it exists: an SDK's request pipeline (options models, header merging, an ``httpx`` request
and response, a connection pool that scans every connection per request) costs about ten times
the CPU of the HTTP exchange itself, and at a thousand concurrent conversations that decides how
many machines a rollout needs. This client does only what those endpoints need, on asyncio
streams: a keep-alive pool per event loop (no scan: an idle list), TLS through :mod:`ssl`,
``content-length``, chunked and close-delimited bodies, gzip/deflate, a connect timeout and an
idle timeout on every read. Auth, retries and error classes are the caller's
(:mod:`.client`); a pool is bound to the event loop that opened its connections.

Failures surface as :class:`TransportError` (connection refused, reset, cut body) and its subclass
:class:`ReadTimeout` (no bytes for the idle time) or :class:`ConnectTimeout`.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from .._deadline import deadline

__all__ = [
    "ConnectTimeout",
    "Endpoint",
    "Pool",
    "ReadTimeout",
    "Response",
    "TransportError",
]

_Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]
_STALE = (ConnectionError, asyncio.IncompleteReadError, BrokenPipeError)
_MAX_HEAD = 65536


class TransportError(Exception):
    """The exchange failed below HTTP: no connection, a reset, a body cut short."""


class ConnectTimeout(TransportError):
    """The server did not accept the connection within the connect timeout."""


class ReadTimeout(TransportError):
    """The server sent nothing for longer than the idle timeout."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where requests go: ``base_url`` split once."""

    url: str
    host: str
    port: int
    path: str
    tls: bool

    @classmethod
    def parse(cls, base_url: str) -> Endpoint:
        """The endpoint of an ``http://`` or ``https://`` base URL (path kept, no trailing slash)."""
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        tls = parts.scheme == "https"
        port = parts.port or (443 if tls else 80)
        return cls(base_url.rstrip("/"), parts.hostname, port, parts.path.rstrip("/"), tls)

    @property
    def authority(self) -> str:
        """The ``host`` header value."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.tls else 80
        return host if self.port == default else f"{host}:{self.port}"


class Response:
    """Status and headers of one response; read the body once with :meth:`read` or :meth:`iter_bytes`."""

    __slots__ = (
        "_chunks",
        "_conn",
        "_decoder",
        "_framing",
        "_head",
        "_headers",
        "_length",
        "_pool",
        "_reusable",
        "plain_length",
        "status",
    )

    def __init__(self, pool: Pool, conn: _Conn, head: bytes) -> None:
        # Only the framing is read now (from the lowercased head, without splitting it into
        # lines); the header dict is built when someone asks for it (an error, a retry).
        self.status = _status(head)
        self._head = head
        self._headers: dict[str, str] | None = None
        self._pool = pool
        self._conn: _Conn | None = conn
        self._chunks: _Chunks | None = None
        lowered = head.lower()
        # find() rather than "in": a bytes needle in bytes.__contains__ first fails as an int
        self._reusable = (_value(lowered, b"\r\nconnection:") or b"").find(b"close") < 0
        chunked = (_value(lowered, b"\r\ntransfer-encoding:") or b"").find(b"chunked") >= 0
        length = _value(lowered, b"\r\ncontent-length:")
        self._framing = "chunked" if chunked else ("length" if length is not None else "close")
        self._length = _content_length(length) if length is not None and not chunked else -1
        """With ``length`` framing, the bytes of the body still to read."""
        encoding = _value(lowered, b"\r\ncontent-encoding:")
        self._decoder = zlib.decompressobj(zlib.MAX_WBITS | 32) if encoding in (b"gzip", b"deflate") else None
        self.plain_length = self._length if self._framing == "length" and encoding is None else -1
        """The body's length as it arrives when the server gave it and the body is not encoded, else -1."""

    @property
    def headers(self) -> dict[str, str]:
        """The response headers, names lowercased (repeated headers joined with ``", "``)."""
        if self._headers is None:
            self._headers = _parse_headers(self._head)
        return self._headers

    async def read(self) -> bytes:
        """The whole body (the connection goes back to the pool)."""
        if self._framing == "length":
            assert self._conn is not None
            data = await self._pool.timed(self._conn[0].readexactly(self._length)) if self._length else b""
            self._length = 0
            self._done()
        else:
            pieces = []
            while piece := await self._raw_piece():
                pieces.append(piece)
            data = b"".join(pieces)
        return self._decoder.decompress(data) + self._decoder.flush() if self._decoder else data

    async def piece(self) -> bytes:
        """The next piece of the body as it arrives, decoded; ``b""`` once the body is all read.

        The connection goes back to the pool as soon as the body's last byte is read. A method
        rather than an async generator: a streamed answer asks for a few pieces, and a generator
        costs more than the pieces (finalizer hooks, a frame on every resume).
        """
        while data := await self._raw_piece():
            if self._decoder is None:
                return data
            if data := self._decoder.decompress(data):
                return data
        if self._decoder is not None and (rest := self._decoder.flush()):
            self._decoder = None
            return rest
        return b""

    async def iter_bytes(self) -> AsyncIterator[bytes]:
        """The body as it arrives, decoded."""
        while piece := await self.piece():
            yield piece

    def close(self) -> None:
        """Drop the connection without reading the rest (a stream abandoned half way)."""
        if self._conn is not None:
            self._conn[1].close()
            self._conn = None

    async def _raw_piece(self) -> bytes:
        """The next bytes of the body as they came off the wire, chunk framing removed; ``b""`` at its end."""
        while (conn := self._conn) is not None:
            framing = self._framing
            if framing == "length":
                if self._length <= 0:
                    self._done()
                    break
                data = await self._pool.timed(conn[0].read(min(self._length, 65536)))
                if not data:
                    raise TransportError("the server closed the connection before the body was complete")
                self._length -= len(data)
                if self._length == 0:
                    self._done()  # back in the pool before the caller even looks at the bytes
                return data
            data = await self._pool.timed(conn[0].read(65536))
            if framing == "close":
                if data:
                    return data
                self._reusable = False
                self._done()
                break
            if not data:
                raise TransportError("the server closed the connection before the body was complete")
            chunks = self._chunks
            if chunks is None:
                chunks = self._chunks = _Chunks()  # one read (and one idle timer) per arrival, not two per chunk
            piece = chunks.feed(data)
            if chunks.done:
                self._reusable = self._reusable and not chunks.extra
                self._done()
            if piece:
                return piece
        return b""

    def _done(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._pool.release(conn, self._reusable)


class _Chunks:
    """Decodes a chunked body from the bytes as they arrive; ``done`` after the last chunk and trailers."""

    __slots__ = ("_buffer", "done", "extra")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.done = False
        self.extra = False
        """Bytes came after the body (the connection is not reused)."""

    def feed(self, data: bytes) -> bytes:
        """The body bytes of the chunks ``data`` completes."""
        buffer = self._buffer
        buffer += data
        pieces = []
        pos = 0
        while True:
            end = buffer.find(b"\r\n", pos)
            if end < 0:
                _check_line(len(buffer) - pos)
                break
            size = _chunk_size(buffer[pos:end])
            if size == 0:
                last = buffer.find(b"\r\n\r\n", end)  # after the trailers, if any
                _check_line(len(buffer) - end if last < 0 else 0)
                self.done, self.extra = last >= 0, last >= 0 and len(buffer) > last + 4
                break
            start = end + 2
            if len(buffer) < start + size + 2:
                break
            pieces.append(buffer[start : start + size])
            pos = start + size + 2
        del buffer[:pos]
        return b"".join(pieces)


def _check_line(length: int) -> None:
    if length > _MAX_HEAD:
        raise TransportError("response chunk line or trailers too long")


def _chunk_size(line: bytearray) -> int:
    try:
        return int(line.split(b";", 1)[0], 16)
    except ValueError:
        raise TransportError(f"bad chunk size line {bytes(line[:40])!r}") from None


class Pool:
    """Keep-alive connections to one endpoint, for the event loop that opens them."""

    def __init__(self, endpoint: Endpoint, *, connect_timeout: float | None, read_timeout: float | None) -> None:
        self.endpoint = endpoint
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._idle: list[_Conn] = []
        self._ssl: ssl.SSLContext | None = ssl.create_default_context() if endpoint.tls else None

    async def timed(self, step: object) -> bytes:
        """Await one read step, failing with :class:`ReadTimeout` after the idle timeout."""
        try:
            if self.read_timeout is None:
                return await step  # type: ignore[misc, no-any-return]
            with deadline(self.read_timeout):
                return await step  # type: ignore[misc, no-any-return]
        except (TimeoutError, asyncio.LimitOverrunError, *_STALE) as exc:
            raise self._failure(exc) from (exc if isinstance(exc, _STALE) else None)

    def _failure(self, exc: BaseException) -> TransportError:
        """The transport error for what a read raised."""
        if isinstance(exc, TimeoutError):
            return ReadTimeout(f"no data from {self.endpoint.url} for {self.read_timeout:g} s")
        if isinstance(exc, asyncio.LimitOverrunError):
            return TransportError("response header or chunk line too long")
        return TransportError(f"the connection to {self.endpoint.url} broke: {exc or type(exc).__name__}")

    async def request(self, head: bytes, body: bytes) -> Response:
        """Send one request (``head`` ends with the blank line) and read the response's status and headers."""
        while self._idle:
            conn = self._idle.pop()
            if conn[0].at_eof() or conn[1].is_closing():
                conn[1].close()
                continue
            try:
                return await self._exchange(conn, head, body, fresh=False)
            except _Stale:
                continue  # the server closed an idle connection as we used it: take another
        return await self._exchange(await self._open(), head, body, fresh=True)

    def release(self, conn: _Conn, reusable: bool) -> None:
        """Take a connection back after its response was read to the end."""
        if reusable and not conn[0].at_eof():
            self._idle.append(conn)
        else:
            conn[1].close()

    def __del__(self) -> None:
        # A model dropped without aclose(): close its sockets now (closing a transport needs no
        # await), instead of leaving each to warn "unclosed" when it is collected.
        for _, writer in self._idle:
            try:
                writer.close()
            except RuntimeError:  # its event loop is already closed, and with it the socket
                pass

    async def aclose(self) -> None:
        """Close every idle connection."""
        idle, self._idle = self._idle, []
        for _, writer in idle:
            writer.close()
        for _, writer in idle:
            try:
                await writer.wait_closed()
            except (OSError, asyncio.CancelledError):
                pass

    async def _open(self) -> _Conn:
        endpoint = self.endpoint
        opening = asyncio.open_connection(endpoint.host, endpoint.port, ssl=self._ssl, limit=_MAX_HEAD * 16)
        try:
            if self.connect_timeout is None:
                return await opening
            with deadline(self.connect_timeout):  # a thousand conversations may open at once
                return await opening
        except TimeoutError:
            raise ConnectTimeout(f"could not connect to {endpoint.url} within {self.connect_timeout:g} s") from None
        except OSError as exc:
            raise TransportError(f"could not connect to {endpoint.url}: {exc.strerror or exc}") from exc

    async def _exchange(self, conn: _Conn, head: bytes, body: bytes, *, fresh: bool) -> Response:
        reader, writer = conn
        try:
            writer.write(head + body if len(body) < 65536 else head)
            if len(body) >= 65536:
                writer.write(body)
                await writer.drain()
            if self.read_timeout is None:
                head = await self.timed(reader.readuntil(b"\r\n\r\n"))
            else:  # the usual case, without a coroutine around the read
                try:
                    with deadline(self.read_timeout):
                        head = await reader.readuntil(b"\r\n\r\n")
                except (TimeoutError, asyncio.LimitOverrunError, *_STALE) as exc:
                    raise self._failure(exc) from (exc if isinstance(exc, _STALE) else None)
            response = Response(self, conn, head)
        except TransportError as exc:
            writer.close()
            if not fresh and _nothing_received(exc):
                raise _Stale from exc
            raise
        except BaseException:
            writer.close()  # cancelled or failed mid-exchange: the connection's state is unknown
            raise
        if response.status < 200:  # 1xx informational: the real answer follows
            return await self._exchange(conn, b"", b"", fresh=True)
        return response


def _nothing_received(exc: TransportError) -> bool:
    cause = exc.__cause__
    if isinstance(cause, asyncio.IncompleteReadError):
        return not cause.partial
    return isinstance(cause, ConnectionError) and not isinstance(exc, ReadTimeout)


class _Stale(Exception):
    """A reused keep-alive connection turned out to be closed before any answer came."""


def _status(head: bytes) -> int:
    """The status code of a response head (``HTTP/1.1 200 OK\\r\\n...``)."""
    code = head[9:12]
    if head[:5] != b"HTTP/" or head[8:9] != b" " or not code.isdigit() or head[12:13] not in (b" ", b"\r"):
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise TransportError(f"not an HTTP response: {line[:80]!r}")
        return int(parts[1])
    return int(code)


def _value(lowered: bytes, name: bytes) -> bytes | None:
    """The (first) value of header ``name`` (given as ``\\r\\nname:``) in a lowercased head."""
    start = lowered.find(name)
    if start < 0:
        return None
    start += len(name)
    return lowered[start : lowered.find(b"\r\n", start)].strip()


def _content_length(value: bytes) -> int:
    try:
        length = int(value)
    except ValueError:
        raise TransportError(f"bad content-length {value[:40]!r}") from None
    if length < 0:
        raise TransportError(f"bad content-length {value[:40]!r}")
    return length


def _parse_headers(raw: bytes) -> dict[str, str]:
    lines = raw.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            key = name.strip().lower()
            value = value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers
