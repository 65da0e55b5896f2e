"""Reading a plain Chat Completions answer; what it shares with the stream reader (:mod:`.stream`).

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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..._frozen import draft_of, new_draft
from ...errors import ModelResponseError
from ...messages import ModelResponse, StopReason, ThinkingPart, ToolCall, Usage
from ..error_table import provider_error
from .chunks import ChunkDetails, ChunkUsage
from .reasoning import DETAILS, details_text, split_content

if TYPE_CHECKING:
    from decimal import Decimal

__all__ = ["build_response", "chunk_usage", "intact", "parse_completion", "raise_embedded_error", "usage_from"]

_RawCall = tuple[str | None, str, str]
"""(id as sent or None, name, arguments text) of one tool call before ids are made unique."""


def usage_from(data: Mapping[str, Any] | None) -> Usage:
    """Usage from a Chat Completions ``usage`` object (cached and reasoning tokens included).

    ``prompt_tokens`` already includes cached tokens. Cache reads are
    ``prompt_tokens_details.cached_tokens`` (DeepSeek: ``prompt_cache_hit_tokens``), cache writes
    ``prompt_tokens_details.cache_write_tokens`` (OpenRouter). A server that bills the request in
    ``usage.cost`` (OpenRouter, in US dollars) gives the request its cost: the invoice's own figure.
    """
    if not data:
        return Usage()
    get = data.get
    prompt_details = get("prompt_tokens_details") or _NO_DETAILS
    completion_details = get("completion_tokens_details") or _NO_DETAILS
    return _usage(
        get("prompt_tokens"),
        get("completion_tokens"),
        prompt_details.get("cached_tokens") or get("prompt_cache_hit_tokens"),
        prompt_details.get("cache_write_tokens"),
        completion_details.get("reasoning_tokens"),
        get("cost"),
    )


def chunk_usage(usage: ChunkUsage | None) -> Usage:
    """:func:`usage_from` for a streamed chunk's ``usage``, decoded as a record."""
    if usage is None:
        return Usage()
    prompt = usage.prompt_tokens_details or _NO_CHUNK_DETAILS
    completion = usage.completion_tokens_details or _NO_CHUNK_DETAILS
    return _usage(
        usage.prompt_tokens,
        usage.completion_tokens,
        prompt.cached_tokens or usage.prompt_cache_hit_tokens,
        prompt.cache_write_tokens,
        completion.reasoning_tokens,
        usage.cost,
    )


def _usage(prompt: Any, completion: Any, cached: Any, written: Any, reasoning: Any, cost: Any) -> Usage:
    made = new_draft(_UsageDraft)  # Usage(...) with every field given
    made.input_tokens = prompt or 0
    made.output_tokens = completion or 0
    made.requests = 0
    made.tool_calls = 0
    made.cache_read_tokens = cached or 0
    made.cache_write_tokens = written or 0
    made.reasoning_tokens = reasoning or 0
    made.cost = None if cost is None else _billed(cost)
    made.estimated = False
    made.cache_write_1h_tokens = 0
    made.__class__ = Usage
    usage: Usage = made
    return usage


# A response's ModelResponse, Usage and ToolCalls are filled through drafts (see tooloop._frozen):
# every field set here, one class assignment instead of a frozen __init__'s checks and calls.
_ModelResponseDraft = draft_of(ModelResponse)
_UsageDraft = draft_of(Usage)
_ToolCallDraft = draft_of(ToolCall)


_NO_DETAILS: Mapping[str, Any] = {}
_NO_CHUNK_DETAILS = ChunkDetails()


def _billed(cost: Any) -> Decimal | None:
    """A cost the server reported, when it is a finite, non-negative number."""
    if isinstance(cost, bool) or not isinstance(cost, int | float | str):
        return None
    from decimal import Decimal  # only servers that bill in the answer need it (OpenRouter)

    try:
        value = Decimal(str(cost))
    except ArithmeticError:
        return None
    return value if value.is_finite() and value >= 0 else None


