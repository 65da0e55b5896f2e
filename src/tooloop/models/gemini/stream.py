"""Reading a streamed Gemini answer: ``:streamGenerateContent?alt=sse`` events, one JSON chunk each.

The events are decoded into the records of :mod:`.chunks` (or, for a payload listener, into
JSON values). An ``{"error": {...}}`` event raises the transport's :class:`~tooloop.transport.client.StreamError`
(its ``code`` as the status), read like an error status by :func:`.response.read_error`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from typing import Any

from ...transport.client import Client, StreamError, loads
from ...transport.http import Response
from ...transport.retry import RetryPolicy
from ...transport.sse import SSEDecoder
from .chunks import Chunk, decode, decode_each, read_one
from .request import with_extra

__all__ = ["GeminiClient", "GeminiEvents"]


class GeminiEvents:
    """The chunks of one streamed answer.

    Read them with :meth:`read` (the chunks of each network read handed over together, as the
    records of :mod:`.chunks`: the cheaper way) or by iterating (the JSON values, as a payload
    listener is shown them). An error event raises
    :class:`~tooloop.transport.client.StreamError` (after the events before it), a broken or
    stalled connection the transport's :class:`~tooloop.transport.http.TransportError`. A stream
    read to its end gives its connection back to the pool; :meth:`close` drops it otherwise.
    """

    __slots__ = ("_decoder", "_response")

    def __init__(self, response: Response) -> None:
        self._response = response
        self._decoder: SSEDecoder | None = None  # made for the first piece that is not whole events

    async def read(self, take: Callable[[list[Chunk]], None]) -> None:
        """Call ``take`` with the chunks of each network read, in order, until the end of the body
        (the chunks before an error event first)."""
        response = self._response
        try:
            while piece := await response.piece():
                events, failure = self._decode(piece, True)
                if events:
                    take(events)
                if failure is not None:
                    raise failure
        finally:
            self.close()

    async def __aiter__(self) -> AsyncIterator[Any]:
        try:
            async for piece in self._response.iter_bytes():
                events, failure = self._decode(piece, False)
                for event in events:
                    yield event
                if failure is not None:
                    raise failure
        finally:
            self.close()

    def _decode(self, piece: bytes, typed: bool) -> tuple[list[Any], Exception | None]:
        """The events ``piece`` completes (chunk records when ``typed``, else JSON values), and the
        failure that follows them (an error event, bad JSON): all of them parsed in one call, a
        failure found again one by one."""
        decoder = self._decoder
        if decoder is None:  # every piece so far was whole events, read here
            if piece.startswith(b"data: ") and piece.endswith(b"\r\n\r\n"):
                found = _whole_events(piece, typed)
                if found is not None:
                    return found
            decoder = self._decoder = SSEDecoder()
        datas = decoder.data(piece)
        if len(datas) > 1:
            events = _all_of(b"[" + b",".join(datas) + b"]", typed)
            if events is not None and len(events) == len(datas):  # else data that is not one value each
                return _until_error(events, typed)
        events = []
        for data in datas:
            try:
                events.append(read_one(data) if typed else loads(data))
            except ValueError as exc:
                return events, exc
        return _until_error(events, typed)

    def close(self) -> None:
        """Drop the connection unless the body was read to its end."""
        self._response.close()


_NEXT_EVENT = b"\r\n\r\ndata: "
_CR, _LF = ord("\r"), ord("\n")


def _whole_events(piece: bytes, typed: bool) -> tuple[list[Any], StreamError | None] | None:
    """Gemini's usual piece, read without the decoder: whole one-line ``data:`` events, each ended
    by a CRLF blank line, parsed in one call; None for any other piece (the decoder's to read)."""
    joined = piece[6:-4]
    # (bytes searched for a byte as an int: a bytes needle costs a buffer of its own)
    if _LF not in joined and _CR not in joined:  # one event: parsed as it is (a second value in it makes bad JSON)
        try:
            event = decode_each(joined) if typed else loads(joined)
        except ValueError:
            return None
        if typed and event.error is None:  # the usual case
            return [event], None
        return _until_error([event], typed)
    count = joined.count(_NEXT_EVENT) + 1
    joined = joined.replace(_NEXT_EVENT, b",")
    # every line end was one of the events' own: no other line, no data on several lines, no lone CR
    if _LF in joined or _CR in joined:
        return None
    events = _all_of(b"[" + joined + b"]", typed)
    if events is None or len(events) != count:  # data that is not one value each
        return None
    return _until_error(events, typed)


def _all_of(array: bytes, typed: bool) -> list[Any] | None:
    """The events of a JSON array of them, None when it does not parse (one of them is to blame)."""
    try:
        events = decode(array) if typed else loads(array)
    except ValueError:
        return None
    return events if type(events) is list else None


def _until_error(events: list[Any], typed: bool) -> tuple[list[Any], StreamError | None]:
    """The events before the first error event (``{"error": {...}}``), and that error."""
    if typed:  # the usual case first: no chunk with an error
        for event in events:
            if event.error is not None:
                break
        else:
            return events, None
    for at, event in enumerate(events):
        if typed:
            error = event.error
        elif type(event) is dict:
            error = event.get("error")
        else:
            continue
        if type(error) is dict:
            code = error.get("code")
            status = code if isinstance(code, int) and not isinstance(code, bool) else None
            return events[:at], StreamError({"error": error} if typed else event, status=status)
    return events, None


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

    def generate(self, sent: bytes, typed: bool) -> Coroutine[Any, Any, Any]:
        """One plain request (its body as :meth:`encode` made it); the answer as a chunk record when
        ``typed``, else as its JSON value (an empty body read as ``{}``). The pool's coroutine of
        the exchange: no level of this method's waits with the request."""
        return self._send(self._plain, sent, _chunk if typed else _value)

    async def create_cache(self, resource: dict[str, Any]) -> Any:
        """``POST cachedContents``: the ``CachedContent`` made from ``resource`` (its ``name`` to use)."""
        data = await (await self.post(self._caches, resource)).read()
        return loads(data) if data.strip() else {}

    def stream(self, sent: bytes) -> Coroutine[Any, Any, GeminiEvents]:
        """One streamed request (its body as :meth:`encode` made it); its events. The pool's
        coroutine of the exchange, as :meth:`generate`'s."""
        return self._send(self._streamed, sent, _events)


async def _events(response: Response) -> GeminiEvents:
    return GeminiEvents(response)


async def _chunk(response: Response) -> Chunk:
    data = await response.read()
    return read_one(data) if data.strip() else Chunk()


async def _value(response: Response) -> Any:
    data = await response.read()
    return loads(data) if data.strip() else {}
