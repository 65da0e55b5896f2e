"""Building a Responses API request: instructions, input items, tools, output format, settings.

Requests are stateless (``store=False``): reasoning items kept from earlier responses
(``provider_data["openai-responses"]``) are sent back with the conversation, and so are the
items of the provider's tool search (``tool_search_call``, ``tool_search_output``) in the order
they came, when the request uses it (``ModelRequest.tool_search``: a ``tool_search`` tool first,
deferred functions marked ``defer_loading``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, assert_never

from ...errors import ConfigurationError
from ...messages import (
    AssistantMessage,
    AudioContent,
    DocumentContent,
    ImageContent,
    Message,
    SystemMessage,
    TextContent,
    UserMessage,
    UserPart,
)
from ...outcome import ToolOutcome, for_model, native_parts
from ..base import MemoKey, ModelRequest, ModelSettings, ToolDefinition
from ..inputs import data_url, file_name, refuse
from ..openai_chat.schema import strict_schema
from ..portable import BatchMemo, IdMapper, ToolBatch, Turn, batch_memo, encode_arguments, turns

__all__ = ["INPUT_KINDS", "PROVIDER", "ResponsesRequest"]


def _cache_key(request: ModelRequest, settings: ModelSettings) -> dict[str, str]:
    """``prompt_cache_key`` for automatic caching, unless the caller sets one in ``extra``."""
    if request.cache_key is None or settings.cache not in (None, "auto") or "prompt_cache_key" in settings.extra:
        return {}
    return {"prompt_cache_key": request.cache_key}


PROVIDER = "openai-responses"
INPUT_KINDS = frozenset({"image", "document"})
"""What a Responses request's user message takes besides text: ``input_image`` and ``input_file``."""


class ResponsesRequest:
    """The request arguments of one model: its name, what it includes, its reasoning options."""

    def __init__(self, model: str, *, include: list[str] | None, reasoning: dict[str, Any] | None) -> None:
        self.model = model
        self._include = include
        self._reasoning = reasoning
        self._tools_in: tuple[tuple[ToolDefinition, ...], bool] | None = None
        self._tools_out: list[dict[str, Any]] = []
        self._batches: MemoKey[BatchMemo[list[dict[str, Any]]]] = MemoKey("openai_responses batches")

    def _tools(self, request: ModelRequest) -> list[dict[str, Any]]:
        """The tools' specs, made again only when they change (the same definitions every turn)."""
        key = (request.tools, request.tool_search)
        if key != self._tools_in:
            self._tools_out = _tools(request)
            self._tools_in = key
        return self._tools_out

    def params(self, request: ModelRequest, settings: ModelSettings) -> dict[str, Any]:
        """The request body for ``request`` with the merged ``settings`` (``settings.extra`` included)."""
        if settings.stop is not None or settings.seed is not None:
            raise ConfigurationError("the OpenAI Responses API has no 'stop' or 'seed' setting; use 'openai:' models")
        batches = batch_memo(request, self._batches)
        instructions, items = _input(request.messages, self.model, batches, request.tool_search)
        params: dict[str, Any] = {"model": self.model, "input": items, "store": False}
        if instructions:
            params["instructions"] = instructions
        if self._include:
            params["include"] = self._include
        if self._reasoning:
            params["reasoning"] = self._reasoning
        if request.tools:
            params["tools"] = self._tools(request)
            params["tool_choice"] = request.tool_choice
        output = request.output
        if output is not None:
            fmt: dict[str, Any] = {
                "type": "json_schema",
                "name": output.name,
                "schema": strict_schema(output.schema) if output.strict else dict(output.schema),
                "strict": output.strict,
            }
            if output.description:
                fmt["description"] = output.description
            params["text"] = {"format": fmt}
        for name, value in (
            ("temperature", settings.temperature),
            ("max_output_tokens", settings.max_tokens),
            ("top_p", settings.top_p),
            ("parallel_tool_calls", settings.parallel_tool_calls),
        ):
            if value is not None:
                params[name] = value
        params.update(_cache_key(request, settings))
        if settings.extra:  # over the body, as the SDK's extra_body goes
            params.update(settings.extra)
        return params


