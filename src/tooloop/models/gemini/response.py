"""Reading Gemini answers in the wire's JSON: a plain response or the chunks of a stream, into one result.

A plain response is one chunk; both are read as the records of :mod:`.chunks`. Thought parts and signatures are kept as
``ThinkingPart(provider="google")`` and under the ``"google"`` key of ``provider_data``; an error
status or an error event is read by :func:`read_error`.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import msgspec

from ..._frozen import draft_of, new_draft
from ...errors import ModelResponseError, ProviderConnectionError
from ...events import EventHandler, TextDelta, ThinkingDelta, ToolCallDelta
from ...messages import EMPTY, FrozenDict, FrozenList, ModelResponse, StopReason, ThinkingPart, ToolCall, Usage
from ...transport.client import StatusError, StreamError
from ..adapter import ErrorBody
from .chunks import Chunk, FunctionCall, Part, UsageMetadata
from .request import PROVIDER

__all__ = ["Reader", "google_body", "read_error"]

_REFUSALS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "LANGUAGE",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
# Finish reasons that mean the model produced something unusable; retrying the request may help.
_BROKEN = frozenset(
    {
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "MISSING_THOUGHT_SIGNATURE",
        "MALFORMED_RESPONSE",
    }
)


_ModelResponseDraft = draft_of(ModelResponse)
_UsageDraft = draft_of(Usage)
_ToolCallDraft = draft_of(ToolCall)
_ToolCallDeltaDraft = draft_of(ToolCallDelta)

_call_prefix: str
_call_numbers: Iterator[int]


def _fresh_call_ids() -> None:
    """Start the ids given to Gemini's function calls (it sends none; Gemini 3 may): a random
    prefix per process, then a counter. A forked child draws a prefix of its own."""
    global _call_prefix, _call_numbers
    _call_prefix = f"call_{os.urandom(8).hex()}"
    _call_numbers = itertools.count(1)


_fresh_call_ids()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_fresh_call_ids)


class Reader:
    """Accumulates one response from its chunks (a plain response is a single chunk)."""

    __slots__ = (
        "_span_parts",
        "_span_thought",
        "block",
        "calls",
        "emitted",
        "finish_message",
        "finish_reason",
        "model",
        "native_ids",
        "on_event",
        "response_id",
        "signatures",
        "text",
        "text_signature",
        "thinking",
        "thought",
        "usage",
    )

    def __init__(self, model_name: str, on_event: EventHandler | None):
        self.on_event = on_event
        self.emitted = False
        self.model = model_name
        self.text: list[str] = []
        self.thinking: list[ThinkingPart] = []
        self.thought: list[str] = []
        self.calls: list[ToolCall] = []
        self.signatures: dict[str, str] | None = None
        self.native_ids: list[str] | None = None
        self.text_signature: str | None = None
        self.finish_reason: str | None = None
        self.finish_message: str | None = None
        self.block: str | None = None
        self.usage: UsageMetadata | None = None
        self.response_id: str | None = None
        self._span_thought = False
        self._span_parts: list[str] = []
        """Text (or thought, ``_span_thought``) of the chunks read so far, not yet sent as one delta."""

    def _gather(self, thought: bool, text: str) -> None:
        self.emitted = True  # it goes out at the latest when the read ends, even on a failure
        if self._span_thought != thought and self._span_parts:
            self._flush()
        self._span_thought = thought
        self._span_parts.append(text)

    def _flush(self) -> None:
        assert self.on_event is not None
        parts = self._span_parts
        self._span_parts = []
        text = parts[0] if len(parts) == 1 else "".join(parts)
        self.on_event(ThinkingDelta(text) if self._span_thought else TextDelta(text))

    def add(self, chunk: Chunk) -> None:
        """Read one response (or one chunk of a stream); its deltas go out at once."""
        try:
            self._chunk(chunk)
        finally:
            if self._span_parts:
                self._flush()

    def add_all(self, chunks: Iterable[Chunk]) -> None:
        """Read the chunks of one network read, in order: consecutive pieces of the text (or of
        the thoughts) among them go to the listener as one delta."""
        try:
            for chunk in chunks:
                self._chunk(chunk)
        finally:
            if self._span_parts:
                self._flush()

    def _chunk(self, chunk: Chunk) -> None:
        usage = chunk.usageMetadata
        if usage is not None:
            self.usage = usage
        version = chunk.modelVersion
        if version:
            self.model = version
        response_id = chunk.responseId
        if response_id:
            self.response_id = response_id
        feedback = chunk.promptFeedback
        if feedback is not None and feedback.blockReason:
            self.block = " ".join(filter(None, [feedback.blockReason, feedback.blockReasonMessage]))
        candidates = chunk.candidates
        if not candidates:
            return
        candidate = candidates[0]
        content = candidate.content
        if content is not None:
            parts = content.parts
            if parts:
                self._parts(parts)
        reason = candidate.finishReason
        if reason:
            self.finish_reason = reason
            self.finish_message = candidate.finishMessage

    def _parts(self, parts: list[Part]) -> None:
        for part in parts:
            if part.thoughtSignature is None and not part.thought and not self.thought:
                call = part.functionCall
                if call is None:  # most of a stream: a piece of text, nothing else
                    text = part.text
                    if text:
                        self.text.append(text)
                        if self.on_event is not None:
                            self._gather(False, text)
                else:
                    self._call(call, None)
            else:
                self._part(part)

    def _part(self, part: Part) -> None:
        signature = part.thoughtSignature
        if signature and ("+" in signature or "/" in signature):  # stored as the SDK decodes it: URL-safe
            signature = signature.replace("+", "-").replace("/", "_")
        text = part.text
        if part.thought:
            if text:
                self.thought.append(text)
                if self.on_event is not None:
                    self._gather(True, text)
            if signature:
                self._close_thought(signature)
            return
        if self.thought:
            self._close_thought(None)
        call = part.functionCall
        if call is not None:
            self._call(call, signature or None)
            return
        if text:
            self.text.append(text)
            if self.on_event is not None:
                self._gather(False, text)
        if signature:
            self.text_signature = signature

    def _close_thought(self, signature: str | None) -> None:
        if self.thought or signature:
            self.thinking.append(ThinkingPart("".join(self.thought), signature=signature, provider=PROVIDER))
            self.thought = []

    def _call(self, call: FunctionCall, signature: str | None) -> None:
        call_id = call.id
        if call_id:
            if self.native_ids is None:
                self.native_ids = []
            self.native_ids.append(call_id)
        else:
            call_id = _call_prefix + str(next(_call_numbers))
        if signature:
            if self.signatures is None:
                self.signatures = {}
            self.signatures[call_id] = signature
        arguments = call.args  # the JSON's own dict, made for this call alone
        if arguments is None:
            arguments = {}
        name = call.name or ""
        made = new_draft(_ToolCallDraft)  # ToolCall(call_id, name, arguments), see tooloop._frozen
        made.id = call_id
        made.name = name
        made.arguments = arguments
        made.provider_data = None
        made.__class__ = ToolCall
        self.calls.append(made)
        if self.on_event is not None:
            delta = new_draft(_ToolCallDeltaDraft)  # ToolCallDelta(index, call_id, name, arguments as JSON)
            delta.index = len(self.calls) - 1
            delta.tool_call_id = call_id
            delta.name = call.name
            delta.arguments_delta = _json(arguments).decode()  # compact, as the wire writes it
            delta.__class__ = ToolCallDelta
            if self._span_parts:
                self._flush()
            self.emitted = True
            self.on_event(delta)

    def finish(self, *, streamed: bool) -> ModelResponse:
        if self.thought:
            self._close_thought(None)
        reason = self.finish_reason
        if self.block is None and reason is None:
            if streamed:
                raise ProviderConnectionError("the Gemini stream ended before the response finished", provider=PROVIDER)
            raise ModelResponseError("Gemini returned no candidate and no block reason", provider=PROVIDER)
        if reason in _BROKEN:
            detail = f": {self.finish_message}" if self.finish_message else ""
            raise ModelResponseError(f"Gemini stopped with {reason}{detail}", provider=PROVIDER)
        calls = self.calls
        stop = StopReason.TOOL_USE if calls else StopReason.END_TURN
        refusal = None
        if self.block is not None:
            stop, refusal = StopReason.REFUSAL, f"prompt blocked: {self.block}"
        elif reason in _REFUSALS:
            stop, refusal = StopReason.REFUSAL, self.finish_message or f"response blocked: {reason}"
        elif reason == "MAX_TOKENS":
            stop = StopReason.MAX_TOKENS
        text = self.text
        # ModelResponse(...) with every field given, filled through a draft (see tooloop._frozen)
        made = new_draft(_ModelResponseDraft)
        made.text = text[0] if len(text) == 1 else "".join(text)
        made.tool_calls = tuple(calls)
        made.stop_reason = stop
        made.usage = _usage(self.usage, len(calls))
        made.thinking = tuple(self.thinking) if self.thinking else ()
        made.refusal = refusal
        made.model = self.model
        made.provider_data = self._provider_data()
        made.response_id = self.response_id
        made.stop_sequence = None
        made.tokens = None
        made.__class__ = ModelResponse
        response: ModelResponse = made
        return response

    def _provider_data(self) -> Mapping[str, Any]:
        """Deeply frozen, as the loop keeps it on the batch's first message: that message shares it
        with the response instead of freezing a copy of its own."""
        if self.signatures is None and self.native_ids is None and not self.text_signature:
            return EMPTY
        data: dict[str, Any] = {}
        if self.signatures:
            data["signatures"] = FrozenDict(self.signatures)
        if self.native_ids:
            data["ids"] = FrozenList(self.native_ids)
        if self.text_signature:
            data["text_signature"] = self.text_signature
        return FrozenDict({PROVIDER: FrozenDict(data)}) if data else EMPTY


def _usage(meta: UsageMetadata | None, tool_calls: int) -> Usage:
    """``Usage(...)`` of the usage metadata, with every field given, filled through a draft (see tooloop._frozen)."""
    made = new_draft(_UsageDraft)
    if meta is None:
        made.input_tokens = made.output_tokens = made.cache_read_tokens = made.reasoning_tokens = 0
    else:
        thoughts = meta.thoughtsTokenCount or 0
        made.input_tokens = (meta.promptTokenCount or 0) + (meta.toolUsePromptTokenCount or 0)
        made.output_tokens = (meta.candidatesTokenCount or 0) + thoughts
        made.cache_read_tokens = meta.cachedContentTokenCount or 0
        made.reasoning_tokens = thoughts
    made.requests = 0
    made.tool_calls = tool_calls
    made.cache_write_tokens = 0
    made.cost = None
    made.estimated = False
    made.cache_write_1h_tokens = 0
    made.__class__ = Usage
    usage: Usage = made
    return usage


def google_body(error: StatusError | StreamError) -> Any:
    """Google's error JSON of a failure, as the SDK keeps it (a one-item list unwrapped, text as a message)."""
    if isinstance(error, StreamError):
        return error.body
    document = error.document
    if isinstance(document, list) and len(document) == 1:
        return document[0]
    if isinstance(document, str):
        return {"message": document}
    return document if document is not None else {}


def read_error(error: StatusError | StreamError) -> ErrorBody:
    """The status and reasons, message and body of Google's error JSON
    (``{"error": {"code", "message", "status", "details"}}``)."""
    body = google_body(error)
    inner = body.get("error", body) if isinstance(body, dict) else None
    inner = inner if isinstance(inner, dict) else {}
    message = inner.get("message")
    text = message if isinstance(message, str) and message else str(body)
    return [inner.get("status"), *_reasons(body)], text, body


def _reasons(details: Any) -> list[str]:
    """The ``reason`` of each ``ErrorInfo`` in a Google error body (e.g. ``API_KEY_INVALID``)."""
    error = details.get("error", details) if isinstance(details, dict) else None
    found = error.get("details") if isinstance(error, dict) else None
    return [d["reason"] for d in found or () if isinstance(d, dict) and isinstance(d.get("reason"), str)]


_json = msgspec.json.Encoder().encode
