"""Gemini's ``generateContent`` endpoints on the lean transport (:mod:`._lean_http`), without the SDK.

``POST {base_url}/v1beta/models/{model}:generateContent`` answers with one JSON response;
``:streamGenerateContent?alt=sse`` with server-sent events, one JSON response chunk each. The
headers are the ones ``google-genai`` sends (the key as ``x-goog-api-key``, ``X-Server-Timeout``,
JSON content type, gzip). Retries are the adapter's own (:mod:`.gemini`), as on the SDK path.

Failures are :class:`GeminiStatusError` (an error status, with Google's error JSON),
:class:`GeminiStreamError` (an ``error`` object inside a 200 stream) and the transport's
:class:`~._lean_http.TransportError`. The ``google.genai`` package is not imported on this path.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

from ._lean_http import Endpoint, Pool, Response, SSEDecoder
from ._lean_openai import dumps, loads
from ._per_loop import PerLoop

__all__ = ["GeminiEvents", "GeminiStatusError", "GeminiStreamError", "LeanGemini", "error_details"]


def error_details(data: bytes) -> Any:
    """Google's error JSON from an error body, as the SDK keeps it (a one-item list unwrapped)."""
    text = data.decode("utf-8", "replace").strip()
    try:
        details = loads(data) if text else {}
    except ValueError:
        return {"message": text}
    if isinstance(details, list) and len(details) == 1:
        return details[0]
    return details


class GeminiStatusError(Exception):
    """The server answered with an error status; ``body`` is Google's error JSON."""

    def __init__(self, status: int, headers: Mapping[str, str], data: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = error_details(data)
        super().__init__(f"{status} {self.body}")


class GeminiStreamError(Exception):
    """An ``{"error": {...}}`` event inside a 200 stream; ``status`` is the error's ``code``."""

    def __init__(self, event: dict[str, Any]) -> None:
        code = event["error"].get("code")
        self.status = code if isinstance(code, int) and not isinstance(code, bool) else None
        self.headers: Mapping[str, str] | None = None
        self.body = event
        super().__init__(f"{self.status} {event}")


class LeanGemini:
    """The two ``generateContent`` endpoints of one model, one keep-alive pool per event loop."""

    def __init__(
        self,
        base_url: str,
        resource: str,
        headers: Mapping[str, str],
        *,
        connect_timeout: float | None,
        read_timeout: float | None,
    ) -> None:
        self.endpoint = Endpoint.parse(base_url)
        fixed = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        target = f"{self.endpoint.path}/{resource}"
        host = f"host: {self.endpoint.authority}\r\n{fixed}"
        self._plain = f"POST {target}:generateContent HTTP/1.1\r\n{host}".encode()
        self._streamed = f"POST {target}:streamGenerateContent?alt=sse HTTP/1.1\r\n{host}".encode()

        def pool() -> Pool:
            return Pool(self.endpoint, connect_timeout=connect_timeout, read_timeout=read_timeout)

        self.pools: PerLoop[Pool] = PerLoop(pool(), pool, Pool.aclose)

    async def generate(self, body: Any) -> Any:
        """Send ``body`` to ``:generateContent``; the parsed JSON answer (``{}`` for an empty body)."""
        data = await (await self._post(self._plain, dumps(body))).read()
        return loads(data) if data.strip() else {}

    async def stream(self, body: Any) -> GeminiEvents:
        """Send ``body`` to ``:streamGenerateContent?alt=sse``; its events, parsed."""
        return GeminiEvents(await self._post(self._streamed, dumps(body)))

    async def _post(self, head: bytes, data: bytes) -> Response:
        response = await self.pools.get().request(head + b"content-length: %d\r\n\r\n" % len(data), data)
        if not 200 <= response.status < 300:
            raise GeminiStatusError(response.status, response.headers, await response.read())
        return response


class GeminiEvents:
    """The JSON chunks of one streamed answer.

    Read them with :meth:`read` (each handed to a function as it arrives, the cheaper way) or by
    iterating. An error event raises :class:`GeminiStreamError` (after the events before it), a
    broken or stalled connection :class:`~._lean_http.TransportError`. A stream read to its end
    gives its connection back to the pool; :meth:`close` drops it otherwise.
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
                raise GeminiStreamError(event)
            yield event

    def close(self) -> None:
        """Drop the connection unless the body was read to its end."""
        self._response.close()
