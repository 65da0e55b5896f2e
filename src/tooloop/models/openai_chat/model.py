"""The OpenAI Chat Completions adapter, for OpenAI and every OpenAI-compatible server.

One :class:`OpenAIChatModel` keeps one ``AsyncOpenAI`` client per event loop. By default its
requests go out on the lean transport (:class:`tooloop.transport.client.Client`), which takes the client's key, base
URL, headers, retries and timeouts and behaves as the SDK does at about a tenth of the client
CPU; ``transport="sdk"`` sends them through the SDK's own pipeline (always the case for a
``client`` you pass, and when a proxy is configured for the URL). Either way the adapter builds
the request body as plain dicts and reads the answer as plain JSON.

Requests stream when someone listens (``on_event`` given) and are plain otherwise;
``ModelSettings.stream`` forces either. Both paths give identical responses for the same content.
The body is built by :mod:`.request`, a plain answer read by :mod:`.response`, a stream by
:mod:`.stream`; :mod:`.sdk` is the SDK fallback.

What differs between servers on the request side is a named option with a per-provider default
in the registry (``register_provider(name, factory, **defaults)`` sets them for a new server):
``max_tokens_field``, ``raw_invalid_arguments``, ``tool_id_max_length``, ``tool_id_length``,
``reasoning_field``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ...errors import ConfigurationError, ProviderError
from ...events import EventHandler
from ...messages import ModelResponse, Tokens
from ...transport.client import Client, StatusError, StreamError, lean_eligible, loads
from ...transport.http import DEFAULT_MAX_CONNECTIONS
from ...transport.perloop import PerLoop
from ...transport.retry import RetryPolicy
from ..adapter import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_TIMEOUT,
    USER_AGENT,
    ErrorBody,
    ProviderModel,
    check_max_connections,
    check_retries,
    checked_headers,
    idle_timeout,
)
from ..base import ModelRequest, ModelSettings
from ..inputs import ALL_INPUTS, check_input_kinds
from ..payloads import listening
from .chunks import ChunkShapeError
from .request import ChatRequest
from .response import parse_completion
from .stream import CapturingStreamReader, ChatClient, ChatStreamReader
from .token_in import (
    COMPLETIONS_PATH,
    FIRST,
    TokenInUnavailable,
    completions_body,
    previous_tokens,
    read_completion,
    token_in_prompt,
)
from .tokens import (
    PromptHeads,
    TokenServer,
    capture_fields,
    check_token_server,
    compacted,
    kept,
    last_tokens,
    read_captured,
    with_tokens,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from .sdk import SdkChannel

__all__ = ["PATH", "OpenAIChatModel", "Route", "build", "create", "openai_headers"]

PATH = "/chat/completions"
_NO_KEY = "not-needed"  # local servers without auth: the SDK insists on some key
_OPENAI_URL = "https://api.openai.com/v1"
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
        "tool_id_length",
        "reasoning_field",
        "transport",
        "max_connections",
        "capture_tokens",
        "token_server",
        "token_in",
        "server_root",
        "input_kinds",
    }
)
_CLIENT_OPTIONS = ("api_key_env", "api_key_optional", "max_retries", "timeout", "default_headers", "max_connections")


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
    :data:`~tooloop.models.adapter.DEFAULT_TIMEOUT`), ``native_output``, ``system_role``,
    ``max_tokens_field``, ``stream_usage``, ``default_headers``, ``client`` (your own
    ``AsyncOpenAI``), ``api_key_optional``, the server quirks ``raw_invalid_arguments``,
    ``tool_id_max_length``, ``tool_id_length`` (ids of exactly that many letters and digits, as
    Mistral requires) and ``reasoning_field``, ``input_kinds`` (the attachments the model behind
    the server takes: ``"image"``, ``"audio"``, ``"document"``; default all, none for DeepSeek),
    ``max_connections`` (the pool's cap, default
    1000 as the SDK's), ``transport`` (``"lean"``, the default, or ``"sdk"``: see the module docstring),
    and ``capture_tokens`` (ask the server for the exact prompt and sampled token ids and their
    logprobs, kept on each response: docs/rollouts.md; ``"ids"``: the ids without logprobs) with
    ``token_server`` (``"vllm"``, the default, or ``"sglang"``: whose request fields and response
    shapes to use), ``token_in`` (send each turn after the first as the previous ids plus the new
    messages' tokens, read with the server's ``/tokenize`` at ``server_root``, by default the base URL without ``/v1``).
    """
    return build(model_name, provider, base_url, api_key, settings, options)


