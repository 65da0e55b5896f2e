"""Reading a streamed Anthropic Messages API answer: its SSE events, each parsed once, into one response.

The stream is read event by event as ``(event name, JSON data)`` pairs, whichever transport split
them; deltas become events only when somebody listens. An ``error`` event raises the transport's
:class:`~tooloop.transport.client.StreamError`, read like an error status.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

import msgspec

from ...errors import ProviderConnectionError
from ...events import EventHandler, TextDelta, ThinkingDelta, ToolCallDelta
from ...messages import ModelResponse, ThinkingPart, ToolCall
from ...transport.client import Client, StreamError, dumps, loads
from ...transport.http import DEFAULT_MAX_CONNECTIONS, Response
from ...transport.retry import RetryPolicy
from ...transport.sse import SSEDecoder, sse_events
from .response import PROVIDER, assemble, respond, tool_call

if TYPE_CHECKING:
    from .sdk import SdkEvents

__all__ = ["AnthropicClient", "LeanEvents", "StreamReader", "events_of"]


def _finished(start: Mapping[str, Any], parts: list[str], signature: str) -> dict[str, Any]:
    """A streamed block in the shape of a plain ``Message``'s (for answers with server blocks)."""
    joined = "".join(parts)
    kind = start.get("type", "")
    if kind == "text":
        return {"type": "text", "text": joined}
    if kind == "thinking":
        return {"type": "thinking", "thinking": joined, "signature": signature}
    if kind == "tool_use":
        return {
            "type": "tool_use",
            "id": start.get("id"),
            "name": start.get("name"),
            "input": joined or start.get("input") or {},
        }
    if kind == "redacted_thinking":
        return {"type": kind, "data": start.get("data")}
    # server blocks (server_tool_use, *_tool_result...) as they started; a server call's
    # input arrives as JSON deltas like a tool call's
    return {**start, "input": joined} if parts and "input" in start else dict(start)


_TEXT = -1
_THOUGHT = -2
_NONE = -3
"""The delta being gathered is answer text (``_TEXT``), thinking (``_THOUGHT``), else a call's
position; the deltas of other blocks (a server call's input) are no event (``_NONE``)."""
_SPANS = {"text": _TEXT, "thinking": _THOUGHT}
_PIECES = {"text_delta": "text", "input_json_delta": "partial_json", "thinking_delta": "thinking"}
"""The field of each delta type that holds a piece of its block."""


