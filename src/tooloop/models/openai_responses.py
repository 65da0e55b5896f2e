"""OpenAI Responses API adapter on the official ``openai`` SDK (``"openai-responses:..."``).

Requests are stateless: ``store=False`` and, for reasoning models, ``include=["reasoning.encrypted_content"]``,
so a response's reasoning items (kept in ``provider_data["openai-responses"]``) can be sent back
with the conversation instead of being looked up on OpenAI's servers. See
docs/providers.md.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, assert_never, cast

import openai
from openai.types.responses import Response

from ..errors import ConfigurationError, ModelResponseError, ProviderConnectionError, ProviderError
from ..events import EventHandler, TextDelta, ThinkingDelta, ToolCallDelta
from ..messages import (
    AssistantMessage,
    ImageContent,
    Message,
    ModelResponse,
    StopReason,
    SystemMessage,
    TextContent,
    ThinkingPart,
    ToolCall,
    Usage,
    UserMessage,
)
from ..outcome import ToolOutcome, for_model, native_parts
from ._adapter import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, ProviderModel, check_retries, idle_timeout
from ._errors import provider_error
from ._openai_schema import strict_schema
from ._per_loop import PerLoop
from .base import ModelRequest, ModelSettings
from .openai_chat import openai_codes
from .portable import IdMapper, ToolBatch, Turn, turns

__all__ = ["OpenAIResponsesModel", "create"]

PROVIDER = "openai-responses"
_NO_REASONING = re.compile(r"^(gpt-4|gpt-3\.5|chatgpt-4o)")
_OPTIONS = frozenset({"max_retries", "timeout", "reasoning", "include_reasoning", "client", "api_key_env"})


def create(
    model_name: str,
    *,
    provider: str = PROVIDER,
    base_url: str | None = None,
    api_key: str | None = None,
    settings: ModelSettings | None = None,
    **options: Any,
) -> OpenAIResponsesModel:
    """Registry factory for ``"openai-responses:<model>"``.

    Options: ``max_retries`` (default 2, done by the SDK, honouring ``Retry-After``), ``timeout``
    (seconds without a byte), ``reasoning`` (the request's ``reasoning`` object, e.g.
    ``{"effort": "low", "summary": "auto"}``), ``include_reasoning`` (request encrypted reasoning;
    default: on unless the model name starts with gpt-4/gpt-3.5), ``client`` (a ready
    ``AsyncOpenAI``), ``api_key_env`` (the key variable, ``OPENAI_API_KEY``).
    """
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ConfigurationError(f"unknown option(s) for {provider!r} models: {', '.join(unknown)}")
    return OpenAIResponsesModel(
        model_name, base_url=base_url, api_key=api_key, settings=settings, provider=provider, **options
    )


class OpenAIResponsesModel(ProviderModel):
    """An OpenAI model behind the ``Model`` protocol, through ``client.responses.create``.

    The API key is ``api_key``, else ``OPENAI_API_KEY``.
    """

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        settings: ModelSettings | None = None,
        provider: str = PROVIDER,
        max_retries: int = 2,
        timeout: float = DEFAULT_TIMEOUT,
        reasoning: Mapping[str, Any] | None = None,
        include_reasoning: bool | None = None,
        client: openai.AsyncOpenAI | None = None,
        api_key_env: str = "OPENAI_API_KEY",
    ):
        if include_reasoning is None:
            include_reasoning = reasoning is not None or not _NO_REASONING.match(model_name)
        self._reasoning = dict(reasoning) if reasoning else None
        self._include = ["reasoning.encrypted_content"] if include_reasoning else None
        if client is None:
            make = functools.partial(
                _client,
                api_key or os.environ.get(api_key_env),
                api_key_env,
                base_url,
                check_retries(max_retries),
                idle_timeout(timeout),
            )
            client = make()
            clients = PerLoop(client, make, _close)
        else:
            clients = PerLoop(client, None, _close)
        read = client.timeout.read if isinstance(client.timeout, openai.Timeout) else client.timeout
        self._init_common(
            model_name,
            provider=provider,
            settings=settings,
            clients=clients,
            secret=client.api_key,
            attempts=client.max_retries + 1,
            idle_timeout=read,
        )

    @property
    def base_url(self) -> str:
        """The API's base URL (``.../v1``)."""
        return str(self._clients.first.base_url)

    async def _send(
        self, request: ModelRequest, settings: ModelSettings, stream: bool, on_event: EventHandler | None
    ) -> ModelResponse:
        params = self._params(request, settings)
        self._sent({**params, "stream": True} if stream else params)
        if not stream:
            response = await self._clients.get().responses.create(**params)
            self._received(response)
            return _read(response)
        events = await self._clients.get().responses.create(**params, stream=True)
        try:
            return await _Streamer(on_event).run(self._tapped(events))
        except ProviderError:
            raise
        except Exception as exc:  # the stream broke after the request succeeded: no retry was made
            self._fail(exc, 1)
        finally:
            await events.close()

    def _error(self, exc: Exception, attempts: int) -> ProviderError | None:
        if isinstance(exc, openai.APITimeoutError):
            return self._transport_error(exc, attempts, timed_out=True)
        if isinstance(exc, openai.APIConnectionError):
            return self._transport_error(exc, attempts, timed_out=False)
        if isinstance(exc, openai.APIError):
            status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
            return provider_error(
                self.provider,
                status=status,
                codes=openai_codes(exc.body, exc.code, exc.type),
                message=exc.message,
                headers=exc.response.headers if isinstance(exc, openai.APIStatusError) else None,
                body=exc.body,
                secret=self._secret,
            )
        return None

    def _params(self, request: ModelRequest, settings: ModelSettings) -> dict[str, Any]:
        if settings.stop is not None or settings.seed is not None:
            raise ConfigurationError("the OpenAI Responses API has no 'stop' or 'seed' setting; use 'openai:' models")
        instructions, items = _input(request.messages)
        params: dict[str, Any] = {"model": self._name, "input": items, "store": False}
        if instructions:
            params["instructions"] = instructions
        if self._include:
            params["include"] = self._include
        if self._reasoning:
            params["reasoning"] = self._reasoning
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": strict_schema(t.parameters) if t.strict else dict(t.parameters),
                    "strict": bool(t.strict),
                }
                for t in request.tools
            ]
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
        if settings.extra:
            params["extra_body"] = dict(settings.extra)
        return params