def build(
    model_name: str,
    provider: str,
    base_url: str | None,
    api_key: str | None,
    settings: ModelSettings | None,
    options: dict[str, Any],
    route: Route | None = None,
) -> OpenAIChatModel:
    """A model for the server at ``base_url`` (else OpenAI's) with the factory's ``options``;
    ``route`` for servers that take requests elsewhere (Azure's deployment URLs)."""
    known = _OPTIONS if route is None else _OPTIONS | {"api_version"}
    unknown = set(options) - known
    if unknown:
        raise ConfigurationError(
            f"unknown option(s) for {provider!r} models: {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(known))}"
        )
    client = options.pop("client", None)
    token_in = options.pop("token_in", False)
    server_root = options.pop("server_root", None)
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
    cap = check_max_connections(options.pop("max_connections", None))
    url = base_url or _OPENAI_URL
    auth = route.auth(key) if route is not None else {"Authorization": f"Bearer {key}"}
    sent = checked_headers(provider, openai_headers(auth, headers), key)  # on either path
    if transport == "lean" and lean_eligible(url):
        if route is not None:
            options["path"] = route.path
        lean = ChatClient(
            url,
            sent,
            retry=RetryPolicy(max_retries),
            connect_timeout=connect,
            read_timeout=idle,
            attempt_header="x-stainless-retry-count",
            max_connections=cap or DEFAULT_MAX_CONNECTIONS,
        )
        if token_in:
            root = server_root or _server_root(url)
            options["token_in"] = Client(
                root, sent, retry=RetryPolicy(max_retries), connect_timeout=connect, read_timeout=idle
            )
        return OpenAIChatModel(model_name, lean=lean, secret=key, provider=provider, settings=settings, **options)
    if token_in:
        raise ConfigurationError("token_in needs the lean transport and an http(s) base URL without a proxy")
    from .sdk import client_factory

    version = route.version if route is not None else None
    factory = client_factory(key, base_url, max_retries, idle, connect, headers, cap, api_version=version)
    return OpenAIChatModel(
        model_name, client=factory(), client_factory=factory, provider=provider, settings=settings, **options
    )


def _server_root(url: str) -> str:
    """The server's root URL, where vLLM and SGLang answer ``/tokenize``: the base URL without ``/v1``."""
    base = url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


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


class Route(Protocol):
    """Where a server that is not OpenAI-shaped takes requests (Azure's deployment URLs)."""

    @property
    def version(self) -> str:
        """The API version the SDK's Azure client sends."""
        ...

    @property
    def path(self) -> str:
        """The request path after the base URL, query included."""
        ...

    def auth(self, key: str) -> dict[str, str]:
        """The header that carries the key."""
        ...


