"""Reading a streamed Chat Completions answer: SSE events decoded into chunk records, then into one result.

:class:`SSEChunks` takes the events of the transport's response (:mod:`tooloop.transport.sse`),
decoding every piece's events in one call where it can (:mod:`.chunks`); :class:`ChatStreamReader`
assembles text, thinking and tool calls from them, with the leniencies :mod:`.response` lists.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from dataclasses import replace
from typing import Any

from ..._deadline import deadline
from ..._frozen import draft_of, new_draft
from ...errors import ModelResponseError, ProviderConnectionError
from ...events import EventHandler, ModelEvent, TextDelta, ThinkingDelta, ToolCallDelta
from ...messages import ModelResponse
from ...transport.client import Client, StreamError, dumps, fast_loads, loads
from ...transport.http import Response, TransportError
from ...transport.sse import SSEDecoder, data_array
from .chunks import (
    NO_USAGE,
    UNSET,
    Chunk,
    ChunkDelta,
    ChunkFunction,
    ChunkToolCall,
    ChunkUsage,
    ContentPart,
    chunk_from,
    decode,
    decode_each,
)
from .reasoning import Details, details_text, part_fields, thinking_text
from .response import build_response, chunk_usage, intact
from .tokens import StreamTokens

__all__ = ["CapturingStreamReader", "ChatClient", "ChatStreamReader", "SSEChunks"]

_DRAIN_SECONDS = 0.5


class _ListenerError(Exception):
    """Carries an exception raised by the event handler through the chunk parser untouched."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _Call:
    """A tool call being assembled from stream fragments."""

    __slots__ = ("args", "id", "name", "position")

    def __init__(self, position: int) -> None:
        self.position = position
        self.id: str | None = None
        self.name = ""
        self.args: list[str] = []

    def complete(self) -> bool:
        text = "".join(self.args)
        if not text.strip():
            return False
        try:
            json.loads(text)
        except ValueError:
            return False
        return True


_ToolCallDeltaDraft = draft_of(ToolCallDelta)

_TEXT = object()
"""The span being gathered is answer text."""


_LEGACY = -1
"""The index of a legacy ``function_call`` among the calls (``tool_calls`` indexes start at 0)."""


class _Rare:
    """What few streamed answers have: refusal, reasoning, signed reasoning blocks, a legacy call."""

    __slots__ = ("details", "legacy", "reasoning", "refusal", "signature")

    def __init__(self) -> None:
        self.refusal: list[str] = []
        self.reasoning: list[str] = []
        self.signature: str | None = None
        self.details: Details | None = None
        self.legacy = False


