"""Reading a streamed Anthropic Messages API answer: its SSE events, each parsed once, into one response.

The stream is read event by event as ``(event name, JSON data)`` pairs, whichever transport split
them; deltas become events only when somebody listens. An ``error`` event raises the transport's
:class:`~tooloop.transport.client.StreamError`, read like an error status.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any

from ...errors import ProviderConnectionError
from ...events import EventHandler, TextDelta, ThinkingDelta, ToolCallDelta
from ...messages import ModelResponse
from ...transport.client import Client, StreamError, fast_loads, loads
from ...transport.http import DEFAULT_MAX_CONNECTIONS, Response
from ...transport.retry import RetryPolicy
from ...transport.sse import SSEDecoder, sse_events
from .response import PROVIDER, assemble

__all__ = ["AnthropicClient", "LeanEvents", "StreamReader"]


class _Block:
    __slots__ = ("data", "id", "input", "kind", "name", "parts", "signature", "start", "tool_index")

    def __init__(self, start: Mapping[str, Any], tool_index: int) -> None:
        self.start = start
        self.kind: str = start.get("type", "")
        self.parts: list[str] = []
        self.id = start.get("id")
        self.name = start.get("name")
        self.input = start.get("input")
        self.data = start.get("data")
        self.signature: str = start.get("signature") or ""
        self.tool_index = tool_index
        initial = start.get("text") or start.get("thinking")
        if initial:
            self.parts.append(initial)

    def finish(self) -> dict[str, Any]:
        joined = "".join(self.parts)
        if self.kind == "text":
            return {"type": "text", "text": joined}
        if self.kind == "thinking":
            return {"type": "thinking", "thinking": joined, "signature": self.signature}
        if self.kind == "tool_use":
            return {"type": "tool_use", "id": self.id, "name": self.name, "input": joined or self.input or {}}
        if self.kind == "redacted_thinking":
            return {"type": self.kind, "data": self.data}
        # server blocks (server_tool_use, *_tool_result...) as they started; a server call's
        # input arrives as JSON deltas like a tool call's
        return {**self.start, "input": joined} if self.parts and "input" in self.start else dict(self.start)


_TEXT = -1
_THOUGHT = -2
"""The delta being gathered is answer text (``_TEXT``), thinking (``_THOUGHT``), else a call's position."""


