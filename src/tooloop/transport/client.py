"""JSON POST and SSE streams for every provider, on the lean HTTP stack (:mod:`.http`).

A :class:`Client` sends ``POST {base_url}{path}`` with a JSON body and the provider's fixed
headers (its key, version, user agent), retries as :mod:`.retry` says, and hands back the
successful :class:`~.http.Response` (a plain answer read with :meth:`Client.post_json`, a stream
decoded with :mod:`.sse`). Timeouts: connect, and idle (the longest wait for the next bytes).

Failures are the transport's few errors, whichever path reported them (an SDK fallback translates
its own exceptions into the same ones): :class:`~.http.TransportError` (and its
:class:`~.http.ReadTimeout`, :class:`~.http.ConnectTimeout`) below HTTP, :class:`StatusError` for an
error status, :class:`StreamError` for an ``error`` object inside a 200 stream.
Redirects 307 and 308 are followed (same method and body, at most :data:`MAX_REDIRECTS`, never from
https down to http; the key goes along only where httpx would send it); credentials in the base
URL are sent as basic auth. A provider reads
their bodies; the one error table (``tooloop.models.error_table``) classifies them.

JSON goes out through ``orjson`` when it is installed (the standard library otherwise); answers are read
with ``msgspec``, which keeps integers of any size exact.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, Protocol, TypeVar, overload
from urllib.parse import urljoin, urlsplit

import msgspec

from .http import DEFAULT_MAX_CONNECTIONS, Connector, Endpoint, Pool, RedirectError, Response, TransportError
from .perloop import PerLoop
from .retry import RetryPolicy, retry_after

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is part of the provider extras
    orjson = None  # type: ignore[assignment]

__all__ = [
    "Channel",
    "Client",
    "StatusError",
    "StreamError",
    "UnreadableError",
    "dumps",
    "fast_loads",
    "lean_eligible",
    "loads",
]


_T = TypeVar("_T")


def dumps(body: Any) -> bytes:
    """``body`` as compact UTF-8 JSON (bytes of its exact size)."""
    if orjson is not None:
        try:
            # A copy: orjson's bytes keep the buffer it wrote into, about ten times the JSON's
            # length (4 KB for 300 bytes, 128 KB for 10 KB), and a request's body is held until
            # its answer came: at a thousand requests in flight that was most of the peak memory.
            return memoryview(orjson.dumps(body, default=_default)).tobytes()
        except TypeError:  # e.g. an int beyond 64 bits: the standard library takes any size
            pass
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=_default).encode()


def loads(data: bytes) -> Any:
    """Parse JSON bytes (``json.JSONDecodeError`` on bad input); integers of any size stay exact."""
    # msgspec reads integers of any size exactly (orjson reads those beyond 64 bits as floats, and
    # a tool's arguments are JSON in Anthropic's and Gemini's bodies, not text), so no pass over the
    # bytes looking for long digit runs first.
    try:
        return _decode(data)
    except (ValueError, RecursionError):  # msgspec.DecodeError is a ValueError, as is bad UTF-8
        # e.g. half a surrogate pair, which servers that escape non-ASCII may split across events;
        # a number beyond a float's range; nesting deeper than the interpreter's recursion limit
        return _second_chance(data)


_decode: Callable[[bytes], Any] = msgspec.json.Decoder().decode


def _second_chance(data: bytes) -> Any:
    """:func:`loads` for what msgspec refuses: orjson (deeper nesting) on what has no long integer, else
    the standard library, which reads what the other two refuse (lone surrogates, ``NaN``, ``1e400``)."""
    if orjson is not None and (_DIGIT_RUN not in data.translate(_DIGITS) or re.search(_LONG_INTEGER, data) is None):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)


_DIGITS = b" " * 48 + b"0" * 10 + b" " * 198
"""Each byte as :func:`_second_chance` looks for digit runs: a digit as ``0``, any other byte as a space."""
_DIGIT_RUN = b"0" * 19
_LONG_INTEGER = rb"(?<![0-9.])[0-9]{19}"  # compiled on first use (rare), not at import


fast_loads: Callable[[bytes], Any] = orjson.loads if orjson is not None else json.loads
"""The fastest JSON parser at hand, without :func:`loads`'s second chance (a ``ValueError`` on bad input)."""