class ChatStreamReader:
    """Accumulates streamed ``chat.completion.chunk`` objects into a response.

    Events are built only when ``on_event`` is given. Call :meth:`feed_all` with the chunks of
    each network read (decoded by :mod:`.chunks`), or :meth:`feed` with each chunk decoded
    to a dict, and :meth:`result` when the stream ends; a stream that ended
    without ``[DONE]`` and without a ``finish_reason`` was cut short and raises
    :class:`ProviderConnectionError`.
    """

    __slots__ = (
        "_by_index",
        "_calls",
        "_finish_reason",
        "_from",
        "_held",
        "_id",
        "_model",
        "_on_event",
        "_provider",
        "_rare",
        "_span",
        "_span_name",
        "_stop_sequence",
        "_text",
        "_usage",
    )

    def __init__(self, provider: str, on_event: EventHandler | None = None) -> None:
        self._provider = provider
        self._on_event = on_event
        self._text: list[str] = []
        self._rare: _Rare | None = None  # refusal and reasoning text, made when some arrives
        self._calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self._held = ""  # a high surrogate waiting for its pair before it is emitted
        # The delta being gathered: text (_TEXT) or one call's fragments, sent as one event when
        # something else arrives or the piece ends. Its pieces are those of the text (or of the
        # call's arguments) from _from on: kept once, not in a list of their own.
        self._span: _Call | object | None = None
        self._from = 0
        self._span_name: str | None = None
        self._finish_reason: str | None = None
        self._usage: ChunkUsage | None = None
        self._model: str | None = None
        self._id: str | None = None
        self._stop_sequence: Any = None

    def feed(self, chunk: Any) -> None:
        """Take one chunk decoded to JSON values (a dict), as the SDK hands them out."""
        try:
            record = chunk_from(chunk)
        except ValueError as exc:
            raise self._unreadable(chunk) from exc
        self.feed_all((record,))

    def feed_all(self, chunks: Iterable[Chunk]) -> None:
        """Take chunks, in order: the chunks of one network read.

        Consecutive pieces of the text, or of one tool call, among ``chunks`` go to the event
        handler as one delta: they arrived together, and one event costs the consumer less than
        several.
        """
        try:
            try:
                self._walk(chunks)
            except ModelResponseError:
                self._flush()  # the deltas before the unreadable chunk still go out
                raise
            self._flush()
        except _ListenerError as failure:  # the caller's handler failed: its own error, unchanged
            raise failure.error from None

    def _walk(self, chunks: Iterable[Chunk]) -> None:
        # The usual chunk (text, or more arguments for a known call) is read here without a call
        # of its own: this loop runs for every chunk of every streamed answer.
        text = self._text
        unnamed = self._id is None or not self._model
        chunk = None
        try:
            for chunk in chunks:
                usage = chunk.usage
                if unnamed or usage is not None:
                    unnamed = self._envelope(chunk, usage)
                choices = chunk.choices
                if not choices:
                    self._no_choices(choices, usage)
                    continue
                choice = choices[0]
                delta = choice.delta
                if delta is not None:
                    content = delta.content
                    if content:
                        if type(content) is str:
                            text.append(content)
                            if self._span is not _TEXT:
                                self._open(_TEXT, len(text) - 1)
                        else:
                            self._add_parts(content)  # type: ignore[arg-type]  # the other kind: a list of chunks
                    if delta.tool_calls:
                        self._fragments(delta.tool_calls)
                    if (
                        delta.refusal is not None
                        or delta.reasoning_content is not None
                        or delta.reasoning is not None
                        or delta.function_call is not None
                        or delta.reasoning_details is not None
                    ):
                        self._add_rare(delta)
                if choice.finish_reason:
                    self._finish_reason = choice.finish_reason
                    self._stop_sequence = choice.stop_reason
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            raise self._unreadable(chunk) from exc

    def _fragments(self, fragments: list[ChunkToolCall]) -> None:
        """A delta's tool-call fragments; the usual one, more arguments for a known call, read here."""
        by_index = self._by_index
        for fragment in fragments:
            function = fragment.function
            call = by_index.get(fragment.index)  # type: ignore[arg-type]  # None finds nothing
            if (
                call is None
                or fragment.id is not None
                or function is None
                or function.name is not None
                or type(arguments := function.arguments) is not str
            ):
                self._add_call_fragment(fragment, call)
            elif arguments:
                args = call.args
                args.append(arguments)
                if self._span is not call:
                    self._open(call, len(args) - 1)

    def _envelope(self, chunk: Chunk, usage: ChunkUsage | None) -> bool:
        """The answer's id and model, from the first chunks that name them (Azure's first names no
        model), and its usage; whether the id or the model is still unknown."""
        if usage is not None and usage != NO_USAGE:
            self._usage = usage
        if self._id is None:
            self._id = chunk.id or None
        if not self._model:
            self._model = chunk.model
        return self._id is None or not self._model

    def _no_choices(self, choices: Any, usage: ChunkUsage | None) -> None:
        """A chunk without choices: the usage after the last one, else an error."""
        if choices is UNSET and (usage is None or usage == NO_USAGE):
            raise ModelResponseError(
                f"{self._provider} streamed an object that is not a chunk (no choices)", provider=self._provider
            )

    def _unreadable(self, chunk: Any) -> ModelResponseError:
        return ModelResponseError(
            f"{self._provider} streamed a chunk tooloop cannot read: {str(chunk)[:300]}", provider=self._provider
        )

    def _add_rare(self, delta: ChunkDelta) -> None:
        if delta.refusal:
            self._rare_parts().refusal.append(delta.refusal)
        reasoning = delta.reasoning_content or delta.reasoning
        if delta.reasoning_details:
            rare = self._rare_parts()
            if rare.details is None:
                rare.details = Details()
            rare.details.add(delta.reasoning_details)
            reasoning = reasoning or details_text(delta.reasoning_details)
        if reasoning:
            self._add_reasoning(reasoning)
        if delta.function_call is not None:
            self._add_legacy(delta.function_call)

    def _add_reasoning(self, text: str) -> None:
        self._rare_parts().reasoning.append(text)
        if self._on_event is not None:
            self._flush()
            self._emit(ThinkingDelta(text))

    def _add_legacy(self, function: ChunkFunction) -> None:
        """A legacy ``function_call`` fragment: a name opens the call, later fragments add arguments.

        One without a name and before any named one (servers that fill every field send
        ``{"name": "", "arguments": ""}`` on plain answers) is no call.
        """
        if function.name:
            self._rare_parts().legacy = True
        elif self._rare is None or not self._rare.legacy or not function.arguments:
            return
        self._add_call_fragment(ChunkToolCall(index=_LEGACY, function=function), self._by_index.get(_LEGACY))

    def _add_parts(self, parts: list[ContentPart]) -> None:
        """A content list: thinking chunks are reasoning, text chunks are answer text."""
        for part in parts:
            kind, text, thinking, signature = part_fields(part)
            if kind == "thinking":
                reasoning = thinking_text(thinking)
                if signature:
                    self._rare_parts().signature = signature
                if reasoning:
                    self._add_reasoning(reasoning)
            elif text and kind in (None, "text"):
                self._add_text(text)

    def _rare_parts(self) -> _Rare:
        if self._rare is None:
            self._rare = _Rare()
        return self._rare

    def _add_text(self, content: str) -> None:
        text = self._text
        text.append(content)
        if self._span is not _TEXT:
            self._open(_TEXT, len(text) - 1)

    def _open(self, span: _Call | object, start: int) -> None:
        """Start gathering a delta: the text's pieces, or a call's arguments, from ``start`` on
        (nothing when no one listens)."""
        if self._on_event is None:
            return
        if self._span is not None:
            self._flush()
        self._span = span
        self._from = start

    def _flush(self) -> None:
        """Send the delta being gathered, if any."""
        span = self._span
        if span is None:
            return
        self._span = None
        if span is _TEXT:
            self._send_text(self._text[self._from :])
            return
        assert isinstance(span, _Call)
        event = new_draft(_ToolCallDeltaDraft)  # ToolCallDelta(...), filled through a draft (tooloop._frozen)
        event.index = span.position
        event.tool_call_id = span.id
        event.name = self._span_name
        event.arguments_delta = "".join(span.args[self._from :])
        event.__class__ = ToolCallDelta
        self._span_name = None
        self._emit(event)

    def _send_text(self, parts: list[str]) -> None:
        text = "".join(parts)
        halves = bool(self._held) or len(parts) > 1  # a surrogate pair may have come in two pieces
        if self._held:
            text = self._held + text
            self._held = ""
        if "\ud800" <= text[-1] <= "\udbff":  # its pair has not arrived yet
            self._held = text[-1]
            text = text[:-1]
        if text:
            self._emit(TextDelta(intact(text) if halves else text))

    def _add_call_fragment(self, fragment: ChunkToolCall, known: _Call | None) -> None:
        """Any fragment but more arguments for a known call; ``known`` is the call its index names so far."""
        call_id = fragment.id or None
        function = fragment.function
        name, arguments = (function.name or None, function.arguments) if function is not None else (None, None)
        index = fragment.index
        if index is None:
            call = self._unindexed(call_id, name)
        elif known is None or (call_id and name and known.id and call_id != known.id and known.complete()):
            call = self._new_call()  # the index names a new call (or one whose index is reused)
            self._by_index[index] = call
        else:
            call = known
        new_id = new_name = None
        if call_id and call.id is None:
            call.id = new_id = call_id
        if name and not call.name:
            call.name = new_name = name
        if arguments is not None and not isinstance(arguments, str):
            if self._span is call:  # what was sent of its arguments is replaced, not continued
                self._flush()
            arguments = json.dumps(arguments, ensure_ascii=False)
            call.args = [arguments]
        elif arguments:
            call.args.append(arguments)
        if self._on_event is not None and (new_id or new_name or arguments):
            if self._span is not call:
                self._open(call, len(call.args) - 1 if arguments else len(call.args))
            if new_name:
                self._span_name = new_name

    def _emit(self, event: ModelEvent) -> None:
        assert self._on_event is not None
        try:
            self._on_event(event)
        except Exception as exc:
            raise _ListenerError(exc) from exc

    def _unindexed(self, call_id: str | None, name: str | None) -> _Call:
        """The call a fragment without an index belongs to."""
        if call_id:  # fragments without an index are rare: the calls are looked through, no dict kept
            for known in self._calls:
                if known.id == call_id:
                    return known
        if call_id or name or not self._calls:
            return self._new_call()
        return self._calls[-1]

    def _new_call(self) -> _Call:
        call = _Call(len(self._calls))
        self._calls.append(call)
        return call

    def result(self, *, done: bool = False) -> ModelResponse:
        """The complete response; raises when the stream ended before the model finished.

        ``done`` says the stream reached its ``[DONE]`` line, which completes it even without a
        finish reason.
        """
        if self._finish_reason is None and not done:
            raise ProviderConnectionError(
                f"the {self._provider} stream ended before the response was complete (no finish_reason, no [DONE])",
                provider=self._provider,
            )
        if self._held and self._on_event is not None:
            self._on_event(TextDelta(self._held))
        rare = self._rare or _NONE
        calls = self._calls
        return build_response(
            text="".join(self._text),
            refusal="".join(rare.refusal),
            calls=[(c.id, c.name, "".join(c.args)) for c in calls] if calls else [],
            finish_reason=self._finish_reason,
            usage=chunk_usage(self._usage),
            model=self._model,
            reasoning="".join(rare.reasoning),
            provider=self._provider,
            signature=rare.signature,
            details=rare.details.blocks() if rare.details is not None else None,
            response_id=self._id,
            stop_sequence=self._stop_sequence,
        )