def build_response(
    *,
    text: str,
    refusal: str,
    calls: list[_RawCall],
    finish_reason: str | None,
    usage: Usage,
    model: str | None,
    reasoning: str,
    provider: str,
    signature: str | None = None,
    details: list[dict[str, Any]] | None = None,
    response_id: str | None = None,
    stop_sequence: Any = None,
) -> ModelResponse:
    """The neutral response for the parts of one answer, whichever path read them.

    ``signature`` signs the reasoning (a Mistral thinking chunk's); ``details`` are the answer's
    ``reasoning_details`` blocks, kept in ``provider_data[provider]`` to go back as they came.
    ``stop_sequence`` is a choice's ``stop_reason`` (vLLM names the stop string that ended the
    answer there), kept when the answer stopped normally and it is a string.
    """
    truncated = finish_reason == "length"
    tool_calls = _tool_calls(calls, truncated) if calls else ()
    if details:
        reasoning = reasoning or details_text(details)
    made = new_draft(_ModelResponseDraft)  # ModelResponse(...) with every field given
    made.text = intact(text)
    made.tool_calls = tool_calls
    made.stop_reason = _stop_reason(finish_reason, bool(tool_calls), bool(refusal))
    made.usage = usage
    made.thinking = (ThinkingPart(intact(reasoning), signature=signature, provider=provider),) if reasoning else ()
    made.refusal = intact(refusal) or None
    made.model = model or None
    made.provider_data = {provider: {DETAILS: details}} if details else {}
    made.response_id = response_id or None
    made.stop_sequence = stop_sequence if finish_reason == "stop" and isinstance(stop_sequence, str) else None
    made.tokens = None
    made.__class__ = ModelResponse
    response: ModelResponse = made
    return response


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
            arguments = intact(arguments)
            if not arguments.strip():
                arguments = "{}"
        made = new_draft(_ToolCallDraft)  # ToolCall(call_id, name, arguments)
        made.id = call_id
        made.name = name
        made.arguments = arguments
        made.provider_data = None
        made.__class__ = ToolCall
        out.append(made)
    return tuple(out)


def intact(text: str) -> str:
    """``text`` with surrogate pairs that arrived as separate ``\\u`` escapes joined again."""
    if text.isascii():  # the usual case, known without a copy (a surrogate is never ASCII)
        return text
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


def _content(content: Any) -> tuple[str, str, str | None]:
    """``(text, thinking, signature)`` of a message's content: text, or a list of typed chunks."""
    if isinstance(content, list):  # content parts; Mistral's reasoning models put thinking there too
        return split_content(p for p in content if isinstance(p, dict))
    if content and not isinstance(content, str):
        raise ModelResponseError(f"unexpected message content: {content!r}"[:300])
    return content or "", "", None


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
        raise_embedded_error(data, provider)
        raise ModelResponseError(f"{provider} returned a chat completion without choices", provider=provider, body=data)
    choice = choices[0]
    message = choice.get("message") or {}
    calls: list[_RawCall] = []
    for item in message.get("tool_calls") or ():
        function = item.get("function") or {}
        calls.append((item.get("id"), function.get("name") or "", _arguments_text(function.get("arguments"))))
    legacy = message.get("function_call")
    if legacy and legacy.get("name"):  # servers that fill every field send an empty one: no call
        calls.append((None, legacy["name"], _arguments_text(legacy.get("arguments"))))
    content = message.get("content")
    text, thinking, signature = (content, "", None) if type(content) is str else _content(content)
    details = message.get(DETAILS)
    return build_response(
        text=text,
        refusal=message.get("refusal") or "",
        calls=calls,
        finish_reason=choice.get("finish_reason") or None,
        usage=usage_from(data.get("usage")),
        model=data.get("model"),
        reasoning=message.get("reasoning_content") or message.get("reasoning") or thinking,
        provider=provider,
        signature=signature,
        details=details if isinstance(details, list) and details else None,
        response_id=_text_or_none(data.get("id")),
        stop_sequence=choice.get("stop_reason"),
    )


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def raise_embedded_error(data: Mapping[str, Any], provider: str) -> None:
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