def _default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def lean_eligible(base_url: str) -> bool:
    """True when the lean path can reach ``base_url`` the way the SDK would: http(s), no proxy set for it."""
    try:
        endpoint = Endpoint.parse(base_url)
    except ValueError:
        return False
    if not any(name[-6:].lower() == "_proxy" for name in os.environ):
        return True  # no proxy variable at all: spare the import of urllib.request (~40 ms)
    import urllib.request

    proxies = urllib.request.getproxies_environment()
    scheme = "https" if endpoint.tls else "http"
    if not (proxies.get(scheme) or proxies.get("all")):
        return True
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    return bool(bypass(endpoint.host, proxies))


class StatusError(Exception):
    """The server answered with an error status.

    ``document`` is the whole body (parsed JSON, else its text, None when empty); ``body`` its
    ``error`` object when it has one (as the SDKs keep it), else the document.
    """

    def __init__(
        self, status: int, headers: Mapping[str, str] | None, document: object, message: str | None = None
    ) -> None:
        error = document.get("error", document) if isinstance(document, dict) else None
        if message is None:
            detail = error.get("message") if isinstance(error, dict) else None
            message = f"Error code: {status}"
            if isinstance(detail, str) and detail:
                message += f" - {detail}"
        super().__init__(message)
        self.status = status
        self.headers = headers
        self.document = document
        self.body = error if error is not None else document
        self.message = message

    @classmethod
    def read(cls, status: int, headers: Mapping[str, str], data: bytes) -> StatusError:
        """The error for an error response whose body is ``data``."""
        text = data.decode("utf-8", "replace").strip()
        document: object = text or None
        try:
            document = loads(data) if text else None
        except ValueError:
            pass
        return cls(status, headers, document)


class StreamError(Exception):
    """An ``error`` object inside a 200 stream (``body``), with its message when it has one."""

    def __init__(self, body: object, *, status: int | None = None) -> None:
        message = body.get("message") if isinstance(body, dict) else None
        self.message = message if isinstance(message, str) and message else "An error occurred during streaming"
        super().__init__(self.message)
        self.body = body
        self.status = status
        """The HTTP-like status the error object carries (Google's ``code``), if any."""
        self.headers: Mapping[str, str] | None = None


class UnreadableError(ValueError):
    """An answer that is JSON but not in the shape the API sends (an SDK fallback's validation failure)."""


Translate = Callable[[Exception], Exception | None]
"""An SDK fallback's translation of its SDK's exceptions into the transport's errors (None: not the SDK's)."""


class Channel(Protocol):
    """The face an adapter sends through: the lean :class:`Client`, or an SDK fallback with the same
    members (each provider's ``sdk.py``), chosen when the model is made; the adapter never asks which.

    A provider's two channels add the same request methods (``post_json``, ``post_stream``...):
    the lean one wraps :meth:`Client.post`'s response in the provider's stream reader, an SDK's
    hands out its SDK's stream with the same members.
    """

    @property
    def translate(self) -> Translate | None:
        """None on the lean path; an SDK fallback's translation of its exceptions."""
        ...

    @property
    def base_url(self) -> str:
        """The URL requests go to, written as the SDKs write it."""
        ...

    @property
    def attempts(self) -> int:
        """Requests one call may make: the retries plus the first."""
        ...

    @property
    def read_timeout(self) -> float | None:
        """Seconds without a byte before a request or stream fails."""
        ...

    @property
    def clients(self) -> PerLoop[Any]:
        """The connection pools (or SDK clients), one per event loop."""
        ...

    def encode(self, body: Any) -> Any:
        """``body`` as it is sent (JSON bytes on the lean path, so the dicts can go at once)."""
        ...

    async def aclose(self) -> None:
        """Close every connection (or client) on every loop."""
        ...


