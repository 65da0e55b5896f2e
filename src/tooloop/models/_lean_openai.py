"""The OpenAI-style hot endpoints on the lean transport (:mod:`._lean_http`), behaving as the SDK does.

Built from the adapter's own ``AsyncOpenAI`` client, it keeps everything that client gives: the
same headers (authorization, organization and project, default headers, user agent), the base
URL, retries (``max_retries``: connection failures, timeouts, 408, 409, 429 and 5xx, obeying
``x-should-retry``; a server's ``retry-after-ms``/``retry-after`` wait of up to two minutes, else
exponential backoff from 0.5 s up to 8 s with jitter), the timeouts (``connect``; ``read`` as the
longest wait for the next bytes) and the SDK's exception classes (``APIStatusError`` subclasses
built by the SDK itself, ``APIConnectionError``, ``APITimeoutError``, ``APIError`` for an error
inside a stream), so the adapter maps failures the same way on both paths.

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
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI

from ._lean_http import ConnectTimeout, Endpoint, Pool, ReadTimeout, Response, TransportError, sse_events
from ._per_loop import PerLoop

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is part of the openai extra
    orjson = None  # type: ignore[assignment]

__all__ = ["LeanChunks", "LeanOpenAI", "dumps", "lean_eligible", "loads"]

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


class LeanOpenAI:
    """``POST {base_url}{path}`` with a JSON body, answered with JSON or an SSE stream of JSON."""

    def __init__(self, client: AsyncOpenAI) -> None:
        self._sdk = client
        self.endpoint = Endpoint.parse(str(client.base_url))
        self.max_retries = client.max_retries
        connect, read = _timeouts(client.timeout)
        headers = {**client.auth_headers, **client.default_headers}
        headers["Accept-Encoding"] = "gzip, deflate"
        if read is not None:
            headers["x-stainless-read-timeout"] = str(read)
        sent = {name: value for name, value in headers.items() if isinstance(value, str) and name.lower() != "host"}
        fixed = "".join(f"{name}: {value}\r\n" for name, value in sent.items())
        self._head = f"host: {self.endpoint.authority}\r\n{fixed}".encode()
        self._prefixes: dict[str, bytes] = {}

        def pool() -> Pool:
            return Pool(self.endpoint, connect_timeout=connect, read_timeout=read)

        self._pools: PerLoop[Pool] = PerLoop(pool(), pool, Pool.aclose)

    async def aclose(self) -> None:
        """Close every pooled connection on every loop."""
        await self._pools.aclose()

    async def post_json(self, path: str, body: Any) -> Any:
        """Send ``body``; the parsed JSON answer."""
        response = await self._send(path, dumps(body))
        return loads(await self._read(response))

    async def stream_json(self, path: str, body: Any) -> LeanChunks:
        """Send ``body`` (retrying as the SDK does); the JSON events of the SSE answer, up to ``[DONE]``."""
        return LeanChunks(self, path, await self._send(path, dumps(body)))

    # -- the exchange, with the SDK's retries ---------------------------------------------------

    async def _send(self, path: str, body: bytes) -> Response:
        pool = self._pools.get()
        attempt = 0
        while True:
            head = self._prefix(path) + b"content-length: %d\r\nx-stainless-retry-count: %d\r\n\r\n" % (
                len(body),
                attempt,
            )
            try:
                response = await pool.request(head, body)
            except TransportError as exc:
                if attempt >= self.max_retries:
                    raise self.transport_error(path, exc) from exc
                await asyncio.sleep(_backoff(attempt, None))
                attempt += 1
                continue
            if response.status < 300:
                return response
            data = await self._read(response)
            retry_after = _retry_after(response.headers)
            if attempt >= self.max_retries or not _should_retry(response, retry_after):
                raise self._status_error(path, response, data)
            await asyncio.sleep(_backoff(attempt, retry_after))
            attempt += 1

    def _prefix(self, path: str) -> bytes:
        prefix = self._prefixes.get(path)
        if prefix is None:
            target = self.endpoint.path + "/" + path.lstrip("/")
            prefix = self._prefixes[path] = f"POST {target} HTTP/1.1\r\n".encode() + self._head
        return prefix

    async def _read(self, response: Response) -> bytes:
        try:
            return await response.read()
        except TransportError as exc:
            raise self.transport_error("", exc) from exc

    def request(self, path: str) -> httpx2.Request:
        return httpx2.Request("POST", self.endpoint.url + "/" + path.lstrip("/"))

    def transport_error(self, path: str, exc: TransportError) -> openai.APIConnectionError:
        request = self.request(path)
        if isinstance(exc, ReadTimeout | ConnectTimeout):
            return openai.APITimeoutError(request=request)
        return openai.APIConnectionError(request=request)

    def _status_error(self, path: str, response: Response, data: bytes) -> openai.APIStatusError:
        raw = httpx2.Response(
            response.status, headers=list(response.headers.items()), content=data, request=self.request(path)
        )
        return self._sdk._make_status_error_from_response(raw)


class LeanChunks:
    """The decoded events of one SSE answer; ``done`` once its ``[DONE]`` line arrived.

    An ``error`` object inside the stream raises the SDK's ``APIError``, a broken or stalled
    connection its ``APIConnectionError`` / ``APITimeoutError``. After ``[DONE]`` the rest of the
    body is read (for at most half a second) so the connection goes back to the pool.
    """

    def __init__(self, client: LeanOpenAI, path: str, response: Response) -> None:
        self.done = False
        self._client = client
        self._path = path
        self._response = response

    async def __aiter__(self) -> AsyncIterator[Any]:
        pieces = self._response.iter_bytes()
        try:
            async for _, data in sse_events(pieces):
                if data.startswith(b"[DONE]"):
                    self.done = True
                    break
                event = loads(data)
                if isinstance(event, dict) and event.get("error"):
                    error = event["error"]
                    raise openai.APIError(_stream_error_message(error), self._client.request(self._path), body=error)
                yield event
            if self.done:
                await self._drain(pieces)
        except TransportError as exc:
            raise self._client.transport_error(self._path, exc) from exc
        finally:
            await self.close()

    async def _drain(self, pieces: AsyncIterator[bytes]) -> None:
        try:
            async with asyncio.timeout(_DRAIN_SECONDS):
                async for _ in pieces:
                    pass
        except (TimeoutError, TransportError):
            pass

    async def close(self) -> None:
        """Drop the connection unless the body was read to its end (then it is back in the pool)."""
        self._response.close()


def _timeouts(timeout: Any) -> tuple[float | None, float | None]:
    """(connect, read) seconds from the SDK client's timeout (an ``httpx`` Timeout or a number)."""
    if timeout is None:
        return None, None
    if isinstance(timeout, int | float):
        return float(timeout), float(timeout)
    return getattr(timeout, "connect", None), getattr(timeout, "read", None)


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