_NONE = _Rare()
"""What an answer without any rare part has (read, never changed)."""


class SSEChunks:
    """The decoded events of one SSE answer; ``done`` once its ``[DONE]`` line arrived.

    Read them with :meth:`read` (each handed to a function as it arrives, the cheaper way) or by
    iterating. An ``error`` object inside the stream raises :class:`~tooloop.transport.client.StreamError`, a broken or
    stalled connection :class:`~tooloop.transport.http.TransportError`. After ``[DONE]`` the rest of the
    body is read (for at most half a second) so the connection goes back to the pool.
    """

    __slots__ = ("_decoder", "_failure", "_response", "_unread", "done")

    def __init__(self, response: Response) -> None:
        self.done = False
        self._response = response
        self._decoder: SSEDecoder | None = None  # made for the first piece that is not the usual one
        self._unread = response.plain_length  # bytes of the body still to come, when known
        self._failure: Exception | None = None

    async def read(self, take: Callable[[list[Chunk]], None]) -> None:
        """Call ``take`` with the chunks of each piece of the body as it arrives, until ``[DONE]``
        or the end of the body (a list per piece: a short answer is usually one piece), decoded to
        the records of :mod:`.chunks`."""
        response = self._response
        try:  # _next_events written out: one coroutine fewer per piece
            while not self.done:
                piece = await response.piece()
                if not piece:
                    return
                events, failure = self._decode(piece, True)
                if events:
                    take(events)
                if failure is not None:
                    raise failure
            if self._unread != 0:  # [DONE] came before the end of the body: read the rest
                await self._drain()
        finally:
            response.close()

    async def __aiter__(self) -> AsyncIterator[Any]:
        """The events as JSON values (dicts), one by one: what a payload listener is shown."""
        try:
            while (events := await self._next_events(False)) is not None:
                for event in events:
                    yield event
        finally:
            self._response.close()

    async def _next_events(self, typed: bool) -> list[Any] | None:
        """The events of the next piece of the body, None after ``[DONE]`` or at its end. A failure
        found in a piece is raised on the call after the one that handed out the events before it."""
        if self._failure is not None:
            raise self._failure
        if self.done:
            await self._drain()
            return None
        piece = await self._response.piece()
        if not piece:
            return None
        events, self._failure = self._decode(piece, typed)
        return events

    def _decode(self, piece: bytes, typed: bool) -> tuple[list[Any], Exception | None]:
        """The events ``piece`` completes, and the failure that follows them (an error event, bad JSON)."""
        self._unread -= len(piece)
        decoder = self._decoder
        usual = data_array(piece, _DONE) if decoder is None else decoder.array(piece, _DONE)
        if usual is None:
            return self._general(piece, typed)
        array, count, self.done = usual  # [DONE] where it belongs: the last event of the body
        if not count:
            return [], None
        try:  # all of them in one call; a failure is found again one by one
            events = decode(array) if typed else fast_loads(array)
        except ValueError:
            return self._general(piece, typed)
        if len(events) != count:  # data that is not one JSON value each (a comma in one)
            return self._general(piece, typed)
        if typed:
            for event in events:
                if event.error is not None:
                    return _until_error(events, typed)
            return events, None
        return _until_error(events, typed)

    def _general(self, piece: bytes, typed: bool) -> tuple[list[Any], Exception | None]:
        """:meth:`_decode` for any piece: its events up to ``[DONE]`` or the first failure."""
        self.done = False
        if self._decoder is None:
            self._decoder = SSEDecoder()
        return self._one_by_one(self._decoder.data(piece), typed)

    def _one_by_one(self, datas: list[bytes], typed: bool) -> tuple[list[Any], Exception | None]:
        """The events of ``datas`` up to ``[DONE]`` or the first that is not a chunk (or is an
        error event), and that failure."""
        events: list[Any] = []
        for data in datas:
            if data.startswith(_DONE):
                self.done = True
                break
            try:
                events.append(_one(data, typed))
            except ValueError as exc:
                return events, exc
        return _until_error(events, typed)

    async def _drain(self) -> None:
        """Read the body to its end (at most half a second when some of it may still be on its way)."""
        response = self._response
        try:
            if self._unread == 0:  # every byte arrived: this only hands the connection back, no timer needed
                while await response.piece():
                    pass
                return
            with deadline(_DRAIN_SECONDS):
                while await response.piece():
                    pass
        except (TimeoutError, TransportError):
            pass

    async def close(self) -> None:
        """Drop the connection unless the body was read to its end (then it is back in the pool)."""
        self._response.close()


