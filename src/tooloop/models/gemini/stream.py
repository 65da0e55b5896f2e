"""Reading a streamed Gemini answer: ``:streamGenerateContent?alt=sse`` events, one JSON chunk each.

An ``{"error": {...}}`` event raises the transport's :class:`~tooloop.transport.client.StreamError`
(its ``code`` as the status), read like an error status by :func:`.response.read_error`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

from ...transport.client import Client, StreamError, loads
from ...transport.http import Response
from ...transport.retry import RetryPolicy
from ...transport.sse import SSEDecoder
from .request import with_extra

__all__ = ["GeminiClient", "GeminiEvents"]


class GeminiEvents:
    """The JSON chunks of one streamed answer.

    Read them with :meth:`read` (the events of each network read handed over together, the cheaper way) or by
    iterating. An error event raises :class:`~tooloop.transport.client.StreamError` (after the
    events before it), a broken or stalled connection the transport's
    :class:`~tooloop.transport.http.TransportError`. A stream read to its end gives its connection
    back to the pool; :meth:`close` drops it otherwise.
    """

    def __init__(self, response: Response) -> None:
        self._response = response
        self._decoder = SSEDecoder()

    async def read(self, take: Callable[[list[Any]], None]) -> None:
        """Call ``take`` with the events of each network read, in order, until the end of the body
        (the events before an error event first)."""
        response = self._response
        try:
            while piece := await response.piece():
                events: list[Any] = []
                try:
                    events.extend(self._decode(piece))
                finally:
                    if events:
                        take(events)
        finally:
            self.close()

    async def __aiter__(self) -> AsyncIterator[Any]:
        try:
            async for piece in self._response.iter_bytes():
                for event in self._decode(piece):
                    yield event
        finally:
            self.close()

    def _decode(self, piece: bytes) -> Iterator[Any]:
        for _, data in self._decoder.feed(piece):
            event = loads(data)
            if isinstance(event, dict) and isinstance(event.get("error"), dict):
                code = event["error"].get("code")
                raise StreamError(event, status=code if isinstance(code, int) and not isinstance(code, bool) else None)
            yield event

    def close(self) -> None:
        """Drop the connection unless the body was read to its end."""
        self._response.close()


class GeminiClient(Client):
    """The lean transport's client for one model's two ``generateContent`` endpoints.

    It does not retry: the adapter does, on both paths alike (a stream may fail after its start).
    """

    def __init__(
        self,
        base_url: str,
        resource: str,
        headers: Mapping[str, str],
        *,
        connect_timeout: float | None,
        read_timeout: float | None,
    ) -> None:
        super().__init__(
            base_url, headers, retry=RetryPolicy(0), connect_timeout=connect_timeout, read_timeout=read_timeout
        )
        self._plain = f"{resource}:generateContent"
        self._streamed = f"{resource}:streamGenerateContent?alt=sse"
        self._caches = f"{resource.partition('/')[0]}/cachedContents"

    @property
    def base_url(self) -> str:
        """The base URL as given."""
        return self.endpoint.url

    def check_extra(self, extra: Mapping[str, Any]) -> None:
        """Refuse a ``settings.extra`` field this path cannot send (when the model is made, not per request)."""
        with_extra({"generationConfig": {}}, extra)

    def prepare(self, body: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
        """What is sent for ``body``: ``settings.extra`` where the SDK would put it."""
        return with_extra(body, extra)

    def shown(self, sent: dict[str, Any]) -> dict[str, Any]:
        """What a payload listener sees of a request: its body."""
        return sent

    async def generate(self, sent: dict[str, Any]) -> Any:
        """One plain request; the parsed JSON answer (``{}`` for an empty body)."""
        data = await (await self.post(self._plain, sent)).read()
        return loads(data) if data.strip() else {}

    async def create_cache(self, resource: dict[str, Any]) -> Any:
        """``POST cachedContents``: the ``CachedContent`` made from ``resource`` (its ``name`` to use)."""
        data = await (await self.post(self._caches, resource)).read()
        return loads(data) if data.strip() else {}

    async def stream(self, sent: dict[str, Any]) -> GeminiEvents:
        """One streamed request; its events."""
        return GeminiEvents(await self.post(self._streamed, sent))
