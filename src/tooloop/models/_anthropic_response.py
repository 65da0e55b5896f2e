"""Reading Anthropic Messages API answers: a plain JSON ``Message`` or the raw SSE event stream.

Both paths end in :func:`assemble`, so the same content gives the same :class:`ModelResponse`
(text, tool calls, thinking, usage, stop reason) whether it was streamed or not. The stream is
read event by event as ``(event name, JSON data)`` pairs, whichever transport split them, parsing
each event's JSON once; deltas become events only when somebody listens.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from ..errors import ModelResponseError, ProviderConnectionError
from ..events import EventHandler, TextDelta, ThinkingDelta, ToolCallDelta
from ..messages import ModelResponse, StopReason, ThinkingPart, ToolCall, Usage
from ._errors import provider_error
from ._lean_openai import loads

__all__ = ["assemble", "parse_message", "read_stream"]

_PROVIDER = "anthropic"
_STOP_REASONS = {
    "end_turn": StopReason.END_TURN,
    "stop_sequence": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "refusal": StopReason.REFUSAL,
    "pause_turn": StopReason.PAUSE_TURN,
}
_REFUSED = "The model declined to answer (stop_reason 'refusal')."


def parse_message(data: Any, output_tool: str | None = None) -> ModelResponse:
    """The response for a plain (non-streamed) ``Message`` JSON object."""
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise ModelResponseError("Anthropic answered without a message content list", provider=_PROVIDER, body=data)
    return assemble(
        data["content"],
        data.get("stop_reason"),
        data.get("usage") or {},
        data.get("model"),
        output_tool,
        stop_details=data.get("stop_details"),
    )


def usage_from(usage: Mapping[str, Any]) -> Usage:
    """Anthropic usage as tooloop :class:`Usage`; ``input_tokens`` includes cache reads and writes."""
    cache_read = usage.get("cache_read_input_tokens") or 0
    cache_write = usage.get("cache_creation_input_tokens") or 0
    return Usage(
        input_tokens=(usage.get("input_tokens") or 0) + cache_read + cache_write,
        output_tokens=usage.get("output_tokens") or 0,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def assemble(
    content: list[Any],
    stop_reason: str | None,
    usage: Mapping[str, Any],
    model: str | None,
    output_tool: str | None = None,
    *,
    stop_details: Mapping[str, Any] | None = None,
) -> ModelResponse:
    """Build the response from content blocks in the shape of a plain ``Message``.

    A ``tool_use`` block's ``input`` may be a dict (plain) or the streamed JSON text. A refusal's
    ``stop_details`` (category, explanation) stay on the message, under
    ``provider_data["anthropic"]["stop_details"]``, and the refusal text is the
    model's text followed by the explanation.
    """
    texts: list[str] = []
    thinking: list[ThinkingPart] = []
    calls: list[ToolCall] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            texts.append(block["text"])
        elif kind == "tool_use":
            calls.append(ToolCall(block["id"], block["name"], block.get("input") or {}))
        elif kind == "thinking":
            signature = block.get("signature") or None
            thinking.append(ThinkingPart(block.get("thinking", ""), signature, provider=_PROVIDER))
        elif kind == "redacted_thinking":
            thinking.append(ThinkingPart("", block.get("data"), redacted=True, provider=_PROVIDER))
    text = "".join(texts)
    reason = _STOP_REASONS.get(stop_reason or "", StopReason.END_TURN)
    if output_tool is not None:
        text, calls = _take_output(text, calls, output_tool)
    if reason is StopReason.TOOL_USE and not calls:
        reason = StopReason.END_TURN
    refusal = _refusal(text, stop_details) if reason is StopReason.REFUSAL else None
    return ModelResponse(
        text,
        tuple(calls),
        reason,
        usage_from(usage),
        thinking=tuple(thinking),
        refusal=refusal,
        model=model,
        provider_data={_PROVIDER: {"stop_details": dict(stop_details)}} if stop_details else {},
    )


def _refusal(text: str, stop_details: Mapping[str, Any] | None) -> str:
    explanation = (stop_details or {}).get("explanation")
    parts = [part for part in (text, explanation) if isinstance(part, str) and part.strip()]
    return "\n\n".join(parts) if parts else _REFUSED


def _take_output(text: str, calls: list[ToolCall], output_tool: str) -> tuple[str, list[ToolCall]]:
    """With native structured output, a lone call of the output tool is the final answer's JSON."""
    outputs = [call for call in calls if call.name == output_tool]
    if not outputs:
        return text, calls
    if len(calls) > len(outputs):  # other tools first; the model answers again after their results
        return text, [call for call in calls if call.name != output_tool]
    arguments = outputs[-1].arguments
    return (arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)), []