class StreamReader:
    """Reads a Messages API event stream into one response.

    Feed it the ``(event name, JSON data)`` pairs of each network read (:meth:`feed_all`):
    consecutive pieces of the text, the thinking, or one call's input among them go to the
    listener as one delta (a call's first one with its id and name). Then take :meth:`result`.
    An ``error`` event raises the transport's :class:`~tooloop.transport.client.StreamError`
    (after the deltas before it went out).

    Each block is kept as the ``content_block`` it started with and the list of its pieces, by
    its index; the response is made from them directly (the blocks of an answer with server
    blocks first put in the shape of a plain ``Message``, as :func:`.response.assemble` reads them).
    """

    __slots__ = (
        "_parts",
        "_signatures",
        "_span",
        "_span_head",
        "_span_parts",
        "_spans",
        "_starts",
        "model",
        "on_event",
        "response_id",
        "stop_details",
        "stop_reason",
        "stop_sequence",
        "stopped",
        "tools",
        "usage",
    )

    def __init__(self, on_event: EventHandler | None) -> None:
        self.on_event = on_event
        self._starts: dict[int, Mapping[str, Any]] = {}  # block index -> its content_block
        self._parts: dict[int, list[str]] = {}  # block index -> its text, thinking or JSON pieces
        self._signatures: dict[int, str] | None = None  # block index -> signature deltas put together
        self._spans: dict[int, int] = {}  # with a listener: block index -> what its deltas are (see _TEXT)
        self.tools = 0
        self.usage: dict[str, Any] = {}
        self.stop_reason: str | None = None
        self.stop_details: Mapping[str, Any] | None = None
        self.model: str | None = None
        self.response_id: Any = None
        self.stop_sequence: Any = None
        self.stopped = False
        self._span = 0
        self._span_parts: list[str] = []
        self._span_head: Mapping[str, Any] | None = None  # the start of the call being gathered, not yet sent

    def feed_all(self, events: Iterable[tuple[str | None, bytes]]) -> None:
        """Take the events of one network read, in order."""
        try:
            self._walk((name, loads(raw)) for name, raw in events if raw)
        finally:
            if self._span_parts or self._span_head is not None:
                self._flush()

    def feed_typed(self, events: list[Any]) -> None:
        """:meth:`feed_all` for the events of one network read already decoded by :func:`_usual_events`
        (their data only, as the typed events the reader reads)."""
        try:
            self._walk_typed(events)
        finally:
            if self._span_parts or self._span_head is not None:
                self._flush()

    def _walk(self, events: Iterable[tuple[str | None, Any]]) -> None:
        # the deltas, most of the events, read here without a call each
        parts = self._parts
        spans = self._spans if self.on_event is not None else None
        for name, data in events:
            kind = data.get("type") or name
            if kind == "content_block_delta":
                delta = data["delta"]
                delta_kind = delta["type"]
                field = _PIECES.get(delta_kind)
                if field is None:  # citations and future delta types carry nothing tooloop keeps
                    if delta_kind == "signature_delta":
                        self._sign(data["index"], delta["signature"])
                    continue
                piece = delta[field]
                if not piece:
                    continue
                index = data["index"]
                parts[index].append(piece)
                if spans is not None:
                    span = spans[index]
                    if span != _NONE:
                        if span != self._span and (self._span_parts or self._span_head is not None):
                            self._flush()
                        self._span = span
                        self._span_parts.append(piece)
            elif kind == "content_block_stop" or kind == "ping":
                continue
            elif kind == "content_block_start":
                self.start(data)
            else:
                self._event(kind, data)

    def _walk_typed(self, events: list[Any]) -> None:  # noqa: C901 - one loop on purpose: no call per event
        # _walk for typed events: the same steps, read from the fields each event kind has
        parts = self._parts
        spans = self._spans if self.on_event is not None else None
        for data in events:
            kind = type(data)
            if kind is _BlockDelta:
                delta = data.delta
                if type(delta) is _SignatureDelta:
                    self._sign(data.index, delta.signature)
                    continue
                piece = delta.piece
                if not piece:
                    continue
                index = data.index
                parts[index].append(piece)
                if spans is not None:
                    span = spans[index]
                    if span != _NONE:
                        if span != self._span and (self._span_parts or self._span_head is not None):
                            self._flush()
                        self._span = span
                        self._span_parts.append(piece)
            elif kind is _BlockStart:
                self._start(data.index, data.content_block)
            elif kind is _MessageStart:
                message = data.message
                self._message(message.model, message.id, message.usage)
            elif kind is _MessageDelta:
                stop = data.delta
                self._delta(stop.stop_reason, stop.stop_details, stop.stop_sequence, data.usage)
            elif kind is _MessageStop:
                self.stopped = True
            elif kind is str:  # data that is a JSON string, no event: it fails as the general reader fails
                self._walk(((None, data),))

    def _event(self, kind: str | None, data: Any) -> None:
        if kind == "message_start":
            self.message_start(data)
        elif kind == "message_delta":
            self.message_delta(data)
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            raise StreamError(data)

    def _sign(self, index: int, piece: str) -> None:
        if index not in self._starts:  # a delta of a block that never started fails as any other would
            raise KeyError(index)
        if self._signatures is None:
            self._signatures = {}
        self._signatures[index] = self._signatures.get(index, "") + piece

    def result(self, output_tool: str | None = None) -> ModelResponse:
        """The response; :class:`ProviderConnectionError` when the stream ended before ``message_stop``."""
        if not self.stopped:
            raise ProviderConnectionError(
                "the Anthropic stream ended before message_stop; the response is incomplete", provider=PROVIDER
            )
        return self.response(output_tool)

    def start(self, data: Mapping[str, Any]) -> None:
        """A ``content_block_start`` event."""
        start = data["content_block"]
        self._start(data["index"], start)

    def _start(self, index: Any, start: Mapping[str, Any]) -> None:
        self._starts[index] = start
        kind = start.get("type", "")
        initial = start.get("text") or start.get("thinking")
        self._parts[index] = [initial] if initial else []
        on_event = self.on_event
        if kind == "tool_use":
            position = self.tools
            self.tools += 1
            if on_event is not None:  # its id and name go out with the input that comes in the same read
                self._spans[index] = position
                if self._span_parts or self._span_head is not None:
                    self._flush()
                self._span = position
                self._span_head = start
        elif on_event is not None:
            span = self._spans[index] = _SPANS.get(kind, _NONE)
            if initial and span != _NONE:
                if span != self._span and (self._span_parts or self._span_head is not None):
                    self._flush()
                self._span = span
                self._span_parts.append(initial)

    def _flush(self) -> None:
        """Send the delta being gathered."""
        assert self.on_event is not None
        parts = self._span_parts
        self._span_parts = []
        text = parts[0] if len(parts) == 1 else "".join(parts)
        span = self._span
        head = self._span_head
        if head is not None:  # a call that opened in this read: one delta with its id, name and input so far
            self._span_head = None
            self.on_event(ToolCallDelta(span, head.get("id"), head.get("name"), text))
        elif span == _TEXT:
            self.on_event(TextDelta(text))
        elif span == _THOUGHT:
            self.on_event(ThinkingDelta(text))
        else:
            self.on_event(ToolCallDelta(span, arguments_delta=text))

    def message_start(self, data: Mapping[str, Any]) -> None:
        """A ``message_start`` event."""
        message = data.get("message") or {}
        self._message(message.get("model"), message.get("id"), message.get("usage"))

    def _message(self, model: Any, response_id: Any, usage: Any) -> None:
        self.model = model
        self.response_id = response_id
        if usage:
            if self.usage or type(usage) is not dict:
                self.usage.update(usage)
            else:  # the usual first usage: the parsed dict itself, which nobody else holds
                self.usage = usage

    def message_delta(self, data: Mapping[str, Any]) -> None:
        """A ``message_delta`` event."""
        delta = data.get("delta") or {}
        self._delta(delta.get("stop_reason"), delta.get("stop_details"), delta.get("stop_sequence"), data.get("usage"))

    def _delta(self, reason: Any, details: Any, sequence: Any, usage: Any) -> None:
        self.stop_reason = reason or self.stop_reason
        self.stop_details = details or self.stop_details
        self.stop_sequence = sequence or self.stop_sequence
        if usage:  # its counts over those before, but not its nulls
            self.usage.update({k: v for k, v in usage.items() if v is not None} if None in usage.values() else usage)

    def response(self, output_tool: str | None) -> ModelResponse:
        starts, parts = self._starts, self._parts
        signatures = self._signatures or {}
        texts: list[str] = []
        thinking: list[ThinkingPart] = []
        calls: list[ToolCall] = []
        for index in sorted(starts):
            start = starts[index]
            kind = start.get("type", "")
            pieces = parts[index]
            if kind == "text":
                texts.append(pieces[0] if len(pieces) == 1 else "".join(pieces))
            elif kind == "tool_use":
                arguments = "".join(pieces) or start.get("input") or {}
                calls.append(tool_call(start.get("id"), start.get("name"), arguments))
            elif kind == "thinking":
                signature = (start.get("signature") or "") + signatures.get(index, "")
                thinking.append(ThinkingPart("".join(pieces), signature or None, provider=PROVIDER))
            elif kind == "redacted_thinking":
                thinking.append(ThinkingPart("", start.get("data"), redacted=True, provider=PROVIDER))
            elif kind == "server_tool_use" or (isinstance(kind, str) and kind.endswith("_tool_result")):
                return self._with_server_blocks(output_tool)
        return respond(
            texts,
            calls,
            thinking,
            None,
            self.stop_reason,
            self.usage,
            self.model,
            output_tool,
            self.stop_details,
            self.response_id,
            self.stop_sequence,
        )

    def _with_server_blocks(self, output_tool: str | None) -> ModelResponse:
        """The response of an answer with server blocks, its content kept as a plain ``Message``'s."""
        signatures = self._signatures or {}
        content = [
            _finished(
                self._starts[index],
                self._parts[index],
                (self._starts[index].get("signature") or "") + signatures.get(index, ""),
            )
            for index in sorted(self._starts)
        ]
        return assemble(
            content,
            self.stop_reason,
            self.usage,
            self.model,
            output_tool,
            stop_details=self.stop_details,
            response_id=self.response_id,
            stop_sequence=self.stop_sequence,
        )


