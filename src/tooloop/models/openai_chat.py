"""The OpenAI Chat Completions adapter, for OpenAI and every OpenAI-compatible server.

One :class:`OpenAIChatModel` keeps one ``AsyncOpenAI`` client per event loop. By default its
requests go out on the lean transport (:mod:`._lean_openai`), which takes the client's key, base
URL, headers, retries and timeouts and behaves as the SDK does at about a tenth of the client
CPU; ``transport="sdk"`` sends them through the SDK's own pipeline (always the case for a
``client`` you pass, and when a proxy is configured for the URL). Either way the adapter builds
the request body as plain dicts and reads the answer as plain JSON.

Requests stream when someone listens (``on_event`` given) and are plain otherwise;
``ModelSettings.stream`` forces either. Both paths give identical responses for the same content.

What differs between servers on the request side is a named option with a per-provider default
in the registry (``register_provider(name, factory, **defaults)`` sets them for a new server):
``max_tokens_field``, ``raw_invalid_arguments``, ``tool_id_max_length``, ``reasoning_field``.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, assert_never

from ..errors import ConfigurationError, ModelResponseError, ProviderError
from ..events import EventHandler
from ..messages import (
    AssistantMessage,
    Message,
    ModelResponse,
    SystemMessage,
    ThinkingPart,
    ToolCallMessage,
    ToolCallStatus,
    UserMessage,
)
from ..outcome import for_model
from ._adapter import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_TIMEOUT,
    USER_AGENT,
    ProviderModel,
    check_retries,
    idle_timeout,
)
from ._errors import provider_error
from ._lean_http import ConnectTimeout, ReadTimeout, TransportError
from ._lean_openai import LeanChunks, LeanOpenAI, LeanStatusError, LeanStreamError, dumps, lean_eligible
from ._openai_chat_parse import ChatStreamReader, parse_completion
from ._openai_chunks import ChunkShapeError
from ._openai_schema import strict_schema
from ._per_loop import PerLoop
from .base import ModelRequest, ModelSettings, OutputSchema, ToolDefinition
from .payloads import listening
from .portable import IdMapper, ToolBatch, Turn, own_thinking, turns

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from ._openai_sdk import ChunkStream

__all__ = ["OpenAIChatModel", "create"]

_PATH = "/chat/completions"
_NO_KEY = "not-needed"  # local servers without auth: the SDK insists on some key
_OPENAI_URL = "https://api.openai.com/v1"
_REASONING_FIELDS = ("reasoning_content", "reasoning")
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
        "raw_invalid_arguments",
        "tool_id_max_length",
        "reasoning_field",
        "transport",
    }
)
_CLIENT_OPTIONS = ("api_key_env", "api_key_optional", "max_retries", "timeout", "default_headers")


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

    The key is ``api_key``, else the environment variable ``api_key_env``. Options (see
    docs/providers.md): ``max_retries`` (2), ``timeout`` (seconds without a byte, default
    :data:`~tooloop.models._adapter.DEFAULT_TIMEOUT`), ``native_output``, ``system_role``,
    ``max_tokens_field``, ``stream_usage``, ``default_headers``, ``client`` (your own
    ``AsyncOpenAI``), ``api_key_optional``, the server quirks ``raw_invalid_arguments``,
    ``tool_id_max_length`` and ``reasoning_field``, and ``transport`` (``"lean"``, the default, or
    ``"sdk"``: see the module docstring).
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
    if client is not None:
        for name in _CLIENT_OPTIONS:
            options.pop(name, None)
        return OpenAIChatModel(model_name, client=client, provider=provider, settings=settings, **options)
    key = _key(provider, api_key, options)
    max_retries = check_retries(options.pop("max_retries", 2))
    idle = idle_timeout(options.pop("timeout", DEFAULT_TIMEOUT))
    connect = min(idle, DEFAULT_CONNECT_TIMEOUT)
    headers = options.pop("default_headers", None)
    url = base_url or _OPENAI_URL
    if transport == "lean" and lean_eligible(url):
        lean = LeanOpenAI(
            url, _lean_headers(key, headers), max_retries=max_retries, connect_timeout=connect, read_timeout=idle
        )
        return OpenAIChatModel(model_name, lean=lean, secret=key, provider=provider, settings=settings, **options)
    from ._openai_sdk import client_factory

    factory = client_factory(key, base_url, max_retries, idle, connect, headers)
    return OpenAIChatModel(
        model_name, client=factory(), client_factory=factory, provider=provider, settings=settings, **options
    )


def _key(provider: str, api_key: str | None, options: dict[str, Any]) -> str:
    env = options.pop("api_key_env", None)
    optional = bool(options.pop("api_key_optional", False))
    key = api_key or (os.environ.get(env) if env else None)
    if not key:
        if not optional:
            where = f"set the environment variable {env}" if env else "pass api_key_env='NAME'"
            raise ConfigurationError(f"no API key for {provider!r} models: {where} or pass api_key=...")
        key = _NO_KEY
    return key


def _lean_headers(key: str, extra: Mapping[str, str] | None) -> dict[str, str]:
    """The headers the SDK would send: the key, organization and project from the environment, defaults."""
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Authorization": f"Bearer {key}",
        "Accept-Encoding": "gzip, deflate",
    }
    for name, variable in (("OpenAI-Organization", "OPENAI_ORG_ID"), ("OpenAI-Project", "OPENAI_PROJECT_ID")):
        if os.environ.get(variable):
            headers[name] = os.environ[variable]
    return {**headers, **(extra or {})}


class OpenAIChatModel(ProviderModel):
    """A model behind the Chat Completions API (``POST {base_url}/chat/completions``).

    ``client`` is an ``AsyncOpenAI`` (its key, base URL, retries and timeout are used as they are).
    ``settings`` are this model's defaults; a request's own settings override them.
    """

    def __init__(
        self,
        model_name: str,
        *,
        client: AsyncOpenAI | None = None,
        client_factory: Callable[[], AsyncOpenAI] | None = None,
        lean: LeanOpenAI | None = None,
        secret: str | None = None,
        provider: str = "openai",
        settings: ModelSettings | None = None,
        native_output: bool = True,
        system_role: Literal["system", "developer"] = "system",
        max_tokens_field: str = "max_tokens",
        stream_usage: bool = True,
        raw_invalid_arguments: bool = False,
        tool_id_max_length: int | None = None,
        reasoning_field: str | None = None,
    ) -> None:
        if system_role not in ("system", "developer"):
            raise ConfigurationError(f"system_role must be 'system' or 'developer', not {system_role!r}")
        if reasoning_field is not None and reasoning_field not in _REASONING_FIELDS:
            raise ConfigurationError(
                f"reasoning_field must be one of {_REASONING_FIELDS} or None, not {reasoning_field!r}"
            )
        if lean is not None:
            clients: PerLoop[Any] = lean.pools
            attempts, idle = lean.max_retries + 1, lean.pools.first.read_timeout
        elif client is not None:
            from ._openai_sdk import close_client

            clients = PerLoop(client, client_factory, close_client)
            secret = client.api_key
            timeout = client.timeout
            idle = timeout if timeout is None or isinstance(timeout, int | float) else timeout.read
            attempts = client.max_retries + 1
        else:
            raise ConfigurationError("OpenAIChatModel needs an AsyncOpenAI client (or use get_model)")
        self._init_common(
            model_name,
            provider=provider,
            settings=settings,
            clients=clients,
            secret=secret if secret != _NO_KEY else None,
            attempts=attempts,
            idle_timeout=idle,
        )
        self._lean = lean
        self._native_output = native_output
        self._system_role = system_role
        self._max_tokens_field = max_tokens_field
        self._stream_usage = stream_usage
        self._raw_arguments = raw_invalid_arguments
        self._id_limit = tool_id_max_length
        self._reasoning_field = reasoning_field
        self._tools_in: tuple[ToolDefinition, ...] | None = None
        self._tools_out: list[dict[str, Any]] = []

    @property
    def base_url(self) -> str:
        """The server's base URL (``.../v1/``)."""
        if self._lean is not None:  # written as the SDK writes it: a path ends with "/"
            endpoint = self._lean.endpoint
            return endpoint.url + "/" if endpoint.path else endpoint.url
        return str(self._clients.first.base_url)

    def _send(
        self, request: ModelRequest, settings: ModelSettings, stream: bool, on_event: EventHandler | None
    ) -> Awaitable[ModelResponse]:
        # Not a coroutine itself: what it returns is awaited directly, one level fewer in every
        # waiting conversation (and for the stream, no reference to the body kept here).
        if stream:
            return self._stream(self._body(request, settings), on_event)
        return self._plain(self._body(request, settings))

    async def _plain(self, body: dict[str, Any]) -> ModelResponse:
        self._sent(body)
        if self._lean is not None:
            # Encoded now, and the dicts let go: at thousands of conversations waiting for their
            # answers, every object kept alive meanwhile is scanned by the garbage collector.
            payload = dumps(body)
            del body
            data = await self._lean.post_json(_PATH, payload)
        else:
            data = await self._clients.get().post(_PATH, body=body, cast_to=object)
            if isinstance(data, str):  # the server did not say application/json
                data = json.loads(data)
        self._received(data)
        return parse_completion(data, self.provider)

    async def _stream(self, body: dict[str, Any], on_event: EventHandler | None) -> ModelResponse:
        body["stream"] = True
        if self._stream_usage:
            body["stream_options"] = {"include_usage": True}
        self._sent(body)
        chunks: ChunkStream | LeanChunks
        if self._lean is not None:
            payload = dumps(body)
            del body  # as in _send: nothing of the request is kept while the answer streams
            chunks = await self._lean.stream_json(_PATH, payload)
        else:
            from ._openai_sdk import ChunkStream

            client = self._clients.get()
            chunks = await client.post(_PATH, body=body, cast_to=object, stream=True, stream_cls=ChunkStream)
        reader = ChatStreamReader(self.provider, on_event)
        try:
            if isinstance(chunks, LeanChunks) and not listening():
                await chunks.read(reader.feed_all)  # the hot path: no iterator between the body and the reader
            else:
                feed = reader.feed
                async for chunk in self._tapped(aiter(chunks)):
                    feed(chunk)
        except ProviderError:
            raise
        except Exception as exc:  # the stream broke after the request succeeded: no retry was made
            await chunks.close()
            self._fail(exc, 1)
        except BaseException:
            await chunks.close()
            raise
        return reader.result(done=chunks.done)

    def _error(self, exc: Exception, attempts: int) -> ProviderError | None:
        if isinstance(exc, TransportError):
            return self._transport_error(exc, attempts, timed_out=isinstance(exc, ReadTimeout | ConnectTimeout))
        if isinstance(exc, LeanStatusError):
            return self._table(exc.status, (), exc.message, exc.headers, exc.body)
        if isinstance(exc, LeanStreamError):
            return self._table(None, (), exc.message, None, exc.body)
        if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):  # a body or chunk that is not JSON
            return ModelResponseError(
                f"{self.provider} sent data that is not valid JSON: {exc}", provider=self.provider
            )
        if isinstance(exc, ChunkShapeError):  # JSON, but not a chunk
            return ModelResponseError(
                f"{self.provider} streamed a chunk tooloop cannot read: {exc}", provider=self.provider
            )
        if "openai" not in sys.modules:  # only the SDK path raises the SDK's exceptions
            return None
        from ._openai_sdk import sdk_failure

        failure = sdk_failure(exc)
        if failure is None:
            return None
        if failure.transport is not None:
            return self._transport_error(exc, attempts, timed_out=failure.transport == "timeout")
        return self._table(failure.status, failure.codes, failure.message, failure.headers, failure.body)

    def _table(
        self,
        status: int | None,
        codes: tuple[object, ...],
        message: str,
        headers: Mapping[str, str] | None,
        body: object,
    ) -> ProviderError:
        return provider_error(
            self.provider,
            status=status,
            codes=openai_codes(body, *codes),
            message=_error_message(body, message),
            headers=headers,
            body=body,
            secret=self._secret,
        )

    # -- request body -------------------------------------------------------------------------

    def _body(self, request: ModelRequest, settings: ModelSettings) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self._name, "messages": self._messages(request.messages)}
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
        if tools != self._tools_in:  # the same definitions every turn (compared by identity first)
            self._tools_out = [_tool(t) for t in tools]
            self._tools_in = tools
        return self._tools_out

    def _messages(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        ids: Callable[[str], str] = IdMapper(max_length=self._id_limit) if self._id_limit else str
        out: list[dict[str, Any]] = []
        for item in turns(messages):
            out.extend(self._turn(item, ids))
        return out

    def _turn(self, item: Turn, ids: Callable[[str], str]) -> list[dict[str, Any]]:
        if isinstance(item, ToolBatch):
            return self._batch(item, ids)
        if isinstance(item, UserMessage):
            return [{"role": "user", "content": item.text}]
        if isinstance(item, AssistantMessage):
            return [{"role": "assistant", "content": _assistant_text(item), **self._reasoning(item.thinking)}]
        if isinstance(item, SystemMessage):
            return [{"role": self._system_role, "content": item.text}]
        assert_never(item)

    def _batch(self, batch: ToolBatch, ids: Callable[[str], str]) -> list[dict[str, Any]]:
        """One assistant turn with its tool calls, then one ``tool`` message per call, in order.

        Arguments that were not valid JSON go back as they came where the server keeps them as
        text (``raw_invalid_arguments``, OpenAI itself: the model sees its mistake); other servers
        often parse them while building the prompt, so they get ``{}`` and the error result says
        what was wrong.
        """
        calls = []
        results = []
        for call in batch.calls:
            call_id = ids(call.tool_call_id)
            function = {"name": call.tool_name, "arguments": _arguments(call, self._raw_arguments)}
            calls.append({"id": call_id, "type": "function", "function": function})
            content = call.content if call.status is ToolCallStatus.OK else for_model(call).text
            results.append({"role": "tool", "tool_call_id": call_id, "content": content})
        turn = {"role": "assistant", "content": batch.text or None, "tool_calls": calls}
        return [{**turn, **self._reasoning(batch.first.thinking)}, *results]

    def _reasoning(self, thinking: tuple[ThinkingPart, ...]) -> dict[str, str]:
        """The reasoning field for an assistant turn, on servers that read it back (``reasoning_field``)."""
        if self._reasoning_field is None or not thinking:
            return {}
        text = "".join(part.text for part in own_thinking(thinking, self.provider) if not part.redacted)
        return {self._reasoning_field: text} if text else {}


def openai_codes(body: object, *codes: object) -> list[object]:
    """The error codes of an OpenAI-style error: ``code`` and ``type``, from the exception and its body."""
    error = body.get("error", body) if isinstance(body, Mapping) else None
    found = list(codes)
    if isinstance(error, Mapping):
        found += [error.get("code"), error.get("type")]
    return [code for code in found if isinstance(code, str) and code]


def _error_message(body: object, default: str = "") -> str:
    error = body.get("error", body) if isinstance(body, Mapping) else None
    message = error.get("message") if isinstance(error, Mapping) else None
    if isinstance(message, str) and message:
        return message
    return default or (str(error) if error else "An error occurred during streaming")


def _assistant_text(message: AssistantMessage) -> str:
    if message.refusal and message.refusal not in message.text:
        return f"{message.text}\n{message.refusal}" if message.text else message.refusal
    return message.text


def _arguments(call: ToolCallMessage, raw: bool) -> str:
    if call.raw_arguments is not None:
        return call.raw_arguments if raw else "{}"
    return _encode_arguments(call.arguments)


def _encode_arguments(arguments: Mapping[str, Any]) -> str:
    """``json.dumps(arguments, ensure_ascii=False)``; flat objects (the usual case) written directly.

    Every request sends every earlier call again, so this runs once per call per request.
    """
    items = []
    for key, value in arguments.items():
        kind = type(value)
        if kind is str:
            text = _string(value)
        elif kind is int:
            text = int.__repr__(value)
        elif kind is bool:
            text = "true" if value else "false"
        elif value is None:
            text = "null"
        elif kind is float and math.isfinite(value):
            text = float.__repr__(value)
        else:
            return _ARGUMENTS.encode(arguments)
        if type(key) is not str:
            return _ARGUMENTS.encode(arguments)
        items.append(f"{_string(key)}: {text}")
    return "{" + ", ".join(items) + "}"


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


_ARGUMENTS = json.JSONEncoder(ensure_ascii=False, default=_json_default)
_string: Callable[[str], str] = json.encoder.encode_basestring
"""Arguments as ``json.dumps`` writes them; one encoder, since every request encodes every call again."""
