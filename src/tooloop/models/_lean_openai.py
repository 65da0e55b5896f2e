"""The OpenAI-style hot endpoints on the lean transport (:mod:`._lean_http`), without the SDK.

It keeps what the SDK gives a Chat Completions request: the key as a bearer token, the
organization and project (``OPENAI_ORG_ID``, ``OPENAI_PROJECT_ID``), default headers, the base URL,
retries (``max_retries``: connection failures, timeouts, 408, 409, 429 and 5xx, obeying
``x-should-retry``; a server's ``retry-after-ms``/``retry-after`` wait of up to two minutes, else
exponential backoff from 0.5 s up to 8 s with jitter, as the SDK does) and the timeouts (connect;
idle: the longest wait for the next bytes). Failures are :class:`LeanStatusError` (an HTTP error
status, with the parsed body), :class:`LeanStreamError` (an ``error`` object inside a stream) and
the transport's :class:`~._lean_http.TransportError`; the adapter maps them through the one error
table, as it maps the SDK's exceptions. The ``openai`` package is not imported on this path.

JSON goes out through ``orjson`` when it is installed (the standard library otherwise).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from .._deadline import deadline
from ._lean_http import Endpoint, Pool, Response, SSEDecoder, TransportError
from ._openai_chunks import Chunk, chunk_from, decode, decode_each
from ._per_loop import PerLoop

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is part of the openai extra
    orjson = None  # type: ignore[assignment]

__all__ = ["LeanChunks", "LeanOpenAI", "LeanStatusError", "LeanStreamError", "dumps", "lean_eligible", "loads"]

_MAX_RETRY_AFTER = 120.0
_INITIAL_DELAY = 0.5
_MAX_DELAY = 8.0
_DRAIN_SECONDS = 0.5


def dumps(body: Any) -> bytes:
    """``body`` as compact UTF-8 JSON."""
    if orjson is not None:
        try:
            return orjson.dumps(body, default=_default)
        except TypeError:  # e.g. an int beyond 64 bits: the standard library takes any size
            pass
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=_default).encode()


def loads(data: bytes) -> Any:
    """Parse JSON bytes (``json.JSONDecodeError`` on bad input)."""
    if orjson is not None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # e.g. half a surrogate pair, which servers that escape non-ASCII may split across events
    return json.loads(data)


_loads: Callable[[bytes], Any] = orjson.loads if orjson is not None else json.loads


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
    proxies = urllib.request.getproxies_environment()
    scheme = "https" if endpoint.tls else "http"
    if not (proxies.get(scheme) or proxies.get("all")):
        return True
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    return bool(bypass(endpoint.host, proxies))


class LeanStatusError(Exception):
    """The server answered with an error status; ``body`` is its ``error`` object (else its JSON or text)."""

    def __init__(self, status: int, headers: Mapping[str, str], data: bytes) -> None:
        text = data.decode("utf-8", "replace").strip()
        body: object = text or None
        message = f"Error code: {status}"
        try:
            body = loads(data) if text else None
        except ValueError:
            pass
        error = body.get("error", body) if isinstance(body, dict) else None
        detail = error.get("message") if isinstance(error, dict) else None
        if isinstance(detail, str) and detail:
            message += f" - {detail}"
        super().__init__(message)
        self.status = status
        self.headers = headers
        self.body = error if error is not None else body  # the error object, as the SDK keeps it
        self.document = body
        """The whole body (parsed JSON, else its text), for APIs whose SDK keeps all of it."""
        self.message = message


class LeanStreamError(Exception):
    """An ``error`` object inside a 200 stream."""

    def __init__(self, error: object) -> None:
        self.message = _stream_error_message(error)
        super().__init__(self.message)
        self.body = error


class LeanOpenAI:
    """``POST {base_url}{path}`` with a JSON body, answered with JSON or an SSE stream of JSON."""

    def __init__(
        self,
        base_url: str,
        headers: Mapping[str, str],
        *,
        max_retries: int,
        connect_timeout: float | None,
        read_timeout: float | None,
    ) -> None:
        self.endpoint = Endpoint.parse(base_url)
        self.max_retries = max_retries
        sent = {name: value for name, value in headers.items() if name.lower() not in ("host", "content-length")}
        fixed = "".join(f"{name}: {value}\r\n" for name, value in sent.items())
        self._head = f"host: {self.endpoint.authority}\r\n{fixed}".encode()
        self._prefixes: dict[str, bytes] = {}

        endpoint = self.endpoint  # not self: no cycle, so a dropped client's pool closes its sockets at once

        def pool() -> Pool:
            return Pool(endpoint, connect_timeout=connect_timeout, read_timeout=read_timeout)

        self.pools: PerLoop[Pool] = PerLoop(pool(), pool, Pool.aclose)

    async def aclose(self) -> None:
        """Close every pooled connection on every loop."""
        await self.pools.aclose()

    async def post_json(self, path: str, body: Any) -> Any:
        """Send ``body`` (or JSON already encoded, as bytes); the parsed JSON answer."""
        response = await self._send(path, body if isinstance(body, bytes) else dumps(body))
        return loads(await self._read(response))

    async def post(self, path: str, body: Any) -> Response:
        """Send ``body`` (retrying as the SDK does); the successful response, its body not yet read."""
        return await self._send(path, dumps(body))

    async def stream_json(self, path: str, body: Any) -> LeanChunks:
        """Send ``body`` (or JSON already encoded, as bytes), retrying as the SDK does; the JSON
        events of the SSE answer, up to ``[DONE]``."""
        return LeanChunks(await self._send(path, body if isinstance(body, bytes) else dumps(body)))

    # -- the exchange, with the SDK's retries ---------------------------------------------------

    async def _send(self, path: str, body: bytes) -> Response:
        pool = self.pools.get()
        attempt = 0
        while True:
            head = self._prefix(path) + b"content-length: %d\r\nx-stainless-retry-count: %d\r\n\r\n" % (
                len(body),
                attempt,
            )
            try:
                response = await pool.request(head, body)
            except TransportError:
                if attempt >= self.max_retries:
                    raise
                await asyncio.sleep(_backoff(attempt, None))
                attempt += 1
                continue
            if response.status < 300:
                return response
            data = await self._read(response)
            retry_after = _retry_after(response.headers)
            if attempt >= self.max_retries or not _should_retry(response, retry_after):
                raise LeanStatusError(response.status, response.headers, data)
            await asyncio.sleep(_backoff(attempt, retry_after))
            attempt += 1

    def _prefix(self, path: str) -> bytes:
        prefix = self._prefixes.get(path)
        if prefix is None:
            target = self.endpoint.path + "/" + path.lstrip("/")
            prefix = self._prefixes[path] = f"POST {target} HTTP/1.1\r\n".encode() + self._head
        return prefix

    async def _read(self, response: Response) -> bytes:
        return await response.read()


class LeanChunks:
    """The decoded events of one SSE answer; ``done`` once its ``[DONE]`` line arrived.

    Read them with :meth:`read` (each handed to a function as it arrives, the cheaper way) or by
    iterating. An ``error`` object inside the stream raises :class:`LeanStreamError`, a broken or
    stalled connection :class:`~._lean_http.TransportError`. After ``[DONE]`` the rest of the
    body is read (for at most half a second) so the connection goes back to the pool.
    """

    def __init__(self, response: Response) -> None:
        self.done = False
        self._response = response
        self._decoder = SSEDecoder()
        self._unread = response.plain_length  # bytes of the body still to come, when known
        self._failure: Exception | None = None

    async def read(self, take: Callable[[list[Chunk]], None]) -> None:
        """Call ``take`` with the chunks of each piece of the body as it arrives, until ``[DONE]``
        or the end of the body (a list per piece: a short answer is usually one piece), decoded to
        the records of :mod:`._openai_chunks`."""
        try:
            while (events := await self._next_events(True)) is not None:
                if events:
                    take(events)
                if self.done and self._unread == 0 and self._failure is None:
                    break  # [DONE] ended the body: its connection is back in the pool, nothing to drain
        finally:
            self._response.close()

    async def __aiter__(self) -> AsyncIterator[Any]:
        """The events as JSON values (dicts), one by one: what a payload listener is shown."""
        try:
            while (events := await self._next_events(False)) is not None:
                for event in events:
                    yield event
        finally:
            self._response.close()

    async def _next_events(self, typed: bool) -> list[Any] | None:
        """The events of the next piece of the body, None after ``[DONE]`` or at its end. A failure
        found in a piece is raised on the call after the one that handed out the events before it."""
        if self._failure is not None:
            raise self._failure
        if self.done:
            await self._drain()
            return None
        piece = await self._response.piece()
        if not piece:
            return None
        events, self._failure = self._decode(piece, typed)
        return events

    def _decode(self, piece: bytes, typed: bool) -> tuple[list[Any], Exception | None]:
        """The events ``piece`` completes, and the failure that follows them (an error event, bad JSON)."""
        self._unread -= len(piece)
        usual = self._decoder.joined(piece, b",")
        if usual is None:
            return self._general(piece, typed)
        joined, count = usual
        if joined.endswith(_DONE):  # where it belongs: the last event of the body
            if joined == _DONE:
                self.done = True
                return [], None
            if joined.endswith(_LAST_DONE):
                self.done = True
                joined = joined[: -len(_LAST_DONE)]
                count -= 1
        try:  # all of them in one call; a failure is found again one by one
            if count == 1:
                events = [decode_each(joined) if typed else _loads(joined)]
            else:
                array = b"[" + joined + b"]"
                events = decode(array) if typed else _loads(array)
        except ValueError:
            return self._general(piece, typed)
        if len(events) != count:  # data that is not one JSON value each (a comma in one)
            return self._general(piece, typed)
        return _until_error(events, typed)

    def _general(self, piece: bytes, typed: bool) -> tuple[list[Any], Exception | None]:
        """:meth:`_decode` for any piece: its events up to ``[DONE]`` or the first failure."""
        self.done = False
        return self._one_by_one(self._decoder.data(piece), typed)

    def _one_by_one(self, datas: list[bytes], typed: bool) -> tuple[list[Any], Exception | None]:
        """The events of ``datas`` up to ``[DONE]`` or the first that is not a chunk (or is an
        error event), and that failure."""
        events: list[Any] = []
        for data in datas:
            if data.startswith(_DONE):
                self.done = True
                break
            try:
                events.append(_one(data, typed))
            except ValueError as exc:
                return events, exc
        return _until_error(events, typed)

    async def _drain(self) -> None:
        """Read the body to its end (at most half a second when some of it may still be on its way)."""
        response = self._response
        try:
            if self._unread == 0:  # every byte arrived: this only hands the connection back, no timer needed
                while await response.piece():
                    pass
                return
            with deadline(_DRAIN_SECONDS):
                while await response.piece():
                    pass
        except (TimeoutError, TransportError):
            pass

    async def close(self) -> None:
        """Drop the connection unless the body was read to its end (then it is back in the pool)."""
        self._response.close()


_DONE = b"[DONE]"
_LAST_DONE = b"," + _DONE


def _one(data: bytes, typed: bool) -> Any:
    """One event: a chunk record, or the JSON value when not ``typed``. What the fast decoders refuse
    and the standard library reads (a lone surrogate escape, split from its pair) is read too."""
    if not typed:
        return loads(data)
    try:
        return decode_each(data)
    except ValueError:
        return chunk_from(loads(data))


def _until_error(events: list[Any], typed: bool) -> tuple[list[Any], Exception | None]:
    if typed:
        for event in events:
            if event.error is not None:
                return _cut(events, [e.error for e in events])
        return events, None
    return _cut(events, [e.get("error") if type(e) is dict else None for e in events])


def _cut(events: list[Any], errors: list[Any]) -> tuple[list[Any], Exception | None]:
    """The events before the first with an error (not null or empty), and that error."""
    for position, error in enumerate(errors):
        if error:
            return events[:position], LeanStreamError(error)
    return events, None


def _stream_error_message(error: Any) -> str:
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message else "An error occurred during streaming"


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms``, ``retry-after`` in seconds or as a date."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / divisor
        except ValueError:
            continue
    date = headers.get("retry-after")
    parsed = email.utils.parsedate_tz(date) if date else None
    return float(email.utils.mktime_tz(parsed) - time.time()) if parsed else None


def _should_retry(response: Response, retry_after: float | None) -> bool:
    if retry_after is not None and math.isfinite(retry_after) and retry_after > _MAX_RETRY_AFTER:
        return False
    verdict = response.headers.get("x-should-retry")
    if verdict in ("true", "false"):
        return verdict == "true"
    return response.status in (408, 409, 429) or response.status >= 500


def _backoff(attempt: int, retry_after: float | None) -> float:
    if retry_after is not None and math.isfinite(retry_after) and 0 < retry_after <= _MAX_RETRY_AFTER:
        return retry_after
    return min(_INITIAL_DELAY * 2.0**attempt, _MAX_DELAY) * (1 - 0.25 * random.random())