def events_of(answer: Response | SdkEvents) -> LeanEvents | SdkEvents:
    """The events of what a channel's ``post_stream`` gave: the lean transport's response read
    as :class:`LeanEvents`, the SDK's events as they are."""
    return LeanEvents(answer) if isinstance(answer, Response) else answer


class LeanEvents:
    """The events of one SSE answer on the lean transport: ``(event name, data)`` pairs.

    Read them with :meth:`read` (the events of each network read handed over together, the
    cheaper way) or by iterating.
    """

    __slots__ = ("_response",)

    def __init__(self, response: Response) -> None:
        self._response = response

    async def read(self, take: Callable[[list[tuple[str | None, bytes]]], None]) -> None:
        """Call ``take`` with the events of each network read, in order, until the end of the body."""
        response = self._response
        decoder = SSEDecoder()
        while piece := await response.piece():
            events = decoder.feed(piece)
            if events:
                take(events)

    async def feed(self, reader: StreamReader) -> None:
        """Hand ``reader`` the events of each network read until the end of the body: the usual
        piece (whole named one-line events) parsed in one call, any other event by event. Then
        the events are closed (the connection dropped unless the body was read to its end)."""
        response = self._response
        decoder = SSEDecoder()
        clean = True  # the decoder holds nothing: a piece starting with an event starts one
        carriage = False  # a CR came: line ends are the decoder's to read from then on
        try:
            while piece := await response.piece():
                if clean:
                    found = _usual_events(piece)
                    if found is not None:
                        reader.feed_typed(found)
                        continue
                events = decoder.feed(piece)
                carriage = carriage or _CR in piece
                clean = not carriage and piece[-2:] == b"\n\n"  # then the decoder kept nothing
                if events:
                    reader.feed_all(events)
        finally:
            response.close()

    def __aiter__(self) -> AsyncIterator[tuple[str | None, bytes]]:
        return sse_events(self._response.iter_bytes())

    async def close(self) -> None:
        """Drop the connection unless the body was read to its end (then it is back in the pool)."""
        self._response.close()


