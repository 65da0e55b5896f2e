"""Reading a streamed Responses API answer: deltas to the listener, the terminal event's response as the result.

The events arrive as parsed JSON objects, whichever transport split them: :class:`ResponsesEvents`
on the lean transport (every event of a network read in one list), the SDK fallback's stream
(:mod:`.sdk`) one at a time. :class:`ResponsesStreamReader` turns them into listener events and,
from the terminal ``response.completed`` (``.incomplete``, ``.failed``) event, the response.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator
from typing import Any, TypedDict

import msgspec

from ...errors import ProviderConnectionError
from ...events import EventHandler, TextDelta, ThinkingDelta, ToolCallDelta
from ...messages import ModelResponse
from ...transport.client import Client, StreamError, dumps, fast_loads, loads
from ...transport.http import Response
from ...transport.sse import SSEDecoder
from .request import PROVIDER
from .response import ResponseFields, read

__all__ = ["ResponsesClient", "ResponsesEvents", "ResponsesStreamReader"]

_TEXT_DELTA, _END, _THINKING, _ARGUMENTS, _ARGUMENTS_DONE, _ITEM_ADDED, _ITEM_DONE = range(7)
_KINDS: dict[Any, int] = {
    "response.output_text.delta": _TEXT_DELTA,
    "response.completed": _END,
    "response.incomplete": _END,
    "response.failed": _END,
    "error": _END,
    "response.reasoning_summary_text.delta": _THINKING,
    "response.reasoning_text.delta": _THINKING,
    "response.function_call_arguments.delta": _ARGUMENTS,
    "response.function_call_arguments.done": _ARGUMENTS_DONE,
    "response.output_item.added": _ITEM_ADDED,
    "response.output_item.done": _ITEM_DONE,
}
"""The events the reader reads, by type: the others carry nothing a listener gets (unless an error)."""
_TEXT = -1
_THOUGHT = -2
"""The delta being gathered is answer text (``_TEXT``), reasoning (``_THOUGHT``), else a call's position."""


