"""The Anthropic adapter's SDK path: ``AsyncAnthropic`` clients, their raw answers, their errors.

Imported only when a model uses the SDK's own pipeline (``transport="sdk"``, a ``client`` you pass,
or a proxy configured for the URL), so the lean path never loads the ``anthropic`` package.

Only the three required fields go through the SDK method's signature; the rest of the body rides
in ``extra_body``, so fields an SDK version does not list (or no longer lists) still reach the API.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anthropic
import httpx2
from anthropic import NOT_GIVEN, AsyncAnthropic, AsyncStream

from ...transport.client import SdkFallback, StatusError, StreamError, UnreadableError
from ...transport.http import TransportError
from ...transport.perloop import PerLoop

if TYPE_CHECKING:
    from .stream import StreamReader

__all__ = [
    "SdkChannel",
    "SdkEvents",
    "client_factory",
    "client_limits",
    "close_client",
    "open_stream",
    "post_plain",
    "translate",
]


def client_factory(
    key: str,
    base_url: str | None,
    max_retries: int,
    idle: float,
    connect: float,
    headers: Mapping[str, str] | None,
    max_connections: int | None = None,
) -> Callable[[], AsyncAnthropic]:
    """Makes the ``AsyncAnthropic`` clients of one model (one per event loop), their pool capped at
    ``max_connections`` when it is given (else the SDK's own cap)."""
    extra: dict[str, Any] = {"timeout": anthropic.Timeout(idle, connect=connect)}
    if headers:
        extra["default_headers"] = dict(headers)
    make = functools.partial(AsyncAnthropic, api_key=key, base_url=base_url, max_retries=max_retries, **extra)
    if max_connections is None:
        return make

    def capped() -> AsyncAnthropic:
        kind = type(anthropic.DEFAULT_CONNECTION_LIMITS)  # the SDK's HTTP stack's Limits
        limits = kind(max_connections=max_connections, max_keepalive_connections=min(max_connections, 100))
        return make(http_client=anthropic.DefaultAsyncHttpxClient(limits=limits))

    return capped


def client_limits(client: AsyncAnthropic) -> tuple[str | None, int, float | None]:
    """A client's key, the requests one call may make (retries + 1) and its idle timeout."""
    timeout = client.timeout
    idle = timeout.read if isinstance(timeout, anthropic.Timeout) else timeout
    return client.api_key, client.max_retries + 1, idle


async def close_client(client: AsyncAnthropic) -> None:
    """Close one SDK client's connections."""
    await client.close()


def _split(body: Mapping[str, Any]) -> tuple[str, int, Any, dict[str, Any]]:
    rest = dict(body)
    rest.pop("stream", None)
    return rest.pop("model"), rest.pop("max_tokens"), rest.pop("messages"), rest


async def post_plain(client: AsyncAnthropic, body: Mapping[str, Any], long_timeout: float | None) -> Any:
    """Send a plain request; the answer's parsed JSON (``long_timeout``, if given, replaces the client's)."""
    model, max_tokens, messages, rest = _split(body)
    raw = await client.messages.with_raw_response.create(
        model=model, max_tokens=max_tokens, messages=messages, extra_body=rest, timeout=long_timeout or NOT_GIVEN
    )
    return json.loads(await raw.read())


async def open_stream(client: AsyncAnthropic, body: Mapping[str, Any]) -> SdkEvents:
    """Send a streamed request; its events, read as they arrive."""
    model, max_tokens, messages, rest = _split(body)
    raw = await client.messages.with_raw_response.create(
        model=model, max_tokens=max_tokens, messages=messages, stream=True, extra_body=rest
    )
    return SdkEvents(raw.http_response)


class SdkEvents:
    """The events of one SSE answer read by the SDK's decoder: ``(event name, data)``."""

    def __init__(self, response: httpx2.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[tuple[str | None, bytes]]:
        async for sse in AsyncStream.raw_events(self._response):
            yield sse.event, sse.data.encode()

    async def read(self, take: Callable[[list[tuple[str | None, bytes]]], None]) -> None:
        """Call ``take`` with each event, in order, until the end of the body."""
        async for event in self:
            take([event])

    async def feed(self, reader: StreamReader) -> None:
        """Hand ``reader`` each event, in order, until the end of the body; then close."""
        try:
            await self.read(reader.feed_all)
        finally:
            await self.close()

    async def close(self) -> None:
        """Release the connection (read to the end or not)."""
        await self._response.aclose()


def translate(exc: Exception) -> Exception | None:
    """The transport's error for an ``anthropic`` SDK (or ``httpx2``) exception; None for any other exception."""
    if isinstance(exc, anthropic.APIStatusError):
        if exc.status_code < 300:  # an error event inside a 200 stream
            return StreamError(exc.body)
        return StatusError(exc.status_code, exc.response.headers, exc.body, str(exc))
    if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
        return TransportError.timeout(exc)
    if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError):
        return TransportError.caused_by(exc)
    if isinstance(exc, anthropic.APIResponseValidationError):
        return UnreadableError(str(exc))
    return None


class SdkChannel(SdkFallback):
    """The SDK fallback behind the transport's face: ``AsyncAnthropic`` clients, one per event loop."""

    translate = staticmethod(translate)

    def __init__(self, clients: PerLoop[AsyncAnthropic]) -> None:
        super().__init__(clients)
        self.secret, self.attempts, self.read_timeout = client_limits(clients.first)

    async def post_json(self, path: str, body: Any) -> Any:
        """Send a plain request; the answer's parsed JSON."""
        return await post_plain(self.clients.get(), body, None)

    async def post_long(self, path: str, body: Any, idle: float) -> Any:
        """Send a plain request whose answer may take ``idle`` seconds to start."""
        return await post_plain(self.clients.get(), body, idle)

    async def post_stream(self, path: str, body: Any) -> SdkEvents:
        """Send a streamed request; its events."""
        return await open_stream(self.clients.get(), body)