def openai_headers(auth: Mapping[str, str], extra: Mapping[str, str] | None) -> dict[str, str]:
    """The headers the SDK would send: the key, organization and project from the environment, defaults."""
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        **auth,
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

    _unreadable = (ChunkShapeError,)

    def __init__(
        self,
        model_name: str,
        *,
        client: AsyncOpenAI | None = None,
        client_factory: Callable[[], AsyncOpenAI] | None = None,
        lean: ChatClient | None = None,
        secret: str | None = None,
        provider: str = "openai",
        settings: ModelSettings | None = None,
        native_output: bool = True,
        system_role: Literal["system", "developer"] = "system",
        max_tokens_field: str = "max_tokens",
        stream_usage: bool = True,
        raw_invalid_arguments: bool = False,
        tool_id_max_length: int | None = None,
        tool_id_length: int | None = None,
        reasoning_field: str | None = None,
        input_kinds: Iterable[str] | None = None,
        path: str = PATH,
        capture_tokens: bool | Literal["ids"] = False,
        token_server: TokenServer = "vllm",
        token_in: Client | None = None,
    ) -> None:
        self._path = path
        if not isinstance(capture_tokens, bool) and capture_tokens != "ids":
            raise ConfigurationError(f"capture_tokens must be True, False or 'ids', not {capture_tokens!r}")
        if token_in is not None and not capture_tokens:
            raise ConfigurationError("token_in=True needs capture_tokens=True: each turn continues the previous ids")
        self._token_in = token_in
        self._token_server = token_server
        server = check_token_server(token_server)
        self._logprobs = capture_tokens is True  # "ids": the sampled ids without their logprobs
        self._capture: dict[str, Any] | None = None
        if capture_tokens:
            self._capture = capture_fields(server, logprobs=self._logprobs)
        self._heads = PromptHeads()  # the starts of prompts this model's conversations share
        self._plain_only = bool(capture_tokens) and server == "sglang"  # SGLang refuses prompt ids on a stream
        self._native = native_output
        self._request = ChatRequest(
            model_name,
            provider,
            native_output=native_output,
            system_role=system_role,
            max_tokens_field=max_tokens_field,
            raw_invalid_arguments=raw_invalid_arguments,
            tool_id_max_length=tool_id_max_length,
            tool_id_length=tool_id_length,
            reasoning_field=reasoning_field,
            input_kinds=ALL_INPUTS if input_kinds is None else check_input_kinds(input_kinds),
        )
        self.input_kinds = self._request.input_kinds
        channel: ChatClient | SdkChannel
        if lean is not None:
            channel = lean
        elif client is not None:
            from .sdk import SdkChannel, close_client

            channel = SdkChannel(PerLoop(client, client_factory, close_client))
            secret = channel.secret
        else:
            raise ConfigurationError("OpenAIChatModel needs an AsyncOpenAI client (or use get_model)")
        self._init_common(
            model_name,
            provider=provider,
            settings=settings,
            channel=channel,
            secret=secret if secret != _NO_KEY else None,
        )
        self._channel: ChatClient | SdkChannel = channel
        self._stream_usage = stream_usage

    @property
    def native_output(self) -> bool:
        """True unless the ``native_output`` option is off (``response_format`` carries the schema)."""
        return self._native

    def _send(
        self, request: ModelRequest, settings: ModelSettings, stream: bool, on_event: EventHandler | None
    ) -> Awaitable[ModelResponse]:
        # Not a coroutine itself: what it returns is respond's, one level fewer in every waiting
        # conversation; it does all the work, and raises what _raised says.
        if self._capture is not None:
            return self._mapped(self._send_capturing, request, settings, stream and not self._plain_only, on_event)
        if stream:
            return self._stream(None, on_event, request=request, settings=settings)
        return self._plain(request, settings)

    _maps_errors = True

    async def _send_capturing(
        self, request: ModelRequest, settings: ModelSettings, stream: bool, on_event: EventHandler | None
    ) -> ModelResponse:
        """:meth:`_send` asking the server for the exact tokens, and reading them into the response,
        kept as the ids after the previous response's where the prompt continues them (else after a
        start of prompt shared with other conversations: :class:`.tokens.PromptHeads`)."""
        previous = last_tokens(request.messages)
        body = self._request.body(request, settings)
        if self._token_in is None:
            return await self._capture_messages(body, stream, on_event, previous)
        try:
            continued = previous_tokens(request.messages)
            prompt, context = await token_in_prompt(self._token_in, body, continued)
        except TokenInUnavailable as exc:
            response = await self._capture_messages(body, stream, on_event, previous)
            if str(exc) == FIRST or response.tokens is None:
                return response
            return replace(response, tokens=replace(response.tokens, fallback=str(exc)))
        if self._token_server == "sglang":  # its chat endpoint takes the ids as they are
            body["input_ids"] = prompt
            return await self._capture_messages(body, False, on_event, previous)
        completion = completions_body(self.name, prompt, settings, context, logprobs=self._logprobs)
        self._sent(completion)
        data = await self._channel.post_json(COMPLETIONS_PATH, self._channel.encode(completion))
        self._received(data)
        return compacted(read_completion(data, prompt, self.provider), previous, self._heads)

    async def _capture_messages(
        self, body: dict[str, Any], stream: bool, on_event: EventHandler | None, previous: Tokens | None
    ) -> ModelResponse:
        """A chat request asking for the exact tokens (message-in), with them read into the response
        and kept compactly (:func:`.tokens.compacted`: ``previous`` is the last response's)."""
        assert self._capture is not None
        for name, value in self._capture.items():
            body.setdefault(name, value)
        if stream:
            return compacted(await self._stream(body, on_event, CapturingStreamReader), previous, self._heads)
        self._sent(body)
        payload = self._channel.encode(body)
        del body
        channel = self._channel
        if isinstance(channel, Client) and not listening():
            raw = await channel.post_bytes(self._path, payload)
            read = read_captured(raw, self.provider)
            if read is not None:
                response, tokens = read
                return replace(response, tokens=kept(tokens, previous, self._heads))
            data = loads(raw)  # the general reader says what is wrong with it
        else:
            data = await channel.post_json(self._path, payload)
            self._received(data)
        return compacted(with_tokens(parse_completion(data, self.provider), data), previous, self._heads)

    async def _plain(self, request: ModelRequest, settings: ModelSettings) -> ModelResponse:
        try:
            body = self._request.body(request, settings)
            self._sent(body)
            # Encoded now (on the lean path), and the dicts let go: at thousands of conversations
            # waiting for their answers, every object kept alive meanwhile is scanned by the garbage
            # collector.
            payload = self._channel.encode(body)
            del body
            data = await self._channel.post_json(self._path, payload)
            self._received(data)
            return parse_completion(data, self.provider)
        except Exception as exc:
            error = self._raised(exc)
        error.__context__ = None
        raise error

    async def _stream(
        self,
        body: dict[str, Any] | None,
        on_event: EventHandler | None,
        reader_type: type[ChatStreamReader] = ChatStreamReader,
        *,
        request: ModelRequest | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        """The streamed answer to ``body``, else to the body of ``request`` with ``settings``."""
        try:
            if body is None:
                assert request is not None and settings is not None
                body = self._request.body(request, settings)
            body["stream"] = True
            if self._stream_usage:
                body["stream_options"] = {"include_usage": True}
            self._sent(body)
            payload = self._channel.encode(body)
            del body  # as in _plain: nothing of the request is kept while the answer streams
            chunks = await self._channel.post_stream(self._path, payload)
            reader = reader_type(self.provider, on_event)
            try:
                if not listening():
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
        except Exception as exc:
            error = self._raised(exc)
        error.__context__ = None
        raise error

    def _read_error(self, error: StatusError | StreamError) -> ErrorBody:
        return read_error(error)


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


def read_error(error: StatusError | StreamError) -> ErrorBody:
    """The codes, message and error object of an OpenAI-style error (``{"error": {"message", "type", "code"}}``)."""
    body = error.body
    return openai_codes(body), _error_message(body, error.message), body
