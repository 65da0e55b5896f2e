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

from ..._frozen import draft_of, new_draft
from ...errors import ModelResponseError
from ...messages import ModelResponse, StopReason, ThinkingPart, ToolCall, Usage
from ...transport.client import StatusError, StreamError
from ..adapter import ErrorBody
from ..base import TOOL_SEARCH_KEY
from .request import PROVIDER

__all__ = ["PROVIDER", "assemble", "parse_message", "read_error", "respond", "tool_call", "usage_from"]

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


# A response's ModelResponse, Usage and ToolCalls are filled through drafts (see tooloop._frozen):
# every field is set here, and a response is read for every turn of every conversation.
_ModelResponseDraft = draft_of(ModelResponse)
_UsageDraft = draft_of(Usage)
_ToolCallDraft = draft_of(ToolCall)


def usage_from(usage: Mapping[str, Any]) -> Usage:
    """Anthropic usage as tooloop :class:`Usage`: Anthropic's ``input_tokens`` leaves out cache reads
    and writes, tooloop's includes them; one-hour writes (``cache_creation.ephemeral_1h_input_tokens``)
    are counted apart, for their higher price."""
    get = usage.get
    cache_read = get("cache_read_input_tokens") or 0
    cache_write = get("cache_creation_input_tokens") or 0
    creation = get("cache_creation")
    # a dict as parsed, checked first: an isinstance check against the Mapping ABC costs more
    readable = type(creation) is dict or isinstance(creation, Mapping)
    hour = (creation.get("ephemeral_1h_input_tokens") or 0) if readable else 0  # type: ignore[union-attr]
    made = new_draft(_UsageDraft)  # Usage(...) with every field given
    made.input_tokens = (get("input_tokens") or 0) + cache_read + cache_write
    made.output_tokens = get("output_tokens") or 0
    made.requests = 0
    made.tool_calls = 0
    made.cache_read_tokens = cache_read
    made.cache_write_tokens = cache_write
    made.reasoning_tokens = 0
    made.cost = None
    made.estimated = False
    made.cache_write_1h_tokens = min(hour, cache_write)
    made.__class__ = Usage
    out: Usage = made
    return out


def tool_call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    """``ToolCall(call_id, name, arguments)``, filled through a draft."""
    made = new_draft(_ToolCallDraft)
    made.id = call_id
    made.name = name
    made.arguments = arguments
    made.provider_data = None
    made.__class__ = ToolCall
    call: ToolCall = made
    return call


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
            calls.append(tool_call(block["id"], block["name"], block.get("input") or {}))
        elif kind == "server_tool_use" or (isinstance(kind, str) and kind.endswith("_tool_result")):
            server = True
        elif kind == "thinking":
            signature = block.get("signature") or None
            thinking.append(ThinkingPart(block.get("thinking", ""), signature, provider=PROVIDER))
        elif kind == "redacted_thinking":
            thinking.append(ThinkingPart("", block.get("data"), redacted=True, provider=PROVIDER))
    return respond(
        texts,
        calls,
        thinking,
        content if server else None,
        stop_reason,
        usage,
        model,
        output_tool,
        stop_details,
        response_id,
        stop_sequence,
    )


def respond(
    texts: list[str],
    calls: list[ToolCall],
    thinking: list[ThinkingPart],
    server_content: list[Any] | None,
    stop_reason: str | None,
    usage: Mapping[str, Any],
    model: str | None,
    output_tool: str | None,
    stop_details: Mapping[str, Any] | None,
    response_id: Any,
    stop_sequence: Any,
) -> ModelResponse:
    """What :func:`assemble` makes of the blocks once sorted out: the answer's texts, calls and
    thinking in order, and its whole content when it has server blocks (else None)."""
    text = texts[0] if len(texts) == 1 else "".join(texts)
    reason = _STOP_REASONS.get(stop_reason or "", StopReason.END_TURN)
    if output_tool is not None:
        text, calls = _take_output(text, calls, output_tool)
    if reason is StopReason.TOOL_USE and not calls:
        reason = StopReason.END_TURN
    refusal = _refusal(text, stop_details) if reason is StopReason.REFUSAL else None
    provider_data: dict[str, Any] = {}
    if stop_details or server_content is not None:
        data: dict[str, Any] = {"stop_details": dict(stop_details)} if stop_details else {}
        if server_content is not None:
            data["content"] = [_kept(block) for block in server_content]
            loaded = searched_tools(server_content)
            if loaded:
                provider_data[TOOL_SEARCH_KEY] = {"loaded": loaded}
        provider_data[PROVIDER] = data
    made = new_draft(_ModelResponseDraft)  # ModelResponse(...) with every field given
    made.text = text
    made.tool_calls = tuple(calls)
    made.stop_reason = reason
    made.usage = usage_from(usage)
    made.thinking = tuple(thinking) if thinking else ()
    made.refusal = refusal
    made.model = model
    made.provider_data = provider_data
    made.response_id = response_id if isinstance(response_id, str) and response_id else None
    made.stop_sequence = stop_sequence if isinstance(stop_sequence, str) else None
    made.tokens = None
    made.__class__ = ModelResponse
    response: ModelResponse = made
    return response


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
