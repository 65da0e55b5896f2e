"""Reading a Responses API answer (the plain ``Response`` or a stream's terminal one) into one result."""

from __future__ import annotations

from typing import Any

from openai.types.responses import Response

from ...errors import ModelResponseError, ProviderError
from ...messages import ModelResponse, StopReason, ThinkingPart, ToolCall, Usage
from ...transport.client import StatusError, StreamError
from ..adapter import ErrorBody
from ..base import TOOL_SEARCH_KEY
from ..error_table import provider_error
from ..openai_chat.model import read_error as read_openai_error
from .request import PROVIDER

__all__ = ["read", "read_error"]


def read(response: Response) -> ModelResponse:
    """The neutral response for a complete ``Response`` (the plain body or the stream's last event)."""
    if response.status == "failed":
        raise _failure(response)
    text: list[str] = []
    refusal: list[str] = []
    thinking: list[ThinkingPart] = []
    reasoning: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    for item in response.output:
        if item.type == "message":
            for content in item.content:
                if content.type == "output_text":
                    text.append(content.text)
                elif content.type == "refusal":
                    refusal.append(content.refusal)
        elif item.type == "function_call":
            if item.status in (None, "completed"):  # a call cut off by the token limit never runs
                calls.append(ToolCall(item.call_id, item.name, item.arguments or "{}"))
        elif item.type == "reasoning":
            # A summary (OpenAI), else the reasoning text itself (gpt-oss on LM Studio or vLLM).
            thought = "\n\n".join(s.text for s in item.summary) or "".join(c.text for c in item.content or ())
            if thought:
                thinking.append(ThinkingPart(thought, provider=PROVIDER))
            if item.encrypted_content or item.content:  # what the server needs back to go on
                reasoning.append(item.model_dump(mode="json", exclude_none=True, exclude={"status"}))
    return ModelResponse(
        "".join(text),
        tuple(calls),
        _stop_reason(response, bool(calls), bool(refusal)),
        _usage(response, len(calls)),
        thinking=tuple(thinking),
        refusal="".join(refusal) or None,
        model=response.model,
        provider_data=_provider_data(response, reasoning),
        response_id=response.id or None,
    )


_SEARCH_ITEMS = ("tool_search_call", "tool_search_output")


def _provider_data(response: Response, reasoning: list[dict[str, Any]]) -> dict[str, Any]:
    """What goes back with the answer: its reasoning items or, when the provider's tool search
    ran, its reasoning and search items in their order ("items"), and the tools the search loaded."""
    if not any(item.type in _SEARCH_ITEMS for item in response.output):
        return {PROVIDER: {"reasoning": reasoning}} if reasoning else {}
    kept: list[dict[str, Any]] = []
    loaded: list[str] = []
    for item in response.output:
        if item.type == "reasoning" and (item.encrypted_content or item.content):
            kept.append(item.model_dump(mode="json", exclude_none=True, exclude={"status"}))
        elif item.type == "tool_search_call":
            kept.append(item.model_dump(mode="json", exclude_none=True))
        elif item.type == "tool_search_output":
            kept.append(item.model_dump(mode="json", exclude_none=True))
            loaded.extend(t.name for t in item.tools if t.type == "function" and t.name not in loaded)
    data: dict[str, Any] = {PROVIDER: {"items": kept}}
    if loaded:
        data[TOOL_SEARCH_KEY] = {"loaded": loaded}
    return data


def _stop_reason(response: Response, has_calls: bool, refused: bool) -> StopReason:
    if response.status == "incomplete":
        reason = response.incomplete_details.reason if response.incomplete_details else None
        if reason == "content_filter":
            return StopReason.REFUSAL
        return StopReason.MAX_TOKENS
    if refused:
        return StopReason.REFUSAL
    return StopReason.TOOL_USE if has_calls else StopReason.END_TURN


def _usage(response: Response, tool_calls: int) -> Usage:
    usage = response.usage
    if usage is None:
        return Usage(tool_calls=tool_calls)
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        tool_calls=tool_calls,
        cache_read_tokens=usage.input_tokens_details.cached_tokens or 0,
        reasoning_tokens=usage.output_tokens_details.reasoning_tokens or 0,
    )


def _failure(response: Response) -> ProviderError:
    error = response.error
    if error is None:
        return ModelResponseError("OpenAI response failed without an error", provider=PROVIDER)
    body = error.model_dump(mode="json")
    return provider_error(PROVIDER, status=None, codes=[error.code], message=error.message, body=body)


def read_error(error: StatusError | StreamError) -> ErrorBody:
    """An ``error`` event of the stream (``{"type": "error", "code", "message"}``), else an OpenAI-style
    error (``{"error": {"message", "type", "code"}}``), as Chat Completions writes it."""
    body = error.body
    if isinstance(error, StreamError) and isinstance(body, dict) and body.get("type") == "error":
        message = body.get("message")
        return [body.get("code")], message if isinstance(message, str) and message else error.message, body
    return read_openai_error(error)
