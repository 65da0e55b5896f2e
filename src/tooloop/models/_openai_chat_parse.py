"""Reading Chat Completions answers: the plain JSON body and the streamed chunks, into one result.

Both paths end in :func:`build_response`, so the same content gives the same text, tool calls,
stop reason and usage whether it was streamed or not.

Compatible servers bend the format; the stream reader accepts:

* tool calls without ``id`` or with an id another call already has (a fresh ``call_<hex>`` id is
  made, used for the call and its result alike);
* fragments without ``index``: a fragment with a name (or an id not seen yet) opens a new call,
  in order of appearance; one with a known id continues that call; one with neither index nor
  name continues the last call opened;
* arguments sent as a JSON object instead of a string;
* two different calls sent at the same ``index`` (Ollama): a fragment with a new id and a name at
  an index whose call is already complete starts a new call;
* everything, including ``finish_reason`` and ``usage``, in a single chunk;
* a stream that reaches ``[DONE]`` without any ``finish_reason`` (proxies relaying some upstream
  providers): it is complete, and the stop reason is inferred (tool calls: ``TOOL_USE``, else
  ``END_TURN``). Only a stream that ends before both is cut short.

A call cut off by the output limit (``finish_reason: "length"``) keeps its arguments exactly as
received and the response's stop reason is ``MAX_TOKENS``; the loop never runs such calls.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ModelResponseError, ProviderConnectionError
from ..events import EventHandler, ModelEvent, TextDelta, ThinkingDelta, ToolCallDelta
from ..messages import ModelResponse, StopReason, ThinkingPart, ToolCall, Usage
from ._errors import provider_error
from ._openai_chunks import UNSET, Chunk, ChunkDelta, ChunkToolCall, chunk_from

__all__ = ["ChatStreamReader", "build_response", "parse_completion", "usage_from"]

_RawCall = tuple[str | None, str, str]
"""(id as sent or None, name, arguments text) of one tool call before ids are made unique."""


def usage_from(data: Mapping[str, Any] | None) -> Usage:
    """Usage from a Chat Completions ``usage`` object (cached and reasoning tokens included)."""
    if not data:
        return Usage()
    prompt_details = data.get("prompt_tokens_details") or {}
    completion_details = data.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=data.get("prompt_tokens") or 0,
        output_tokens=data.get("completion_tokens") or 0,
        cache_read_tokens=prompt_details.get("cached_tokens") or 0,
        reasoning_tokens=completion_details.get("reasoning_tokens") or 0,
    )


def build_response(
    *,
    text: str,
    refusal: str,
    calls: list[_RawCall],
    finish_reason: str | None,
    usage: Mapping[str, Any] | None,
    model: str | None,
    reasoning: str,
    provider: str,
) -> ModelResponse:
    """The neutral response for the parts of one answer, whichever path read them."""
    truncated = finish_reason == "length"
    tool_calls = _tool_calls(calls, truncated)
    thinking = (ThinkingPart(_intact(reasoning), provider=provider),) if reasoning else ()
    return ModelResponse(
        _intact(text),
        tool_calls,
        _stop_reason(finish_reason, bool(tool_calls), bool(refusal)),
        usage_from(usage),
        thinking=thinking,
        refusal=_intact(refusal) or None,
        model=model,
    )


def _stop_reason(finish_reason: str | None, has_calls: bool, refused: bool) -> StopReason:
    if finish_reason == "length":
        return StopReason.MAX_TOKENS
    if finish_reason == "content_filter":
        return StopReason.REFUSAL
    if has_calls:  # "tool_calls", legacy "function_call", and servers that say "stop" anyway
        return StopReason.TOOL_USE
    if refused:
        return StopReason.REFUSAL
    return StopReason.END_TURN


def _tool_calls(calls: list[_RawCall], truncated: bool) -> tuple[ToolCall, ...]:
    seen: set[str] = set()
    out = []
    for call_id, name, arguments in calls:
        if not call_id or call_id in seen:
            call_id = f"call_{uuid.uuid4().hex}"
        seen.add(call_id)
        if not truncated:
            arguments = _intact(arguments)
            if not arguments.strip():
                arguments = "{}"
        out.append(ToolCall(call_id, name, arguments))
    return tuple(out)


def _intact(text: str) -> str:
    """``text`` with surrogate pairs that arrived as separate ``\\u`` escapes joined again."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _arguments_text(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def _content_text(content: Any) -> str:
    if not content:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some servers answer with content parts
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    raise ModelResponseError(f"unexpected message content: {content!r}"[:300])