class ResponsesStreamReader:
    """Forwards stream deltas to ``on_event`` and keeps the response of the terminal event.

    Feed it each event (:meth:`feed`) or the events of each network read (:meth:`feed_all`:
    consecutive pieces of the text, the reasoning, or one call's arguments among them go to the
    listener as one delta), then take :meth:`result`.

    A call's ``ToolCallDelta`` events, joined, are its arguments even from servers that send them
    only when the call is done (LM Studio: ``function_call_arguments.done`` and the finished
    ``output_item.done``, no ``.delta`` events): what the deltas have not said yet is sent then.
    """

    __slots__ = ("_call_index", "_final", "_on_event", "_said", "_span", "_span_parts")

    def __init__(self, on_event: EventHandler | None) -> None:
        self._on_event = on_event
        self._final: ModelResponse | None = None
        self._call_index: dict[Any, int] = {}
        self._said: dict[Any, str] = {}
        """The arguments text sent so far for each call, by output index."""
        self._span = 0
        self._span_parts: list[str] = []

    def feed(self, event: Any) -> None:
        """Take one event."""
        self.feed_all((event,))

    def feed_all(self, events: Iterable[Any]) -> None:
        """Take the events of one network read, in order."""
        try:
            for event in events:
                if self._final is None:
                    self._event(event)
        finally:
            if self._span_parts:
                self._flush()

    def result(self) -> ModelResponse:
        """The response; :class:`ProviderConnectionError` when the stream ended before its terminal event."""
        if self._final is None:
            raise ProviderConnectionError("the OpenAI stream ended before the response finished", provider=PROVIDER)
        return self._final

    def _event(self, event: Any) -> None:
        kind = event.get("type")
        read = _KINDS.get(kind)
        if read == _TEXT_DELTA:  # the usual event first
            if self._on_event is not None:
                self._gather(_TEXT, event.get("delta"))
        elif read == _END or event.get("error"):
            self._end(kind, event)
        elif read is not None and self._on_event is not None:
            self._delta(read, event)

    def _end(self, kind: Any, event: dict[str, Any]) -> None:
        """The terminal event's response, or the error the stream reported."""
        error = event.get("error")
        if error:  # an error object in place of an event, as the SDK reads it
            raise StreamError(error)
        if kind == "error":
            raise StreamError(event)
        self._final = read(event.get("response"))

    def _delta(self, read: int, event: dict[str, Any]) -> None:
        if read == _ARGUMENTS:
            output_index = event.get("output_index")
            index = self._call_index.get(output_index)
            delta = event.get("delta")
            if index is not None and delta:
                self._said[output_index] += delta
                self._gather(index, delta)
        elif read == _THINKING:
            self._gather(_THOUGHT, event.get("delta"))
        elif read == _ARGUMENTS_DONE:
            self._finish(event.get("output_index"), event.get("arguments"))
        else:
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "function_call":
                self._call_item(read, event.get("output_index"), item)

    def _call_item(self, read: int, output_index: Any, item: dict[str, Any]) -> None:
        if output_index not in self._call_index:
            self._open(output_index, item)
        elif read == _ITEM_DONE:
            self._finish(output_index, item.get("arguments"))

    def _gather(self, span: int, piece: Any) -> None:
        if not piece:
            return
        if self._span != span and self._span_parts:
            self._flush()
        self._span = span
        self._span_parts.append(piece)

    def _flush(self) -> None:
        """Send the delta being gathered."""
        assert self._on_event is not None
        parts = self._span_parts
        self._span_parts = []
        text = parts[0] if len(parts) == 1 else "".join(parts)
        span = self._span
        if span == _TEXT:
            self._on_event(TextDelta(text))
        elif span == _THOUGHT:
            self._on_event(ThinkingDelta(text))
        else:
            self._on_event(ToolCallDelta(span, arguments_delta=text))

    def _emit(self, event: ToolCallDelta) -> None:
        assert self._on_event is not None
        if self._span_parts:
            self._flush()
        self._on_event(event)

    def _open(self, output_index: Any, item: dict[str, Any]) -> None:
        index = self._call_index[output_index] = len(self._call_index)
        arguments = self._said[output_index] = item.get("arguments") or ""
        self._emit(ToolCallDelta(index, item.get("call_id"), item.get("name"), arguments))

    def _finish(self, output_index: Any, arguments: Any) -> None:
        """The call's whole arguments arrived: send the part the deltas have not said."""
        said = self._said.get(output_index)
        if said is None or not isinstance(arguments, str) or len(arguments) <= len(said):
            return
        if not arguments.startswith(said):
            return
        self._said[output_index] = arguments
        self._emit(ToolCallDelta(self._call_index[output_index], arguments_delta=arguments[len(said) :]))


class _Item(TypedDict, total=False):
    """What the reader reads of an ``output_item.added`` / ``.done`` event's item."""

    type: Any
    call_id: Any
    name: Any
    arguments: Any


class _Event(TypedDict, total=False):
    """What the reader reads of an event: its deltas, a call item, the terminal response, an
    error (the ``error`` event's fields, or an error object in place of an event)."""

    type: Any
    output_index: Any
    delta: Any
    arguments: Any
    item: _Item | None
    response: ResponseFields | None
    error: Any
    code: Any
    message: Any
    param: Any
    sequence_number: Any


_EVENTS = msgspec.json.Decoder(list[_Event])
_EVENT = msgspec.json.Decoder(_Event)

_UNREAD = frozenset(
    {
        b"response.created",
        b"response.in_progress",
        b"response.queued",
        b"response.content_part.added",
        b"response.content_part.done",
        b"response.output_text.done",
        b"response.output_text.annotation.added",
        b"response.reasoning_summary_part.added",
        b"response.reasoning_summary_part.done",
        b"response.reasoning_summary_text.done",
        b"response.reasoning_text.done",
    }
)
"""Event names whose data the reader has no use for, on the usual piece left unparsed: the first two
events of every answer repeat the whole request (its tools, instructions, settings) and hold no
output yet; the others repeat text the deltas already said. Data that does not start as an event
(``{"type":``) is read all the same: an error object in place of an event."""
_NEXT_EVENT = b"\n\nevent: "
_DATA_LINE = b"\ndata: "