_CR = 0x0D
_EVENT = b"event: "
_DATA_LINE = b"\ndata: "
_NEXT_EVENT = b"\n\nevent: "


def _usual_events(piece: bytes) -> list[Any] | None:
    """The usual piece, whole ``event:`` + one-line ``data:`` events and nothing else, as its
    events' data decoded in one call into the typed events :meth:`StreamReader.feed_typed` reads;
    None for any other piece, or any event that is not one of those (an ``error``, a type tooloop
    does not know, a field the reader would index missing, a field of another shape), to be read
    by the general decoder as dicts.

    The piece becomes one JSON array by two replacements: each ``\\ndata: `` ends a name and
    each ``\\n\\nevent: `` starts one (``event: NAME\\ndata: {...}\\n\\nevent: ...`` reads as
    ``["NAME",{...},"...``). The lengths the replacements take off count the data lines and the
    events after the first; the piece is the usual one when every event has one data line and
    the array holds a name and a value for each (any other line leaves a raw line end in a
    string or between two values, which is not JSON)."""
    if not piece.startswith(_EVENT) or piece[-2:] != b"\n\n" or _CR in piece:
        return None
    named = piece.replace(_DATA_LINE, b'",')
    datas = (len(piece) - len(named)) // 5  # 7 bytes become 2 for each data line
    joined = named.replace(_NEXT_EVENT, b',"')
    if (len(named) - len(joined)) // 7 + 1 != datas:  # 9 bytes become 2 for each event after the first
        return None
    try:
        events: list[Any] = _decode_events(b'["' + joined[7:] + b"]")  # after the first "event: "
    except ValueError:  # not JSON, or an event the typed ones do not take (msgspec.ValidationError)
        return None
    return events[1::2] if len(events) == 2 * datas else None