class Client:
    """``POST {base_url}{path}`` with a JSON body, answered with JSON or an SSE stream; one pool per event loop.

    ``attempt_header`` names a header that carries the retry count (the Stainless SDKs send
    ``x-stainless-retry-count``); ``retry`` is the policy (``max_retries=0`` when the caller
    retries itself); ``connector`` opens connections instead of the network (tests:
    :class:`~.memory.MemoryTransport`).
    """

    def __init__(
        self,
        base_url: str,
        headers: Mapping[str, str],
        *,
        retry: RetryPolicy,
        connect_timeout: float | None,
        read_timeout: float | None,
        attempt_header: str | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        connector: Connector | None = None,
    ) -> None:
        self.endpoint = Endpoint.parse(base_url)
        self.retry = retry
        self.read_timeout = read_timeout
        sent = {name: value for name, value in headers.items() if name.lower() not in ("host", "content-length")}
        if self.endpoint.basic is not None:  # credentials in the URL replace any other, as with httpx
            sent = {name: value for name, value in sent.items() if name.lower() != "authorization"}
            sent["Authorization"] = self.endpoint.basic
        self._sent = sent
        self._head = _host_and_headers(self.endpoint, sent)
        self._counted = attempt_header is not None
        self._tail = (
            b"content-length: %d\r\n" + (f"{attempt_header}: %d\r\n".encode() if attempt_header else b"") + b"\r\n"
        )
        self._prefixes: dict[str, bytes] = {}

        endpoint = self.endpoint  # not self: no cycle, so a dropped client's pool closes its sockets at once

        def pool() -> Pool:
            return Pool(
                endpoint,
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
                max_connections=max_connections,
                connector=connector,
            )

        self.pools: PerLoop[Pool] = PerLoop(pool(), pool, Pool.aclose, Pool.abandon)

    translate: Translate | None = None

    @property
    def max_retries(self) -> int:
        """Retries after the first attempt."""
        return self.retry.max_retries

    @property
    def attempts(self) -> int:
        """Requests one call may make: the retries plus the first."""
        return self.retry.attempts

    @property
    def base_url(self) -> str:
        """The base URL as the SDKs write it (a path ends with ``/``)."""
        endpoint = self.endpoint
        return endpoint.url + "/" if endpoint.path else endpoint.url

    @property
    def clients(self) -> PerLoop[Pool]:
        """The connection pools, one per event loop."""
        return self.pools

    def encode(self, body: Any) -> bytes:
        """``body`` as compact JSON bytes."""
        return dumps(body)

    async def aclose(self) -> None:
        """Close every pooled connection on every loop."""
        await self.pools.aclose()

    def post_json(self, path: str, body: Any) -> Coroutine[Any, Any, Any]:
        """Send ``body`` (or JSON already encoded, as bytes); the parsed JSON answer."""
        return self._send(path, body if isinstance(body, bytes) else dumps(body), _json)

    def post_bytes(self, path: str, body: Any) -> Coroutine[Any, Any, bytes]:
        """Send ``body`` (or JSON already encoded, as bytes); the answer's body, not parsed."""
        return self._send(path, body if isinstance(body, bytes) else dumps(body), Response.read)

    def post(self, path: str, body: Any) -> Coroutine[Any, Any, Response]:
        """Send ``body`` (or JSON already encoded, as bytes), retrying as the policy says; the
        successful response, its body not yet read (a stream's events: :mod:`.sse`)."""
        return self._send(path, body if isinstance(body, bytes) else dumps(body))

    @overload
    def _send(self, path: str, body: bytes) -> Coroutine[Any, Any, Response]: ...

    @overload
    def _send(self, path: str, body: bytes, finish: Callable[[Response], Awaitable[_T]]) -> Coroutine[Any, Any, _T]: ...

    def _send(
        self, path: str, body: bytes, finish: Callable[[Response], Awaitable[Any]] | None = None
    ) -> Coroutine[Any, Any, Any]:
        """The pool's request of ``body`` to ``path``: the coroutine of the whole exchange, retries and
        redirects included (:meth:`recover`), and ``finish`` (the body read) when given. Not a coroutine
        itself, nor are the ``post`` methods: no level of theirs waits with each request."""
        tail = self._tail % ((len(body), 0) if self._counted else len(body))
        if finish is None:
            return self.pools.get().request(self._prefix(path) + tail, body, self, path)
        return self.pools.get().request(self._prefix(path) + tail, body, self, path, finish)

    async def recover(self, pool: Pool, path: str, body: bytes, outcome: Response | TransportError) -> Response:
        """The successful response to ``body`` sent to ``path`` whose first attempt ended with ``outcome``
        (an error status, a redirect, a transport failure): retried as the policy says, redirects
        followed; else the error (:class:`StatusError` for an error status)."""
        policy = self.retry
        attempt = 0
        prefix = self._prefix(path)
        hops: tuple[str, ...] = ()  # the URLs redirects led to
        while True:
            if isinstance(outcome, TransportError):
                if attempt >= policy.max_retries:
                    raise outcome
                await asyncio.sleep(policy.delay(attempt, None))
                attempt += 1
            elif outcome.status < 300:
                return outcome
            elif outcome.status in (307, 308):  # the same method and body, elsewhere
                await outcome.read()
                url = hops[-1] if hops else self.endpoint.url + "/" + path.lstrip("/")
                endpoint, prefix = self._redirect(url, outcome.headers.get("location"), len(hops))
                hops += (endpoint.url,)
                pool = pool.elsewhere(endpoint)
            else:
                data = await outcome.read()
                wait = retry_after(outcome.headers)
                if attempt >= policy.max_retries or not policy.should_retry(outcome.status, outcome.headers, wait):
                    raise StatusError.read(outcome.status, outcome.headers, data)
                await asyncio.sleep(policy.delay(attempt, wait))
                attempt += 1
            tail = self._tail % ((len(body), attempt) if self._counted else len(body))
            try:
                outcome = await pool.request(prefix + tail, body)
            except TransportError as exc:
                outcome = exc

    def _redirect(self, url: str, location: str | None, hops: int) -> tuple[Endpoint, bytes]:
        """The endpoint and request head prefix a 307/308 from ``url`` to ``location`` leads to."""
        if not location:
            raise RedirectError(f"{url} answered with a redirect without a location")
        if hops >= MAX_REDIRECTS:
            raise RedirectError(f"more than {MAX_REDIRECTS} redirects, the last from {url} to {location}")
        target = urljoin(url, location)
        try:
            endpoint = Endpoint.parse(target)
        except ValueError:
            raise RedirectError(f"{url} redirected to {location!r}, which is not an http(s) URL") from None
        if url.startswith("https:") and not endpoint.tls:
            raise RedirectError(
                f"refused a redirect from https to http ({url} to {endpoint.url}): the request would travel in clear"
            )
        sent = self._sent
        here = Endpoint.parse(url)
        if endpoint.origin != here.origin and not _upgrade(here, endpoint):
            sent = {name: value for name, value in sent.items() if name.lower() != "authorization"}
        parts = urlsplit(target)
        line = f"POST {parts.path or '/'}{'?' + parts.query if parts.query else ''} HTTP/1.1\r\n".encode()
        return endpoint, line + _host_and_headers(endpoint, sent)

    def _prefix(self, path: str) -> bytes:
        prefix = self._prefixes.get(path)
        if prefix is None:
            target = self.endpoint.path + "/" + path.lstrip("/")
            prefix = self._prefixes[path] = f"POST {target} HTTP/1.1\r\n".encode() + self._head
        return prefix


MAX_REDIRECTS = 20
"""Redirects followed for one request at most, as httpx follows."""


async def _json(response: Response) -> Any:
    return loads(await response.read())


def _host_and_headers(endpoint: Endpoint, headers: Mapping[str, str]) -> bytes:
    fixed = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return f"host: {endpoint.authority}\r\n{fixed}".encode()


def _upgrade(before: Endpoint, after: Endpoint) -> bool:
    """http to https on the same host and default ports: the credentials may follow (httpx's rule)."""
    return not before.tls and after.tls and before.host == after.host and (before.port, after.port) == (80, 443)


class SdkFallback:
    """What every SDK fallback's channel shares: its SDK clients (one per event loop), bodies as dicts.

    A provider's ``sdk.py`` subclasses it with its ``translate`` and its request methods.
    """

    translate: Translate | None = None

    def __init__(self, clients: PerLoop[Any]) -> None:
        self.clients = clients

    @property
    def base_url(self) -> str:
        """The first client's base URL."""
        return str(self.clients.first.base_url)

    def encode(self, body: Any) -> Any:
        """The body as the SDKs take it: the dicts themselves."""
        return body

    async def aclose(self) -> None:
        """Close every client this channel made."""
        await self.clients.aclose()
