"""Reading a streamed Gemini answer: ``:streamGenerateContent?alt=sse`` events, one JSON chunk each.

An ``{"error": {...}}`` event raises the transport's :class:`~tooloop.transport.client.StreamError`
(its ``code`` as the status), read like an error status by :func:`.response.read_error`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from ...transport.client import StreamError, loads
from ...transport.http import Response
from ...transport.sse import SSEDecoder

__all__ = ["GeminiEvents"]


class GeminiEvents:
    """The JSON chunks of one streamed answer.

    Read them with :meth:`read` (each handed to a function as it arrives, the cheaper way) or by
    iterating. An error event raises :class:`~tooloop.transport.client.StreamError` (after the
    events before it), a broken or stalled connection the transport's
    :class:`~tooloop.transport.http.TransportError`. A stream read to its end gives its connection
    back to the pool; :meth:`close` drops it otherwise.
    """

    def __init__(self, response: Response) -> None:
        self._response = response
        self._decoder = SSEDecoder()

    async def read(self, take: Callable[[Any], None]) -> None:
        """Call ``take`` with each event, in order, until the end of the body."""
        response = self._response
        try:
            while piece := await response.piece():
                for event in self._decode(piece):
                    take(event)
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
