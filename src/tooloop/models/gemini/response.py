"""Reading Gemini answers in the wire's JSON: a plain response or the chunks of a stream, into one result.

A plain response is one chunk. Thought parts and signatures are kept as
``ThinkingPart(provider="google")`` and under the ``"google"`` key of ``provider_data``; an error
status or an error event is read by :func:`read_error`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from ...errors import ModelResponseError, ProviderConnectionError
from ...events import EventHandler, TextDelta, ThinkingDelta, ToolCallDelta
from ...messages import ModelResponse, StopReason, ThinkingPart, ToolCall, Usage
from ...transport.client import StatusError, StreamError
from ..adapter import ErrorBody
from ..portable import encode_arguments
from .request import PROVIDER, TO_URLSAFE

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


class Reader:
    """Accumulates one response from its chunks (a plain response is a single chunk)."""

    def __init__(self, model_name: str, on_event: EventHandler | None):
        self.on_event = on_event
        self.emitted = False
        self.model = model_name
        self.text: list[str] = []
        self.thinking: list[ThinkingPart] = []
        self.thought: list[str] = []
        self.calls: list[ToolCall] = []
        self.signatures: dict[str, str] = {}
        self.native_ids: list[str] = []
        self.text_signature: str | None = None
        self.finish_reason: str | None = None
        self.finish_message: str | None = None
        self.block: str | None = None
        self.usage: dict[str, Any] | None = None
        self.response_id: str | None = None
        self._span_thought = False
        self._span_parts: list[str] = []
        """Text (or thought, ``_span_thought``) of the chunks read so far, not yet sent as one delta."""

    def _emit(self, event: ToolCallDelta) -> None:
        if self.on_event is not None:
            if self._span_parts:
                self._flush()
            self.emitted = True
            self.on_event(event)

    def _gather(self, thought: bool, text: str) -> None:
        if self.on_event is None:
            return
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

    def add(self, chunk: Any) -> None:
        """Read one response (or one chunk of a stream) in the wire's JSON; its deltas go out at once."""
        self.add_all((chunk,))

    def add_all(self, chunks: Iterable[Any]) -> None:
        """Read the chunks of one network read, in order: consecutive pieces of the text (or of
        the thoughts) among them go to the listener as one delta."""
        try:
            for chunk in chunks:
                self._chunk(chunk)
        finally:
            if self._span_parts:
                self._flush()

    def _chunk(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            raise ModelResponseError(
                f"Gemini sent a response that is not a JSON object: {chunk!r:.200}", provider=PROVIDER
            )
        usage = chunk.get("usageMetadata")
        if usage is not None:
            self.usage = usage
        version = chunk.get("modelVersion")
        if version:
            self.model = version
        response_id = chunk.get("responseId")
        if response_id and isinstance(response_id, str):
            self.response_id = response_id
        feedback = chunk.get("promptFeedback")
        if feedback and feedback.get("blockReason"):
            self.block = " ".join(filter(None, [feedback["blockReason"], feedback.get("blockReasonMessage")]))
        candidates = chunk.get("candidates")
        if not candidates:
            return
        candidate = candidates[0]
        content = candidate.get("content")
        for part in (content.get("parts") if content else None) or ():
            self._part(part)
        reason = candidate.get("finishReason")
        if reason:
            self.finish_reason = reason
            self.finish_message = candidate.get("finishMessage")

    def _part(self, part: dict[str, Any]) -> None:
        raw = part.get("thoughtSignature")
        signature = raw.translate(TO_URLSAFE) if raw else None  # stored as the SDK decodes it: URL-safe
        text = part.get("text")
        if part.get("thought"):
            if text:
                self.thought.append(text)
                self._gather(True, text)
            if signature:
                self._close_thought(signature)
            return
        if self.thought:
            self._close_thought(None)
        call = part.get("functionCall")
        if call is not None:
            self._call(call, signature)
            return
        if text:
            self.text.append(text)
            self._gather(False, text)
        if signature:
            self.text_signature = signature

    def _close_thought(self, signature: str | None) -> None:
        if self.thought or signature:
            self.thinking.append(ThinkingPart("".join(self.thought), signature=signature, provider=PROVIDER))
            self.thought = []

    def _call(self, call: dict[str, Any], signature: str | None) -> None:
        native = call.get("id")
        call_id = native or f"call_{os.urandom(12).hex()}"
        if native:
            self.native_ids.append(native)
        if signature:
            self.signatures[call_id] = signature
        arguments = dict(call.get("args") or {})
        name = call.get("name")
        self.calls.append(ToolCall(call_id, name or "", arguments))
        if self.on_event is not None:
            self._emit(ToolCallDelta(len(self.calls) - 1, call_id, name, encode_arguments(arguments)))

    def finish(self, *, streamed: bool) -> ModelResponse:
        self._close_thought(None)
        reason = self.finish_reason
        if self.block is None and reason is None:
            if streamed:
                raise ProviderConnectionError("the Gemini stream ended before the response finished", provider=PROVIDER)
            raise ModelResponseError("Gemini returned no candidate and no block reason", provider=PROVIDER)
        if reason in _BROKEN:
            detail = f": {self.finish_message}" if self.finish_message else ""
            raise ModelResponseError(f"Gemini stopped with {reason}{detail}", provider=PROVIDER)
        stop = StopReason.TOOL_USE if self.calls else StopReason.END_TURN
        refusal = None
        if self.block is not None:
            stop, refusal = StopReason.REFUSAL, f"prompt blocked: {self.block}"
        elif reason in _REFUSALS:
            stop, refusal = StopReason.REFUSAL, self.finish_message or f"response blocked: {reason}"
        elif reason == "MAX_TOKENS":
            stop = StopReason.MAX_TOKENS
        return ModelResponse(
            "".join(self.text),
            tuple(self.calls),
            stop,
            _usage(self.usage, len(self.calls)),
            thinking=tuple(self.thinking),
            refusal=refusal,
            model=self.model,
            provider_data=self._provider_data(),
            response_id=self.response_id,
        )

    def _provider_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.signatures:
            data["signatures"] = self.signatures
        if self.native_ids:
            data["ids"] = self.native_ids
        if self.text_signature:
            data["text_signature"] = self.text_signature
        return {PROVIDER: data} if data else {}


def _usage(meta: Mapping[str, Any] | None, tool_calls: int) -> Usage:
    if meta is None:
        return Usage(tool_calls=tool_calls)
    thoughts = meta.get("thoughtsTokenCount") or 0
    return Usage(
        input_tokens=(meta.get("promptTokenCount") or 0) + (meta.get("toolUsePromptTokenCount") or 0),
        output_tokens=(meta.get("candidatesTokenCount") or 0) + thoughts,
        tool_calls=tool_calls,
        cache_read_tokens=meta.get("cachedContentTokenCount") or 0,
        reasoning_tokens=thoughts,
    )


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
