"""The Chat Completions adapter's SDK path: ``AsyncOpenAI`` clients, their chunk stream, their errors.

Imported only when a model uses the SDK's own pipeline (``transport="sdk"``, a ``client`` you pass,
or a proxy configured for the URL), so the lean path never loads the ``openai`` package.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import openai
from openai import AsyncOpenAI, AsyncStream

from ...transport.client import SdkFallback, StatusError, StreamError
from ...transport.http import TransportError
from ...transport.perloop import PerLoop
from .chunks import Chunk, chunk_from

__all__ = ["ChunkStream", "SdkChannel", "client_factory", "close_client", "translate"]

_DRAIN_SECONDS = 0.5


def client_factory(
    key: str,
    base_url: str | None,
    max_retries: int,
    idle: float,
    connect: float,
    headers: Mapping[str, str] | None,
    max_connections: int | None = None,
    *,
    api_version: str | None = None,
) -> Callable[[], AsyncOpenAI]:
    """Makes the ``AsyncOpenAI`` clients of one model (one per event loop), their pool capped at
    ``max_connections`` when it is given (else the SDK's own cap). With ``api_version`` they are
    ``AsyncAzureOpenAI`` clients for the Azure deployment at ``base_url``."""
    extra: dict[str, Any] = {"timeout": openai.Timeout(idle, connect=connect)}
    if headers:
        extra["default_headers"] = dict(headers)
    if api_version is not None:
        extra["api_version"] = api_version
    kind = AsyncOpenAI if api_version is None else openai.AsyncAzureOpenAI
    make = functools.partial(kind, api_key=key, base_url=base_url, max_retries=max_retries, **extra)
    if max_connections is None:
        return make

    def capped() -> AsyncOpenAI:
        kind = type(openai.DEFAULT_CONNECTION_LIMITS)  # the SDK's HTTP stack's Limits
        limits = kind(max_connections=max_connections, max_keepalive_connections=min(max_connections, 100))
        return make(http_client=openai.DefaultAsyncHttpxClient(limits=limits))

    return capped


async def close_client(client: AsyncOpenAI) -> None:
    """Close one SDK client's connections."""
    await client.close()


class ChunkStream(AsyncStream[object]):
    """The decoded chunks of a Chat Completions stream; ``done`` once its ``[DONE]`` line arrived.

    A stream that reached ``[DONE]`` is complete even when no chunk carried a finish reason; a
    stream that ends without it (and without a finish reason) was cut short.
    """

    done = False

    async def read(self, take: Callable[[list[Chunk]], None]) -> None:
        """Call ``take`` with each chunk, as a chunk record, until ``[DONE]`` or the end of the body."""
        async for data in self:
            take([chunk_from(data)])

    async def __stream__(self) -> AsyncIterator[object]:
        response = self.response
        events = self._iter_events()
        try:
            async for sse in events:
                if sse.data.startswith("[DONE]"):
                    self.done = True
                    break
                data = sse.json()
                if isinstance(data, dict) and data.get("error"):
                    message = _stream_message(data["error"])
                    raise openai.APIError(message, response.request, body=data["error"])
                yield data
            if self.done:
                await _drain(events)
        finally:
            await response.aclose()


async def _drain(events: AsyncIterator[object]) -> None:
    """Read what follows ``[DONE]`` (normally nothing) so the connection goes back to the pool."""
    try:
        async with asyncio.timeout(_DRAIN_SECONDS):
            async for _ in events:
                pass
    except (TimeoutError, openai.APIError):
        pass


def _stream_message(error: object) -> str:
    message = error.get("message") if isinstance(error, Mapping) else None
    return message if isinstance(message, str) and message else "An error occurred during streaming"


def translate(exc: Exception) -> Exception | None:
    """The transport's error for an ``openai`` SDK exception; None for any other exception."""
    if isinstance(exc, openai.APITimeoutError):
        return TransportError.timeout(exc)
    if isinstance(exc, openai.APIConnectionError):
        return TransportError.caused_by(exc)
    if isinstance(exc, openai.APIStatusError):
        return StatusError(exc.status_code, exc.response.headers, exc.body, exc.message)
    if isinstance(exc, openai.APIError):  # an error event inside a stream
        return StreamError(exc.body)
    return None


class SdkChannel(SdkFallback):
    """The SDK fallback behind the transport's face: ``AsyncOpenAI`` clients, one per event loop."""

    translate = staticmethod(translate)

    def __init__(self, clients: PerLoop[AsyncOpenAI]) -> None:
        super().__init__(clients)
        first = clients.first
        timeout = first.timeout
        self.read_timeout: float | None = (
            timeout if timeout is None or isinstance(timeout, int | float) else timeout.read
        )
        self.attempts = first.max_retries + 1
        self.secret = first.api_key

    async def post_json(self, path: str, body: Any) -> Any:
        """Send ``body``; the parsed JSON answer."""
        data = await self.clients.get().post(path, body=body, cast_to=object)
        return json.loads(data) if isinstance(data, str) else data  # a str: the server did not say JSON

    async def post_stream(self, path: str, body: Any) -> ChunkStream:
        """Send ``body`` asking for a stream; its chunks."""
        client: AsyncOpenAI = self.clients.get()
        return await client.post(path, body=body, cast_to=object, stream=True, stream_cls=ChunkStream)
