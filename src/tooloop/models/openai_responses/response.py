"""Reading a Responses API answer (the plain body, or a stream's terminal ``response``) into one result.

The answer is read as the parsed wire JSON, whichever transport brought it, so both give the
same response for the same bytes. On the lean path its bytes are decoded by :func:`decode`, which
builds only the fields :func:`read` looks at (:class:`ResponseFields`): the answer repeats the
request's tools, instructions and settings, which nothing reads.
"""

from __future__ import annotations

from typing import Any, TypedDict

import msgspec

from ...errors import ModelResponseError, ProviderError
from ...messages import ModelResponse, StopReason, ThinkingPart, ToolCall, Usage
from ...transport.client import StatusError, StreamError, loads
from ..adapter import ErrorBody
from ..base import TOOL_SEARCH_KEY
from ..error_table import provider_error
from ..openai_chat.model import read_error as read_openai_error
from .request import PROVIDER

__all__ = ["ResponseFields", "decode", "read", "read_error"]


class ResponseFields(TypedDict, total=False):
    """The fields of a ``Response`` object that :func:`read` reads; a decoder given this type skips the others."""

    id: Any
    status: Any
    model: Any
    output: Any
    usage: Any
    incomplete_details: Any
    error: Any


_RESPONSE = msgspec.json.Decoder(ResponseFields)


def decode(body: bytes) -> Any:
    """A plain answer's bytes as :func:`read` takes them: the :class:`ResponseFields` of a response
    object, or anything else the body holds parsed as a whole (for the error that reports it, with
    the whole body; ``loads``'s error when it is no JSON)."""
    try:
        data = _RESPONSE.decode(body)
    except ValueError:  # not an object, or JSON only the standard library reads (a lone surrogate)
        return loads(body)
    return data if isinstance(data.get("output"), list) else loads(body)


def read(data: Any) -> ModelResponse:
    """The neutral response for a complete ``Response`` object (the plain body or the stream's last event's)."""
    if not isinstance(data, dict) or not isinstance(data.get("output"), list):
        raise ModelResponseError("the Responses API answered without an output list", provider=PROVIDER, body=data)
    if data.get("status") == "failed":
        raise _failure(data)
    text: list[str] = []
    refusal: list[str] = []
    thinking: list[ThinkingPart] = []
    reasoning: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    searched = False
    output = data["output"]
    for item in output:
        kind = item.get("type")
        if kind == "function_call":
            if item.get("status") in (None, "completed"):  # a call cut off by the token limit never runs
                calls.append(ToolCall(item.get("call_id"), item.get("name"), item.get("arguments") or "{}"))
        elif kind == "message":
            _message(item, text, refusal)
        elif kind == "reasoning":
            _reasoning(item, thinking, reasoning)
        elif kind in _SEARCH_ITEMS:
            searched = True
    if searched:
        provider_data = _searched(output)
    else:
        provider_data = {PROVIDER: {"reasoning": reasoning}} if reasoning else {}
    return ModelResponse(
        "".join(text),
        tuple(calls),
        _stop_reason(data, bool(calls), bool(refusal)),
        _usage(data.get("usage"), len(calls)),
        thinking=tuple(thinking),
        refusal="".join(refusal) or None,
        model=data.get("model"),
        provider_data=provider_data,
        response_id=data.get("id") or None,
    )


def _message(item: dict[str, Any], text: list[str], refusal: list[str]) -> None:
    for content in item.get("content") or ():
        part = content.get("type")
        if part == "output_text":
            text.append(content.get("text") or "")
        elif part == "refusal":
            refusal.append(content.get("refusal") or "")


_SEARCH_ITEMS = ("tool_search_call", "tool_search_output")