def _tools(request: ModelRequest) -> list[dict[str, Any]]:
    """The function tools, after the hosted ``tool_search`` (deferred ones marked) when it is used."""
    tools: list[dict[str, Any]] = [{"type": "tool_search"}] if request.tool_search else []
    for t in request.tools:
        spec = {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": strict_schema(t.parameters) if t.strict else dict(t.parameters),
            "strict": bool(t.strict),
        }
        if t.defer_loading and request.tool_search:
            spec["defer_loading"] = True
        tools.append(spec)
    return tools


def _input(
    messages: Sequence[Message], model: str, batches: BatchMemo[list[dict[str, Any]]], tool_search: bool = False
) -> tuple[str, list[dict[str, Any]]]:
    """``instructions`` (the leading system messages) and the input items; a tool batch's items
    made once for all the requests that send it (``batches``: its messages never change, and
    neither do the ids, a rewrite depending on the id alone)."""
    ids = IdMapper()
    leading: list[str] = []
    items: list[dict[str, Any]] = []
    for item in turns(messages):
        if isinstance(item, ToolBatch):
            made = batches.get(item.calls, tool_search)
            if made is None:
                made = batches.put(item.calls, _batch_items(item, ids, tool_search), tool_search)
            items.extend(made)  # a copy of the list; no item is changed afterwards
        elif isinstance(item, SystemMessage) and not items:
            leading.append(item.text)
        else:
            items.extend(_items(item, ids, model, tool_search))
    return "\n\n".join(leading), items


def _items(item: Turn, ids: IdMapper, model: str, tool_search: bool = False) -> list[dict[str, Any]]:
    if isinstance(item, SystemMessage):
        return [{"type": "message", "role": "developer", "content": item.text}]
    if isinstance(item, UserMessage):
        content = [_input_part(part, model) for part in item.parts] if item.parts else item.text
        return [{"type": "message", "role": "user", "content": content}]
    if isinstance(item, AssistantMessage):
        text = item.text or item.refusal
        return _reasoning(item.provider_data, tool_search) + ([_output_message(text)] if text else [])
    if isinstance(item, ToolBatch):
        return _batch_items(item, ids, tool_search)
    assert_never(item)


def _input_part(part: UserPart, model: str) -> dict[str, Any]:
    """A user message's content part: ``input_text``, ``input_image`` or ``input_file``."""
    if isinstance(part, TextContent):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, ImageContent):
        return {"type": "input_image", "image_url": data_url(part), "detail": "auto"}
    if isinstance(part, DocumentContent):
        return {"type": "input_file", "filename": file_name(part), "file_data": data_url(part)}
    if isinstance(part, AudioContent):
        raise refuse(part, f"{PROVIDER} model {model!r}", "text, image, document (the Responses API takes no audio)")
    assert_never(part)


_SEARCH_ITEMS = frozenset({"tool_search_call", "tool_search_output"})


def _reasoning(provider_data: Mapping[str, Any], tool_search: bool = False) -> list[dict[str, Any]]:
    """The reasoning items of an answer, with its tool search items in their order ("items")
    when the request uses tool search (the API takes no search output without the search tool)."""
    data = provider_data.get(PROVIDER) or {}
    kept = data.get("items") or data.get("reasoning") or ()
    return [_plain(r) for r in kept if tool_search or r.get("type") not in _SEARCH_ITEMS]


def _plain(value: Any) -> Any:
    """A stored item as plain JSON values (stores hand back read-only mappings)."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _output_message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _batch_items(batch: ToolBatch, ids: IdMapper, tool_search: bool = False) -> list[dict[str, Any]]:
    items = _reasoning(batch.first.provider_data, tool_search)
    if batch.text:
        items.append(_output_message(batch.text))
    outputs: list[dict[str, Any]] = []
    for call in batch.calls:
        call_id = ids(call.tool_call_id)
        arguments = call.raw_arguments if call.raw_arguments is not None else encode_arguments(call.arguments)
        items.append({"type": "function_call", "call_id": call_id, "name": call.tool_name, "arguments": arguments})
        outputs.append({"type": "function_call_output", "call_id": call_id, "output": _output(for_model(call))})
    return items + outputs


_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def _output(outcome: ToolOutcome) -> str | list[dict[str, Any]]:
    """The text of the outcome, or its text and images as input items when it has images."""
    native = native_parts(outcome, _IMAGE_TYPES)
    if native is None:
        return outcome.text
    return [_output_item(part) for part in native]


def _output_item(part: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(part, TextContent):
        return {"type": "input_text", "text": part.text}
    return {"type": "input_image", "image_url": f"data:{part.mime_type};base64,{part.data}"}