def parse_completion(data: Any, provider: str) -> ModelResponse:
    """The response for a plain (non-streamed) Chat Completions JSON body."""
    try:
        return _parse_completion(data, provider)
    except (AttributeError, TypeError, KeyError, IndexError) as exc:
        raise ModelResponseError(
            f"{provider} returned a chat completion tooloop cannot read: {exc}", provider=provider
        ) from exc


def _parse_completion(data: Any, provider: str) -> ModelResponse:
    if not isinstance(data, dict):
        raise ModelResponseError(f"{provider} returned {type(data).__name__}, not a JSON object", provider=provider)
    choices = data.get("choices")
    if not choices:
        _raise_embedded_error(data, provider)
        raise ModelResponseError(f"{provider} returned a chat completion without choices", provider=provider, body=data)
    choice = choices[0]
    message = choice.get("message") or {}
    calls: list[_RawCall] = []
    for item in message.get("tool_calls") or ():
        function = item.get("function") or {}
        calls.append((item.get("id"), function.get("name") or "", _arguments_text(function.get("arguments"))))
    legacy = message.get("function_call")
    if legacy:
        calls.append((None, legacy.get("name") or "", _arguments_text(legacy.get("arguments"))))
    return build_response(
        text=_content_text(message.get("content")),
        refusal=message.get("refusal") or "",
        calls=calls,
        finish_reason=choice.get("finish_reason"),
        usage=data.get("usage"),
        model=data.get("model"),
        reasoning=message.get("reasoning_content") or message.get("reasoning") or "",
        provider=provider,
    )


def _raise_embedded_error(data: Mapping[str, Any], provider: str) -> None:
    """An error object in a 200 body (proxies relaying an upstream failure) goes through the error table."""
    error = data.get("error")
    if not error:
        return
    fields = error if isinstance(error, dict) else {"message": str(error)}
    code = fields.get("code")
    status = code if isinstance(code, int) and 400 <= code < 600 else None
    codes = [fields.get("code"), fields.get("type")]
    message = str(fields.get("message") or error)
    raise provider_error(provider, status=status, codes=codes, message=message, body=error)


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


_TEXT = object()
"""The span being gathered is answer text."""


class _Rare:
    """Refusal and reasoning text of a streamed answer (most answers have neither)."""

    __slots__ = ("reasoning", "refusal")

    def __init__(self) -> None:
        self.refusal: list[str] = []
        self.reasoning: list[str] = []