class StreamReader:
    """Reads a Messages API event stream into one response.

    Feed it the ``(event name, JSON data)`` pairs of each network read (:meth:`feed_all`):
    consecutive pieces of the text, the thinking, or one call's input among them go to the
    listener as one delta. Then take :meth:`result`. An ``error`` event raises the transport's
    :class:`~tooloop.transport.client.StreamError` (after the deltas before it went out).
    """

    def __init__(self, on_event: EventHandler | None) -> None:
        self.on_event = on_event
        self.blocks: dict[int, _Block] = {}
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

    def feed_all(self, events: Iterable[tuple[str | None, bytes]]) -> None:
        """Take the events of one network read, in order."""
        try:
            for name, raw in events:
                if raw:
                    self._event(name, loads(raw))
        finally:
            if self._span_parts:
                self._flush()

    def feed_parsed(self, heads: Sequence[bytes], events: list[Any]) -> None:
        """:meth:`feed_all` for the events of one network read already parsed, with their
        ``event:`` lines as sent (a name is read from one only for data without a type)."""
        try:
            for head, data in zip(heads, events, strict=True):
                self._event(head[7:], data)
        finally:
            if self._span_parts:
                self._flush()

    def _event(self, name: str | bytes | None, data: Any) -> None:
        kind = data.get("type") or (name.decode() if isinstance(name, bytes) else name)
        if kind == "content_block_delta":
            self.delta(data)
        elif kind == "content_block_start":
            self.start(data)
        elif kind == "message_start":
            self.message_start(data)
        elif kind == "message_delta":
            self.message_delta(data)
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            raise StreamError(data)

    def result(self, output_tool: str | None = None) -> ModelResponse:
        """The response; :class:`ProviderConnectionError` when the stream ended before ``message_stop``."""
        if not self.stopped:
            raise ProviderConnectionError(
                "the Anthropic stream ended before message_stop; the response is incomplete", provider=PROVIDER
            )
        return self.response(output_tool)

    def start(self, data: Mapping[str, Any]) -> None:
        start = data["content_block"]
        block = _Block(start, self.tools)
        self.blocks[data["index"]] = block
        if block.kind == "tool_use":
            self.tools += 1
            if self.on_event is not None:
                if self._span_parts:
                    self._flush()
                self.on_event(ToolCallDelta(block.tool_index, block.id, block.name))
        elif self.on_event is not None and block.parts:
            self._gather(_THOUGHT if block.kind == "thinking" else _TEXT, block.parts[0])

    def delta(self, data: Mapping[str, Any]) -> None:
        block = self.blocks[data["index"]]
        delta = data["delta"]
        kind = delta["type"]
        if kind == "text_delta":
            piece = delta["text"]
        elif kind == "input_json_delta":
            piece = delta["partial_json"]
            if not piece:
                return
            block.parts.append(piece)
            if self.on_event is not None and block.kind == "tool_use":
                self._gather(block.tool_index, piece)
            return
        elif kind == "thinking_delta":
            piece = delta["thinking"]
        elif kind == "signature_delta":
            block.signature += delta["signature"]
            return
        else:  # citations and future delta types carry nothing tooloop keeps
            return
        block.parts.append(piece)
        if self.on_event is not None and piece:
            self._gather(_THOUGHT if block.kind == "thinking" else _TEXT, piece)

    def _gather(self, span: int, piece: str) -> None:
        if self._span != span and self._span_parts:
            self._flush()
        self._span = span
        self._span_parts.append(piece)

    def _flush(self) -> None:
        """Send the delta being gathered."""
        assert self.on_event is not None
        parts = self._span_parts
        self._span_parts = []
        text = parts[0] if len(parts) == 1 else "".join(parts)
        span = self._span
        if span == _TEXT:
            self.on_event(TextDelta(text))
        elif span == _THOUGHT:
            self.on_event(ThinkingDelta(text))
        else:
            self.on_event(ToolCallDelta(span, arguments_delta=text))

    def message_start(self, data: Mapping[str, Any]) -> None:
        message = data.get("message") or {}
        self.model = message.get("model")
        self.response_id = message.get("id")
        self.usage.update(message.get("usage") or {})

    def message_delta(self, data: Mapping[str, Any]) -> None:
        delta = data.get("delta") or {}
        self.stop_reason = delta.get("stop_reason") or self.stop_reason
        self.stop_details = delta.get("stop_details") or self.stop_details
        self.stop_sequence = delta.get("stop_sequence") or self.stop_sequence
        self.usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})

    def response(self, output_tool: str | None) -> ModelResponse:
        content = [self.blocks[index].finish() for index in sorted(self.blocks)]
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
        piece (whole named one-line events) parsed in one call, any other event by event."""
        response = self._response
        decoder = SSEDecoder()
        clean = True  # the decoder holds nothing: a piece starting with an event starts one
        carriage = False  # a CR came: line ends are the decoder's to read from then on
        while piece := await response.piece():
            if clean:
                found = _usual_events(piece)
                if found is not None:
                    reader.feed_parsed(*found)
                    continue
            events = decoder.feed(piece)
            carriage = carriage or _CR in piece
            clean = not carriage and piece[-2:] == b"\n\n"  # then the decoder kept nothing
            if events:
                reader.feed_all(events)

    def __aiter__(self) -> AsyncIterator[tuple[str | None, bytes]]:
        return sse_events(self._response.iter_bytes())

    async def close(self) -> None:
        """Drop the connection unless the body was read to its end (then it is back in the pool)."""
        self._response.close()


_CR = 0x0D
_EVENT = b"event: "
_DATA = b"data: "


def _usual_events(piece: bytes) -> tuple[list[bytes], list[Any]] | None:
    """The usual piece, whole ``event:`` + one-line ``data:`` events and nothing else, as the
    events' ``event:`` lines and their data parsed in one call; None for any other piece (or data
    that only the standard library reads), to be read by the general decoder."""
    if not piece.startswith(_EVENT) or piece[-2:] != b"\n\n" or _CR in piece:
        return None
    lines = piece.split(b"\n")  # event, data, blank, ... and the empty rest after the last blank line
    heads, datas = lines[0:-1:3], lines[1::3]
    if len(lines) % 3 != 1 or any(lines[2::3]):
        return None
    if not all(map(bytes.startswith, heads, repeat(_EVENT))) or not all(map(bytes.startswith, datas, repeat(_DATA))):
        return None
    # a line holds no line end, so "\ndata: " is found only where two data lines were joined
    try:
        events = fast_loads(b"[" + b"\n".join(datas)[6:].replace(b"\ndata: ", b",") + b"]")
    except ValueError:
        return None
    return (heads, events) if len(events) == len(datas) else None


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

    async def post_stream(self, path: str, body: Any) -> LeanEvents:
        """Send an encoded body asking for a stream; its events."""
        return LeanEvents(await self.post(path, body))

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