_DONE = b"[DONE]"


def _one(data: bytes, typed: bool) -> Any:
    """One event: a chunk record, or the JSON value when not ``typed``. What the fast decoders refuse
    and the standard library reads (a lone surrogate escape, split from its pair) is read too."""
    if not typed:
        return loads(data)
    try:
        return decode_each(data)
    except ValueError:
        return chunk_from(loads(data))


def _until_error(events: list[Any], typed: bool) -> tuple[list[Any], Exception | None]:
    if typed:
        for event in events:
            if event.error is not None:
                return _cut(events, [e.error for e in events])
        return events, None
    return _cut(events, [e.get("error") if type(e) is dict else None for e in events])


def _cut(events: list[Any], errors: list[Any]) -> tuple[list[Any], Exception | None]:
    """The events before the first with an error (not null or empty), and that error."""
    for position, error in enumerate(errors):
        if error:
            return events[:position], StreamError(error)
    return events, None


class ChatClient(Client):
    """The lean transport's client, with the Chat Completions stream as :meth:`post_stream` hands it out."""

    def post_stream(self, path: str, body: Any) -> Coroutine[Any, Any, SSEChunks]:
        """Send an encoded body asking for a stream; its chunks. The pool's coroutine of the
        exchange: no level of this method's waits with the request."""
        return self._send(path, body if isinstance(body, bytes) else dumps(body), _chunks)


async def _chunks(response: Response) -> SSEChunks:
    return SSEChunks(response)


class CapturingStreamReader(ChatStreamReader):
    """A :class:`ChatStreamReader` that also gathers the stream's token ids and logprobs
    (:mod:`.tokens`); the plain reader never looks at them."""

    __slots__ = ("_tokens",)

    def __init__(self, provider: str, on_event: EventHandler | None = None) -> None:
        super().__init__(provider, on_event)
        self._tokens = StreamTokens()

    def _walk(self, chunks: Iterable[Chunk]) -> None:
        chunks = chunks if type(chunks) is list else list(chunks)
        super()._walk(chunks)
        self._tokens.take(chunks)

    def result(self, *, done: bool = False) -> ModelResponse:
        """The complete response, with the tokens of the whole stream."""
        response = super().result(done=done)
        return replace(response, tokens=self._tokens.tokens(response))