class ChatStreamReader:
    """Accumulates streamed ``chat.completion.chunk`` objects into a response.

    Events are built only when ``on_event`` is given. Call :meth:`feed_all` with the chunks of
    each network read (decoded by :mod:`._openai_chunks`), or :meth:`feed` with each chunk decoded
    to a dict, and :meth:`result` when the stream ends; a stream that ended
    without ``[DONE]`` and without a ``finish_reason`` was cut short and raises
    :class:`ProviderConnectionError`.
    """

    __slots__ = (
        "_by_id",
        "_by_index",
        "_calls",
        "_finish_reason",
        "_held",
        "_model",
        "_on_event",
        "_provider",
        "_rare",
        "_span",
        "_span_name",
        "_span_parts",
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
        self._by_id: dict[str, _Call] = {}
        self._held = ""  # a high surrogate waiting for its pair before it is emitted
        # The delta being gathered: text (_TEXT) or one call's fragments, sent as one event when
        # something else arrives or the piece ends.
        self._span: _Call | object | None = None
        self._span_parts: list[str] = []
        self._span_name: str | None = None
        self._finish_reason: str | None = None
        self._usage: Mapping[str, Any] | None = None
        self._model: str | None = None

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

    def _walk(self, chunks: Iterable[Chunk]) -> None:  # noqa: C901 - one loop, few calls per chunk: the hot path
        chunk = None
        try:
            for chunk in chunks:
                if self._model is None:
                    self._model = chunk.model
                if chunk.usage:
                    self._usage = chunk.usage
                choices = chunk.choices
                if not choices:
                    if choices is UNSET and not chunk.usage:  # neither a chunk nor the usage after the last
                        raise ModelResponseError(
                            f"{self._provider} streamed an object that is not a chunk (no choices)",
                            provider=self._provider,
                        )
                    continue
                choice = choices[0]
                delta = choice.delta
                if delta is not None:
                    if delta.content:
                        self._add_text(delta.content)
                    if delta.tool_calls:
                        for fragment in delta.tool_calls:
                            if not self._continued(fragment):
                                self._add_call_fragment(fragment)
                    if (
                        delta.refusal is not None
                        or delta.reasoning_content is not None
                        or delta.reasoning is not None
                        or delta.function_call is not None
                    ):
                        self._add_rare(delta)
                if choice.finish_reason:
                    self._finish_reason = choice.finish_reason
        except (AttributeError, TypeError, KeyError, IndexError) as exc:
            raise self._unreadable(chunk) from exc

    def _continued(self, fragment: ChunkToolCall) -> bool:
        """Take the usual fragment, more arguments text for a known call by its index; False for any other."""
        function = fragment.function
        if fragment.id is not None or function is None or function.name is not None:
            return False
        arguments = function.arguments
        call = self._by_index.get(fragment.index)  # type: ignore[arg-type]  # None finds nothing
        if call is None or type(arguments) is not str:
            return False
        if arguments:
            call.args.append(arguments)
            if self._on_event is not None:
                if self._span is not call:
                    self._flush()
                    self._span = call
                self._span_parts.append(arguments)
        return True

    def _unreadable(self, chunk: Any) -> ModelResponseError:
        return ModelResponseError(
            f"{self._provider} streamed a chunk tooloop cannot read: {str(chunk)[:300]}", provider=self._provider
        )

    def _add_rare(self, delta: ChunkDelta) -> None:
        if delta.refusal:
            self._rare_parts().refusal.append(delta.refusal)
        reasoning = delta.reasoning_content or delta.reasoning
        if reasoning:
            self._rare_parts().reasoning.append(reasoning)
            if self._on_event is not None:
                self._flush()
                self._emit(ThinkingDelta(reasoning))
        if delta.function_call is not None:
            self._add_call_fragment(ChunkToolCall(index=0, function=delta.function_call))

    def _rare_parts(self) -> _Rare:
        if self._rare is None:
            self._rare = _Rare()
        return self._rare

    def _add_text(self, content: str) -> None:
        self._text.append(content)
        if self._on_event is None:
            return
        if self._span is not _TEXT:
            self._flush()
            self._span = _TEXT
        self._span_parts.append(content)

    def _flush(self) -> None:
        """Send the delta being gathered, if any."""
        span = self._span
        if span is None:
            return
        self._span = None
        parts = self._span_parts
        self._span_parts = []
        if span is _TEXT:
            self._send_text(parts)
            return
        assert isinstance(span, _Call)
        event = ToolCallDelta(span.position, span.id, self._span_name, "".join(parts))
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
            self._emit(TextDelta(_intact(text) if halves else text))

    def _add_call_fragment(self, fragment: ChunkToolCall) -> None:
        call_id = fragment.id or None
        function = fragment.function
        name, arguments = (function.name or None, function.arguments) if function is not None else (None, None)
        index = fragment.index
        call = self._by_index.get(index) if index is not None and call_id is None else None
        if call is None:  # a fragment that may open a call (the common one continues its call's arguments)
            call = self._target(index, call_id, name)
        new_id = new_name = None
        if call_id and call.id is None:
            call.id = new_id = call_id
            self._by_id.setdefault(call_id, call)
        if name and not call.name:
            call.name = new_name = name
        if arguments is not None and not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
            call.args = [arguments]
        elif arguments:
            call.args.append(arguments)
        if self._on_event is not None and (new_id or new_name or arguments):
            if self._span is not call:
                self._flush()
                self._span = call
            if new_name:
                self._span_name = new_name
            if arguments:
                self._span_parts.append(arguments)

    def _emit(self, event: ModelEvent) -> None:
        assert self._on_event is not None
        try:
            self._on_event(event)
        except Exception as exc:
            raise _ListenerError(exc) from exc

    def _target(self, index: int | None, call_id: str | None, name: str | None) -> _Call:
        if index is not None:
            call = self._by_index.get(index)
            if call is None or (call_id and name and call.id and call_id != call.id and call.complete()):
                call = self._new_call()
                self._by_index[index] = call
            return call
        if call_id:
            known = self._by_id.get(call_id)
            if known is not None:
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
        rare = self._rare
        return build_response(
            text="".join(self._text),
            refusal="".join(rare.refusal) if rare is not None else "",
            calls=[(c.id, c.name, "".join(c.args)) for c in self._calls],
            finish_reason=self._finish_reason,
            usage=self._usage,
            model=self._model,
            reasoning="".join(rare.reasoning) if rare is not None else "",
            provider=self._provider,
        )
