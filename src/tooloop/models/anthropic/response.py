"""Reading a plain Anthropic Messages API answer, and what the stream reader (:mod:`.stream`) shares.

Both paths end in :func:`assemble`, so the same content gives the same :class:`ModelResponse`
(text, tool calls, thinking, usage, stop reason) whether it was streamed or not. The stream is
read event by event as ``(event name, JSON data)`` pairs, whichever transport split them, parsing
each event's JSON once; deltas become events only when somebody listens.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...errors import ModelResponseError
from ...messages import ModelResponse, StopReason, ThinkingPart, ToolCall, Usage
from ...transport.client import StatusError, StreamError
from ..adapter import ErrorBody
from ..base import TOOL_SEARCH_KEY
from .request import PROVIDER

__all__ = ["PROVIDER", "assemble", "parse_message", "read_error", "usage_from"]

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
        raise ModelResponseError("Anthropic answered without a message content list", provider=PROVIDER, body=data)
    return assemble(
        data["content"],
        data.get("stop_reason"),
        data.get("usage") or {},
        data.get("model"),
        output_tool,
        stop_details=data.get("stop_details"),
        response_id=data.get("id"),
        stop_sequence=data.get("stop_sequence"),
    )


def usage_from(usage: Mapping[str, Any]) -> Usage:
    """Anthropic usage as tooloop :class:`Usage`: Anthropic's ``input_tokens`` leaves out cache reads
    and writes, tooloop's includes them; one-hour writes (``cache_creation.ephemeral_1h_input_tokens``)
    are counted apart, for their higher price."""
    cache_read = usage.get("cache_read_input_tokens") or 0
    cache_write = usage.get("cache_creation_input_tokens") or 0
    creation = usage.get("cache_creation")
    hour = (creation.get("ephemeral_1h_input_tokens") or 0) if isinstance(creation, Mapping) else 0
    return Usage(
        input_tokens=(usage.get("input_tokens") or 0) + cache_read + cache_write,
        output_tokens=usage.get("output_tokens") or 0,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        cache_write_1h_tokens=min(hour, cache_write),
    )


def assemble(
    content: list[Any],
    stop_reason: str | None,
    usage: Mapping[str, Any],
    model: str | None,
    output_tool: str | None = None,
    *,
    stop_details: Mapping[str, Any] | None = None,
    response_id: Any = None,
    stop_sequence: Any = None,
) -> ModelResponse:
    """Build the response from content blocks in the shape of a plain ``Message``.

    A ``tool_use`` block's ``input`` may be a dict (plain) or the streamed JSON text. A refusal's
    ``stop_details`` (category, explanation) stay on the message, under
    ``provider_data["anthropic"]["stop_details"]``, and the refusal text is the
    model's text followed by the explanation. ``response_id`` and ``stop_sequence`` (set only when
    a stop sequence ended the answer) are kept when they are strings.
    """
    texts: list[str] = []
    thinking: list[ThinkingPart] = []
    calls: list[ToolCall] = []
    server = False
    for block in content:
        kind = block.get("type")
        if kind == "text":
            texts.append(block["text"])
        elif kind == "tool_use":
            calls.append(ToolCall(block["id"], block["name"], block.get("input") or {}))
        elif kind == "server_tool_use" or (isinstance(kind, str) and kind.endswith("_tool_result")):
            server = True
        elif kind == "thinking":
            signature = block.get("signature") or None
            thinking.append(ThinkingPart(block.get("thinking", ""), signature, provider=PROVIDER))
        elif kind == "redacted_thinking":
            thinking.append(ThinkingPart("", block.get("data"), redacted=True, provider=PROVIDER))
    text = "".join(texts)
    reason = _STOP_REASONS.get(stop_reason or "", StopReason.END_TURN)
    if output_tool is not None:
        text, calls = _take_output(text, calls, output_tool)
    if reason is StopReason.TOOL_USE and not calls:
        reason = StopReason.END_TURN
    refusal = _refusal(text, stop_details) if reason is StopReason.REFUSAL else None
    data: dict[str, Any] = {"stop_details": dict(stop_details)} if stop_details else {}
    provider_data: dict[str, Any] = {}
    if server:
        data["content"] = [_kept(block) for block in content]
        loaded = searched_tools(content)
        if loaded:
            provider_data[TOOL_SEARCH_KEY] = {"loaded": loaded}
    if data:
        provider_data[PROVIDER] = data
    return ModelResponse(
        text,
        tuple(calls),
        reason,
        usage_from(usage),
        thinking=tuple(thinking),
        refusal=refusal,
        model=model,
        provider_data=provider_data,
        response_id=response_id if isinstance(response_id, str) and response_id else None,
        stop_sequence=stop_sequence if isinstance(stop_sequence, str) else None,
    )


def _kept(block: Mapping[str, Any]) -> dict[str, Any]:
    """A block as it goes back in a later request; a ``tool_use`` block only by its id and name
    (it is rebuilt from the call, whose arguments the loop may have changed)."""
    if block.get("type") == "tool_use":
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name")}
    if block.get("type") == "server_tool_use" and isinstance(block.get("input"), str):
        return {**block, "input": _object(block["input"])}
    return dict(block)


def _object(text: str) -> Any:
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {}


def searched_tools(content: list[Any]) -> list[str]:
    """The tools the tool search tool's results in ``content`` loaded (``tool_reference`` blocks)."""
    names: list[str] = []
    for block in content:
        if block.get("type") != "tool_search_tool_result":
            continue
        result = block.get("content")
        references = result.get("tool_references") if isinstance(result, Mapping) else None
        for reference in references if isinstance(references, list) else ():
            name = reference.get("tool_name") if isinstance(reference, Mapping) else None
            if isinstance(name, str) and name not in names:
                names.append(name)
    return names


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


def read_error(error: StatusError | StreamError) -> ErrorBody:
    """The type, message and whole body of an Anthropic error (``{"type": "error", "error": {"type", "message"}}``)."""
    document = error.document if isinstance(error, StatusError) else error.body
    inner = document.get("error") if isinstance(document, dict) else None
    inner = inner if isinstance(inner, dict) else {}
    message = inner.get("message")
    if not isinstance(message, str) or not message:
        message = error.message if isinstance(error, StatusError) else str(inner or document)
    return [inner.get("type")], message, document