def _client(
    key: str | None, key_env: str, base_url: str | None, max_retries: int, timeout: float
) -> openai.AsyncOpenAI:
    if not key:
        raise ConfigurationError(f"no OpenAI API key: pass api_key=... or set {key_env} in the environment")
    return openai.AsyncOpenAI(
        api_key=key,
        base_url=base_url,
        max_retries=max_retries,
        timeout=openai.Timeout(timeout, connect=min(timeout, DEFAULT_CONNECT_TIMEOUT)),
    )


# ----------------------------------------------------------------------------------------------
# Request


def _input(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """``instructions`` (the leading system messages) and the input items."""
    ids = IdMapper()
    leading: list[str] = []
    items: list[dict[str, Any]] = []
    for item in turns(messages):
        if isinstance(item, SystemMessage) and not items:
            leading.append(item.text)
        else:
            items.extend(_items(item, ids))
    return "\n\n".join(leading), items


def _items(item: Turn, ids: IdMapper) -> list[dict[str, Any]]:
    if isinstance(item, SystemMessage):
        return [{"type": "message", "role": "developer", "content": item.text}]
    if isinstance(item, UserMessage):
        return [{"type": "message", "role": "user", "content": item.text}]
    if isinstance(item, AssistantMessage):
        text = item.text or item.refusal
        return _reasoning(item.provider_data) + ([_output_message(text)] if text else [])
    if isinstance(item, ToolBatch):
        return _batch_items(item, ids)
    assert_never(item)


def _reasoning(provider_data: Mapping[str, Any]) -> list[dict[str, Any]]:
    data = provider_data.get(PROVIDER) or {}
    return [dict(r) for r in data.get("reasoning") or ()]


def _output_message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _batch_items(batch: ToolBatch, ids: IdMapper) -> list[dict[str, Any]]:
    items = _reasoning(batch.first.provider_data)
    if batch.text:
        items.append(_output_message(batch.text))
    outputs: list[dict[str, Any]] = []
    for call in batch.calls:
        call_id = ids(call.tool_call_id)
        arguments = call.raw_arguments if call.raw_arguments is not None else _json_text(call.arguments)
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


def _json_text(arguments: Mapping[str, Any]) -> str:
    return json.dumps(dict(arguments), ensure_ascii=False)


# ----------------------------------------------------------------------------------------------
# Response


def _read(response: Response) -> ModelResponse:
    """The neutral response for a complete ``Response`` (the plain body or the stream's last event)."""
    if response.status == "failed":
        raise _response_failure(response)
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
            summary = "\n\n".join(s.text for s in item.summary)
            if summary:
                thinking.append(ThinkingPart(summary, provider=PROVIDER))
            if item.encrypted_content:
                reasoning.append(item.model_dump(mode="json", exclude_none=True, exclude={"status"}))
    return ModelResponse(
        "".join(text),
        tuple(calls),
        _stop_reason(response, bool(calls), bool(refusal)),
        _usage(response, len(calls)),
        thinking=tuple(thinking),
        refusal="".join(refusal) or None,
        model=response.model,
        provider_data={PROVIDER: {"reasoning": reasoning}} if reasoning else {},
    )


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


class _Streamer:
    """Forwards stream deltas to ``on_event`` and returns the response of the terminal event."""

    def __init__(self, on_event: EventHandler | None):
        self.on_event = on_event
        self.call_index: dict[int, int] = {}

    async def run(self, events: AsyncIterator[Any]) -> ModelResponse:
        """Read the stream to its end (so its connection goes back to the pool) and return the response."""
        final: ModelResponse | None = None
        async for event in events:
            if final is None:
                final = self._event(event)
        if final is None:
            raise ProviderConnectionError("the OpenAI stream ended before the response finished", provider=PROVIDER)
        return final

    def _event(self, event: Any) -> ModelResponse | None:
        # ``event`` is one member of the SDK's ResponseStreamEvent union, told apart by ``type``.
        kind = event.type
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            return _read(cast(Response, event.response))
        if kind == "error":
            body = event.model_dump(mode="json")
            raise provider_error(PROVIDER, status=None, codes=[event.code], message=event.message, body=body)
        on_event = self.on_event
        if on_event is None:
            return None
        if kind == "response.output_text.delta":
            on_event(TextDelta(event.delta))
        elif kind == "response.reasoning_summary_text.delta":
            on_event(ThinkingDelta(event.delta))
        elif kind == "response.function_call_arguments.delta":
            index = self.call_index.get(event.output_index)
            if index is not None:
                on_event(ToolCallDelta(index, arguments_delta=event.delta))
        elif kind == "response.output_item.added" and event.item.type == "function_call":
            index = self.call_index[event.output_index] = len(self.call_index)
            on_event(ToolCallDelta(index, event.item.call_id, event.item.name))
        return None


def _response_failure(response: Response) -> ProviderError:
    error = response.error
    if error is None:
        return ModelResponseError("OpenAI response failed without an error", provider=PROVIDER)
    body = error.model_dump(mode="json")
    return provider_error(PROVIDER, status=None, codes=[error.code], message=error.message, body=body)


async def _close(client: Any) -> None:
    await client.close()
