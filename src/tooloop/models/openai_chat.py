"""The OpenAI Chat Completions adapter, for OpenAI and every OpenAI-compatible server.

One :class:`OpenAIChatModel` keeps one ``AsyncOpenAI`` client (and its connection pool). The SDK
does authentication, retries (``max_retries``, honouring ``retry-after``) and HTTP errors; the
adapter builds the request body as plain dicts and reads the answer as plain JSON, which skips
the SDK's per-request parameter transformation and response models on the hot path.

Requests stream when someone listens (``on_event`` given) and are plain otherwise;
``ModelSettings.stream`` forces either. Both paths give identical responses for the same content.

A tool call cut off by the output limit comes back as received, with stop reason ``MAX_TOKENS``:
its arguments are unfinished, and the loop refuses to run the calls of such a response.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Any, Literal

import openai
from openai import AsyncOpenAI, AsyncStream

from ..errors import ConfigurationError, ModelResponseError
from ..events import EventHandler
from ..messages import AssistantMessage, Message, ModelResponse, SystemMessage, ToolCallMessage, UserMessage
from ._lean_openai import LeanOpenAI, lean_eligible
from ._openai_chat_parse import ChatStreamReader, parse_completion
from ._openai_errors import raise_mapped
from ._openai_schema import strict_schema
from ._per_loop import ClientModel, PerLoop
from .base import ModelRequest, ModelSettings, OutputSchema, ToolDefinition
from .portable import IdMapper, ToolBatch, turns

__all__ = ["OpenAIChatModel", "create"]

_PATH = "/chat/completions"
_NO_KEY = "not-needed"  # local servers without auth: the SDK insists on some key
_STREAM_CLS = AsyncStream[object]
_OPTIONS = frozenset(
    {
        "api_key_env",
        "api_key_optional",
        "max_retries",
        "timeout",
        "native_output",
        "system_role",
        "max_tokens_field",
        "stream_usage",
        "default_headers",
        "client",
        "transport",
    }
)


def create(
    model_name: str,
    *,
    provider: str = "openai",
    base_url: str | None = None,
    api_key: str | None = None,
    settings: ModelSettings | None = None,
    **options: Any,
) -> OpenAIChatModel:
    """Create a Chat Completions model (the registry's factory for OpenAI and compatible servers).

    The key is ``api_key``, else the environment variable ``api_key_env`` (``OPENAI_API_KEY`` for
    provider ``"openai"``); the base URL is ``base_url``, else ``OPENAI_BASE_URL`` for provider
    ``"openai"``, else the SDK's default. Options: ``max_retries`` (2), ``timeout`` (seconds),
    ``native_output`` (send ``response_format`` for structured output, default True),
    ``system_role`` (``"system"`` or ``"developer"``), ``max_tokens_field``, ``stream_usage``
    (ask for usage in streams, default True), ``default_headers``, ``client`` (your own
    ``AsyncOpenAI``), ``api_key_optional`` (local servers without auth), ``transport``
    (``"lean"``, the default: requests go out on tooloop's lean HTTP client with the SDK's headers,
    retries, timeouts and errors; ``"sdk"``: through the SDK's own pipeline; a ``client`` you pass
    always uses the SDK).
    """
    unknown = set(options) - _OPTIONS
    if unknown:
        raise ConfigurationError(
            f"unknown option(s) for {provider!r} models: {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(_OPTIONS))}"
        )
    client = options.pop("client", None)
    transport = options.pop("transport", "lean")
    if transport not in ("lean", "sdk"):
        raise ConfigurationError(f"transport must be 'lean' or 'sdk', not {transport!r}")
    factory = None
    if client is None:
        factory = _client_factory(provider, base_url, api_key, options)
        client = factory()
    else:
        for name in ("api_key_env", "api_key_optional", "max_retries", "timeout", "default_headers"):
            options.pop(name, None)
    return OpenAIChatModel(
        model_name,
        client=client,
        client_factory=factory,
        provider=provider,
        settings=settings,
        lean=transport == "lean" and factory is not None,
        **options,
    )


def _client_factory(
    provider: str, base_url: str | None, api_key: str | None, options: dict[str, Any]
) -> Callable[[], AsyncOpenAI]:
    env = options.pop("api_key_env", None) or ("OPENAI_API_KEY" if provider == "openai" else None)
    optional = bool(options.pop("api_key_optional", False))
    key = api_key or (os.environ.get(env) if env else None)
    if not key:
        if not optional:
            where = f"set the environment variable {env}" if env else "pass api_key_env='NAME'"
            raise ConfigurationError(f"no API key for {provider!r} models: {where} or pass api_key=...")
        key = _NO_KEY
    if base_url is None and provider == "openai":
        base_url = os.environ.get("OPENAI_BASE_URL") or None
    max_retries = options.pop("max_retries", 2)
    if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
        raise ConfigurationError(f"max_retries must be a non-negative int, not {max_retries!r}")
    extra: dict[str, Any] = {}
    if "timeout" in options:
        extra["timeout"] = options.pop("timeout")
    headers = options.pop("default_headers", None)
    if headers:
        extra["default_headers"] = dict(headers)
    return functools.partial(AsyncOpenAI, api_key=key, base_url=base_url, max_retries=max_retries, **extra)


class OpenAIChatModel(ClientModel):
    """A model behind the Chat Completions API (``POST {base_url}/chat/completions``).

    ``client`` is an ``AsyncOpenAI`` (its key, base URL, retries and timeout are used as they are).
    ``settings`` are this model's defaults; a request's own settings override them.
    """

    def __init__(
        self,
        model_name: str,
        *,
        client: AsyncOpenAI,
        client_factory: Callable[[], AsyncOpenAI] | None = None,
        provider: str = "openai",
        settings: ModelSettings | None = None,
        native_output: bool = True,
        system_role: Literal["system", "developer"] = "system",
        max_tokens_field: str | None = None,
        stream_usage: bool = True,
        lean: bool = False,
    ) -> None:
        if system_role not in ("system", "developer"):
            raise ConfigurationError(f"system_role must be 'system' or 'developer', not {system_role!r}")
        self.name = model_name
        self.provider = provider
        self._clients = PerLoop(client, client_factory, _close)
        self._settings = settings or ModelSettings()
        self._native_output = native_output
        self._system_role = system_role
        self._max_tokens_field = max_tokens_field or ("max_completion_tokens" if provider == "openai" else "max_tokens")
        self._stream_usage = stream_usage
        self._secret = client.api_key if client.api_key != _NO_KEY else None
        self._tools_in: tuple[ToolDefinition, ...] | None = None
        self._tools_out: list[dict[str, Any]] = []
        self._lean = LeanOpenAI(client) if lean and lean_eligible(str(client.base_url)) else None

    def __repr__(self) -> str:
        base_url = str(self._clients.first.base_url)
        return f"OpenAIChatModel(name={self.name!r}, provider={self.provider!r}, base_url={base_url!r})"

    async def respond(self, request: ModelRequest, on_event: EventHandler | None = None) -> ModelResponse:
        """Send ``request``; stream when ``on_event`` is given (or ``settings.stream`` says so)."""
        settings = self._settings.merged(request.settings)
        body = self._body(request, settings)
        stream = settings.stream if settings.stream is not None else on_event is not None
        try:
            if stream:
                return await self._stream(body, on_event)
            return await self._plain(body)
        except openai.OpenAIError as exc:
            raise_mapped(exc, provider=self.provider, secret=self._secret)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # a body or chunk that is not JSON
            raise ModelResponseError(
                f"{self.provider} sent data that is not valid JSON: {exc}", provider=self.provider
            ) from exc

    async def aclose(self) -> None:
        """Close the connections of the SDK clients and of the lean transport."""
        if self._lean is not None:
            await self._lean.aclose()
        await super().aclose()

    async def _plain(self, body: dict[str, Any]) -> ModelResponse:
        if self._lean is not None:
            return parse_completion(await self._lean.post_json(_PATH, body), self.provider)
        data = await self._clients.get().post(_PATH, body=body, cast_to=object)
        if isinstance(data, str):  # the server did not say application/json
            data = json.loads(data)
        return parse_completion(data, self.provider)

    async def _stream(self, body: dict[str, Any], on_event: EventHandler | None) -> ModelResponse:
        body["stream"] = True
        if self._stream_usage:
            body["stream_options"] = {"include_usage": True}
        if self._lean is not None:
            return await self._read_stream(self._lean.stream_json(_PATH, body), on_event)
        chunks = await self._clients.get().post(_PATH, body=body, cast_to=object, stream=True, stream_cls=_STREAM_CLS)
        reader = ChatStreamReader(self.provider, on_event)
        feed = reader.feed
        try:
            async for chunk in chunks:
                feed(chunk)
        except BaseException:
            await chunks.close()
            raise
        return reader.result()

    async def _read_stream(self, chunks: AsyncGenerator[Any, None], on_event: EventHandler | None) -> ModelResponse:
        reader = ChatStreamReader(self.provider, on_event)
        feed = reader.feed
        try:
            async for chunk in chunks:
                feed(chunk)
        finally:
            await chunks.aclose()
        return reader.result()

    # -- request body -------------------------------------------------------------------------

    def _body(self, request: ModelRequest, settings: ModelSettings) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.name, "messages": self._messages(request.messages)}
        if request.tools:
            body["tools"] = self._tools(request.tools)
            if request.tool_choice != "auto":
                body["tool_choice"] = request.tool_choice
            if settings.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = settings.parallel_tool_calls
        if request.output is not None and self._native_output:
            body["response_format"] = _response_format(request.output)
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            body[self._max_tokens_field] = settings.max_tokens
        if settings.top_p is not None:
            body["top_p"] = settings.top_p
        if settings.stop:
            body["stop"] = list(settings.stop)
        if settings.seed is not None:
            body["seed"] = settings.seed
        if settings.extra:
            body.update(settings.extra)
        return body

    def _tools(self, tools: tuple[ToolDefinition, ...]) -> list[dict[str, Any]]:
        if tools is not self._tools_in:  # the loop sends the same tuple every turn
            self._tools_out = [_tool(t) for t in tools]
            self._tools_in = tools
        return self._tools_out

    def _messages(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        ids = IdMapper(max_length=40)
        out: list[dict[str, Any]] = []
        append = out.append
        for item in turns(messages):
            if isinstance(item, ToolBatch):
                _add_batch(item, ids, out, raw_arguments=self.provider == "openai")
            elif isinstance(item, UserMessage):
                append({"role": "user", "content": item.text})
            elif isinstance(item, AssistantMessage):
                append({"role": "assistant", "content": _assistant_text(item)})
            elif isinstance(item, SystemMessage):
                append({"role": self._system_role, "content": item.text})
        return out


def _assistant_text(message: AssistantMessage) -> str:
    if message.refusal and message.refusal not in message.text:
        return f"{message.text}\n{message.refusal}" if message.text else message.refusal
    return message.text


def _add_batch(batch: ToolBatch, ids: IdMapper, out: list[dict[str, Any]], *, raw_arguments: bool) -> None:
    """One assistant turn with its tool calls, then one ``tool`` message per call, in order.

    Arguments that were not valid JSON go back as they came to OpenAI itself (it stores them as
    text, and the model sees its mistake); compatible servers often parse them while building the
    prompt, so they get ``{}`` and the error result says what was wrong.
    """
    calls = []
    results = []
    for call in batch.calls:
        call_id = ids(call.tool_call_id)
        calls.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.tool_name, "arguments": _arguments(call, raw_arguments)},
            }
        )
        results.append({"role": "tool", "tool_call_id": call_id, "content": _result_text(call)})
    out.append({"role": "assistant", "content": batch.text or None, "tool_calls": calls})
    out.extend(results)


def _arguments(call: ToolCallMessage, raw: bool) -> str:
    if call.raw_arguments is not None:
        return call.raw_arguments if raw else "{}"
    return json.dumps(call.arguments, ensure_ascii=False, default=_json_default)


def _result_text(call: ToolCallMessage) -> str:
    if call.is_error and not call.content.lower().startswith("error"):
        return f"Error: {call.content}"
    return call.content


def _tool(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": strict_schema(tool.parameters) if tool.strict else _plain(tool.parameters),
    }
    if tool.strict is not None:
        function["strict"] = tool.strict
    return {"type": "function", "function": function}


_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def _response_format(output: OutputSchema) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "name": _SCHEMA_NAME.sub("_", output.name)[:64] or "output",
        "schema": strict_schema(output.schema) if output.strict else _plain(output.schema),
        "strict": output.strict,
    }
    if output.description:
        schema["description"] = output.description
    return {"type": "json_schema", "json_schema": schema}


def _plain(value: Any) -> Any:
    """``value`` with every mapping a plain dict and every tuple a list, ready for the SDK's JSON encoder."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


async def _close(client: AsyncOpenAI) -> None:
    await client.close()