class ResponsesEvents:
    """The events of one streamed answer on the lean transport, each parsed once.

    Read them with :meth:`read` (the events of each network read handed over together, the
    cheaper way: only the events the reader reads (:data:`_UNREAD`) and of those only the fields
    it reads, the rest skipped, not built) or by iterating (every event and field, for a payload
    listener). A stream read to its end gives its connection back to the pool; :meth:`close`
    drops it otherwise.
    """

    __slots__ = ("_decoder", "_response")

    def __init__(self, response: Response) -> None:
        self._response = response
        self._decoder: SSEDecoder | None = None  # made for the first piece that is not whole events

    async def read(self, take: Callable[[list[Any]], None]) -> None:
        """Call ``take`` with the events of each network read, in order, until the end of the body."""
        response = self._response
        while piece := await response.piece():
            events = self._read(piece)
            if events:
                take(events)

    async def __aiter__(self) -> AsyncIterator[Any]:
        decoder = self._decoder = SSEDecoder()
        async for piece in self._response.iter_bytes():
            datas = decoder.named_data(piece)
            for event in self._parsed(decoder.data(piece) if datas is None else datas, fast_loads):
                yield event

    def _read(self, piece: bytes) -> list[Any]:
        """The events of ``piece`` the reader reads, each with the fields it reads."""
        decoder = self._decoder
        if decoder is None:  # every piece so far was whole events, read here
            datas = _usual_datas(piece)
            if datas is not None:
                if len(datas) == 1:
                    try:
                        return [_EVENT.decode(datas[0])]
                    except ValueError:  # a [DONE], a value that is no event, a field of an odd type
                        return [loads(data) for data in _datas(datas)]
                return self._parsed(datas, _EVENTS.decode) if datas else datas
            decoder = self._decoder = SSEDecoder()
        found = decoder.named_data(piece)
        return self._parsed(decoder.data(piece) if found is None else found, _EVENTS.decode)

    @staticmethod
    def _parsed(datas: list[bytes], joined: Callable[[bytes], Any]) -> list[Any]:
        """The events of ``datas``: all of them parsed by one ``joined`` call when it can."""
        if len(datas) > 1:
            try:
                events = joined(b"[" + b",".join(datas) + b"]")
            except ValueError:  # a [DONE], JSON only the standard library reads, a field of an odd type: one by one
                pass
            else:
                if len(events) == len(datas):  # else data that is not one JSON value each
                    return events  # type: ignore[no-any-return]
        return [loads(data) for data in _datas(datas)]

    async def close(self) -> None:
        """Drop the connection unless the body was read to its end (then it is back in the pool)."""
        self._response.close()


def _usual_datas(piece: bytes) -> list[bytes] | None:
    """The data of the usual piece's events that the reader reads (named one-line events, whole,
    nothing else in the piece), the others (:data:`_UNREAD`) left out unparsed; None for any other
    piece, which is the decoder's to read."""
    if not piece.startswith(b"event: ") or piece[-2:] != b"\n\n" or 0x0D in piece:
        return None
    blocks = piece[7:-2].split(_NEXT_EVENT)
    # With 3 line ends per event in the piece, of which 2 close it, each block has one line end
    # left: the one before its data line, found by the partition (else the piece is not the usual one).
    if piece.count(b"\n") != 3 * len(blocks):
        return None
    datas: list[bytes] = []
    for block in blocks:
        name, found, data = block.partition(_DATA_LINE)
        if not found:
            return None
        if name not in _UNREAD or not data.startswith(b'{"type":'):
            datas.append(data)  # read, or not an event (an error object in its place is read as the SDK reads it)
    return datas


def _datas(datas: list[bytes]) -> Iterator[bytes]:
    for data in datas:
        if data.startswith(b"[DONE]"):  # not part of the Responses API; an end all the same
            return
        yield data


class ResponsesClient(Client):
    """The lean transport's client, with the Responses API stream."""

    def post_stream(self, path: str, body: Any) -> Coroutine[Any, Any, ResponsesEvents]:
        """Send an encoded body asking for a stream; its events. The pool's coroutine of the
        exchange: no level of this method's waits with the request."""
        return self._send(path, body if isinstance(body, bytes) else dumps(body), _events)


async def _events(response: Response) -> ResponsesEvents:
    return ResponsesEvents(response)