class _Block:
    __slots__ = ("data", "id", "input", "kind", "name", "parts", "signature", "tool_index")

    def __init__(self, start: Mapping[str, Any], tool_index: int) -> None:
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
        return {"type": self.kind, "data": self.data}


class _StreamState:
    def __init__(self, on_event: EventHandler | None) -> None:
        self.on_event = on_event
        self.blocks: dict[int, _Block] = {}
        self.tools = 0
        self.usage: dict[str, Any] = {}
        self.stop_reason: str | None = None
        self.stop_details: Mapping[str, Any] | None = None
        self.model: str | None = None
        self.stopped = False

    def start(self, data: Mapping[str, Any]) -> None:
        start = data["content_block"]
        block = _Block(start, self.tools)
        self.blocks[data["index"]] = block
        if block.kind == "tool_use":
            self.tools += 1
            if self.on_event is not None:
                self.on_event(ToolCallDelta(block.tool_index, block.id, block.name))
        elif self.on_event is not None and block.parts:
            self._emit(block.kind, block.parts[0])

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
            if self.on_event is not None:
                self.on_event(ToolCallDelta(block.tool_index, arguments_delta=piece))
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
            self._emit(block.kind, piece)

    def _emit(self, kind: str, piece: str) -> None:
        assert self.on_event is not None
        self.on_event(ThinkingDelta(piece) if kind == "thinking" else TextDelta(piece))

    def message_start(self, data: Mapping[str, Any]) -> None:
        message = data.get("message") or {}
        self.model = message.get("model")
        self.usage.update(message.get("usage") or {})

    def message_delta(self, data: Mapping[str, Any]) -> None:
        delta = data.get("delta") or {}
        self.stop_reason = delta.get("stop_reason") or self.stop_reason
        self.stop_details = delta.get("stop_details") or self.stop_details
        self.usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})

    def response(self, output_tool: str | None) -> ModelResponse:
        content = [self.blocks[index].finish() for index in sorted(self.blocks)]
        return assemble(content, self.stop_reason, self.usage, self.model, output_tool, stop_details=self.stop_details)


async def read_stream(
    events: AsyncIterator[tuple[str | None, bytes]],
    on_event: EventHandler | None,
    output_tool: str | None = None,
) -> ModelResponse:
    """Read a Messages API event stream (``(event name, JSON data)`` pairs) to the end; the response."""
    state = _StreamState(on_event)
    async for name, raw in events:
        if not raw:
            continue
        data = loads(raw)
        kind = data.get("type") or name
        if kind == "content_block_delta":
            state.delta(data)
        elif kind == "content_block_start":
            state.start(data)
        elif kind == "message_start":
            state.message_start(data)
        elif kind == "message_delta":
            state.message_delta(data)
        elif kind == "message_stop":
            state.stopped = True
        elif kind == "error":
            error = data.get("error") or {}
            message = error.get("message") or str(error)
            raise provider_error(_PROVIDER, status=None, codes=[error.get("type")], message=message, body=data)
    if not state.stopped:
        raise ProviderConnectionError(
            "the Anthropic stream ended before message_stop; the response is incomplete", provider=_PROVIDER
        )
    return state.response(output_tool)
