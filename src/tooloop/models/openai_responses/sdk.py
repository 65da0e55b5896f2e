"""The Responses adapter's SDK path: ``AsyncOpenAI`` clients (one per event loop), their event stream, their errors.

Imported only when a model uses the SDK's own pipeline (``transport="sdk"``, a ``client`` you pass,
or a proxy configured for the URL), so the lean path never loads the ``openai`` package. The SDK
sends the body the adapter built and hands back the raw JSON (the answer, or each event of the
stream), read by the same code as on the lean path.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
from openai import AsyncOpenAI, AsyncStream

from ...transport.client import SdkFallback
from ...transport.perloop import PerLoop
from ..openai_chat.sdk import client_factory, close_client, translate

__all__ = ["EventStream", "SdkChannel", "client_factory", "close_client", "translate"]


class EventStream(AsyncStream[object]):
    """The events of a Responses API stream, as parsed JSON objects.

    An object with an ``error`` in place of an event is left to the reader, which raises it as
    the SDK would (the same reader as on the lean path).
    """

    async def read(self, take: Callable[[list[Any]], None]) -> None:
        """Call ``take`` with each event, in order, until the end of the body."""
        async for data in self:
            take([data])

    async def __stream__(self) -> AsyncIterator[object]:
        response = self.response
        try:
            async for sse in self._iter_events():
                if sse.data.startswith("[DONE]"):
                    break
                yield sse.json()
        finally:
            await response.aclose()


class SdkChannel(SdkFallback):
    """The SDK fallback behind the transport's face: ``AsyncOpenAI`` clients, one per event loop."""

    translate = staticmethod(translate)

    def __init__(self, clients: PerLoop[AsyncOpenAI]) -> None:
        super().__init__(clients)
        first = clients.first
        timeout = first.timeout
        self.read_timeout: float | None = timeout.read if isinstance(timeout, openai.Timeout) else timeout
        self.attempts = first.max_retries + 1
        self.secret = first.api_key

    async def post_json(self, path: str, body: Any) -> Any:
        """Send ``body``; the parsed JSON answer."""
        data = await self.clients.get().post(path, body=body, cast_to=object)
        return json.loads(data) if isinstance(data, str) else data  # a str: the server did not say JSON

    async def post_stream(self, path: str, body: Any) -> EventStream:
        """Send ``body`` asking for a stream; its events."""
        client: AsyncOpenAI = self.clients.get()
        return await client.post(path, body=body, cast_to=object, stream=True, stream_cls=EventStream)