def _searched(output: list[Any]) -> dict[str, Any]:
    """What goes back with an answer where the provider's tool search ran: its reasoning and
    search items in their order ("items"), and the tools the search loaded (else its reasoning
    items alone go back, as :func:`read` keeps them)."""
    kept: list[dict[str, Any]] = []
    loaded: list[str] = []
    for item in output:
        kind = item.get("type")
        if kind == "reasoning" and (item.get("encrypted_content") or item.get("content")):
            kept.append(_sent_back(item))
        elif kind == "tool_search_call":
            kept.append(_without_none(item))
        elif kind == "tool_search_output":
            kept.append(_without_none(item))
            for tool in item.get("tools") or ():
                name = tool.get("name")
                if tool.get("type") == "function" and name not in loaded:
                    loaded.append(name)
    data: dict[str, Any] = {PROVIDER: {"items": kept}}
    if loaded:
        data[TOOL_SEARCH_KEY] = {"loaded": loaded}
    return data


def _reasoning(item: dict[str, Any], thinking: list[ThinkingPart], reasoning: list[dict[str, Any]]) -> None:
    """A reasoning item's thought (its summary, else its reasoning text: gpt-oss on LM Studio or
    vLLM) and, when it carries what the server needs back to go on, the item to send back."""
    summary = item.get("summary") or ()
    content = item.get("content") or ()
    thought = "\n\n".join(s.get("text") or "" for s in summary) or "".join(c.get("text") or "" for c in content)
    if thought:
        thinking.append(ThinkingPart(thought, provider=PROVIDER))
    if item.get("encrypted_content") or content:
        reasoning.append(_sent_back(item))


def _sent_back(item: dict[str, Any]) -> dict[str, Any]:
    """A reasoning item as it is sent back: no null fields, no status (an input item takes none)."""
    kept: dict[str, Any] = _without_none(item)
    kept.pop("status", None)
    return kept


def _without_none(value: Any) -> Any:
    """``value`` without the fields that are null, at every depth (as the item would be sent back)."""
    if isinstance(value, dict):
        return {key: _without_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_none(item) for item in value]
    return value


def _stop_reason(data: dict[str, Any], has_calls: bool, refused: bool) -> StopReason:
    if data.get("status") == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        if reason == "content_filter":
            return StopReason.REFUSAL
        return StopReason.MAX_TOKENS
    if refused:
        return StopReason.REFUSAL
    return StopReason.TOOL_USE if has_calls else StopReason.END_TURN


def _usage(usage: Any, tool_calls: int) -> Usage:
    if not isinstance(usage, dict):  # parsed JSON, whichever transport brought it
        return Usage(tool_calls=tool_calls)
    inputs = usage.get("input_tokens_details")
    outputs = usage.get("output_tokens_details")
    return Usage(
        input_tokens=usage.get("input_tokens") or 0,
        output_tokens=usage.get("output_tokens") or 0,
        tool_calls=tool_calls,
        cache_read_tokens=(inputs.get("cached_tokens") or 0) if isinstance(inputs, dict) else 0,
        reasoning_tokens=(outputs.get("reasoning_tokens") or 0) if isinstance(outputs, dict) else 0,
    )


def _failure(data: dict[str, Any]) -> ProviderError:
    error = data.get("error")
    if not isinstance(error, dict):
        return ModelResponseError("OpenAI response failed without an error", provider=PROVIDER)
    message = error.get("message")
    return provider_error(
        PROVIDER,
        status=None,
        codes=[error.get("code")],
        message=message if isinstance(message, str) else "",
        body=error,
    )


def read_error(error: StatusError | StreamError) -> ErrorBody:
    """An ``error`` event of the stream (``{"type": "error", "code", "message"}``), else an OpenAI-style
    error (``{"error": {"message", "type", "code"}}``), as Chat Completions writes it."""
    body = error.body
    if isinstance(error, StreamError) and isinstance(body, dict) and body.get("type") == "error":
        message = body.get("message")
        return [body.get("code")], message if isinstance(message, str) and message else error.message, body
    return read_openai_error(error)