# The events of the usual piece as the reader reads them: tagged by their "type", only the fields
# it reads (the others skipped, not built). A field the general reader indexes is required here, and
# one it reads with .get() defaults to None; whatever else fails to decode is left to that reader.


class _TextDelta(msgspec.Struct, tag_field="type", tag="text_delta", gc=False):
    piece: Any = msgspec.field(name="text")


class _JsonDelta(msgspec.Struct, tag_field="type", tag="input_json_delta", gc=False):
    piece: Any = msgspec.field(name="partial_json")


class _ThinkingDelta(msgspec.Struct, tag_field="type", tag="thinking_delta", gc=False):
    piece: Any = msgspec.field(name="thinking")


class _SignatureDelta(msgspec.Struct, tag_field="type", tag="signature_delta", gc=False):
    signature: Any


class _BlockDelta(msgspec.Struct, tag_field="type", tag="content_block_delta", gc=False):
    index: Any
    delta: _TextDelta | _JsonDelta | _ThinkingDelta | _SignatureDelta


class _BlockStart(msgspec.Struct, tag_field="type", tag="content_block_start", gc=False):
    index: Any
    content_block: Any  # kept whole: an answer with server blocks keeps them as they came


class _BlockStop(msgspec.Struct, tag_field="type", tag="content_block_stop", gc=False):
    pass


class _Ping(msgspec.Struct, tag_field="type", tag="ping", gc=False):
    pass


class _CacheCreation(TypedDict, total=False):
    ephemeral_1h_input_tokens: Any


class _Usage(TypedDict, total=False):
    """What :func:`.response.usage_from` reads of a usage object, as a dict (the rest left out)."""

    input_tokens: Any
    output_tokens: Any
    cache_read_input_tokens: Any
    cache_creation_input_tokens: Any
    cache_creation: _CacheCreation | None


class _Message(msgspec.Struct, gc=False):
    id: Any = None
    model: Any = None
    usage: _Usage | None = None


class _MessageStart(msgspec.Struct, tag_field="type", tag="message_start", gc=False):
    message: _Message = msgspec.field(default_factory=_Message)  # null, read as {} there: left to the general reader


class _Stop(msgspec.Struct, gc=False):
    stop_reason: Any = None
    stop_details: Any = None
    stop_sequence: Any = None


class _MessageDelta(msgspec.Struct, tag_field="type", tag="message_delta", gc=False):
    delta: _Stop = msgspec.field(default_factory=_Stop)
    usage: _Usage | None = None


class _MessageStop(msgspec.Struct, tag_field="type", tag="message_stop", gc=False):
    pass


_decode_events = msgspec.json.Decoder(
    list[str | _BlockDelta | _BlockStart | _BlockStop | _Ping | _MessageStart | _MessageDelta | _MessageStop]
).decode


class AnthropicClient(Client):
    """The lean transport's client, with the Messages API stream and long plain answers."""

    def __init__(
        self,
        base_url: str,
        headers: Mapping[str, str],
        *,
        retry: RetryPolicy,
        connect_timeout: float | None,
        read_timeout: float | None,
        attempt_header: str | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        super().__init__(
            base_url,
            headers,
            retry=retry,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            attempt_header=attempt_header,
            max_connections=max_connections,
        )
        self._make = functools.partial(
            Client,
            base_url,
            headers,
            retry=retry,
            connect_timeout=connect_timeout,
            attempt_header=attempt_header,
            max_connections=max_connections,
        )
        self._long: dict[float, Client] = {}

    def post_stream(self, path: str, body: Any) -> Awaitable[Response]:
        """Send an encoded body asking for a stream; the response, whose events :func:`events_of` reads."""
        # the send's own coroutine, not one more around it: it waits for the answer in every
        # conversation waiting
        return self._send(path, body if isinstance(body, bytes) else dumps(body))

    async def post_long(self, path: str, body: Any, idle: float) -> Any:
        """:meth:`post_json` with an idle timeout that covers a whole long plain answer."""
        client = self._long.get(idle)
        if client is None:
            client = self._long[idle] = self._make(read_timeout=idle)
        return await client.post_json(path, body)

    async def aclose(self) -> None:
        """Close every pooled connection, the long answers' too."""
        await super().aclose()
        long, self._long = self._long, {}
        for client in long.values():
            await client.aclose()
