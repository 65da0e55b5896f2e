"""The Anthropic Messages API adapter, on the official ``anthropic`` SDK (``AsyncAnthropic``).

``get_model("anthropic:claude-sonnet-4-5")`` creates an :class:`AnthropicModel` through
:func:`create`. The SDK sends the requests and retries them (``max_retries``, default 2); this
module builds the request body (:mod:`._anthropic_request`), reads the raw JSON answer or the raw
SSE event stream (:mod:`._anthropic_response`) and maps failures through the one error table (:mod:`._errors`).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

import anthropic
import httpx2
from anthropic import NOT_GIVEN, AsyncAnthropic, AsyncStream

from ..errors import ConfigurationError, ModelResponseError, ProviderError
from ..events import EventHandler
from ..messages import ModelResponse
from ._adapter import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, ProviderModel, check_retries, idle_timeout
from ._anthropic_request import PROVIDER, build_body
from ._anthropic_response import parse_message, read_stream
from ._errors import provider_error
from ._per_loop import PerLoop
from .base import ModelRequest, ModelSettings
from .profiles import lookup_profile

__all__ = ["AnthropicModel", "create"]

DEFAULT_MAX_TOKENS = 8192
"""``max_tokens`` for models the profile table does not know (Anthropic requires a value)."""

_PLAIN_MAX_TOKENS = 8192
# The SDK refuses a non-streamed request that may run longer than ten minutes (judged from
# max_tokens) unless a timeout is set; above this, a request without a listener streams quietly.

_OPTIONS = frozenset(
    {"max_retries", "timeout", "native_output", "thinking", "client", "default_headers", "api_key_env"}
)


def create(
    model_name: str,
    *,
    provider: str = PROVIDER,
    base_url: str | None = None,
    api_key: str | None = None,
    settings: ModelSettings | None = None,
    **options: Any,
) -> AnthropicModel:
    """Create an Anthropic model (the registry's factory for ``"anthropic:..."`` strings).

    ``api_key`` defaults to the variable ``api_key_env`` (``ANTHROPIC_API_KEY``) and ``base_url``
    to ``ANTHROPIC_BASE_URL``, then the SDK's default. Options: ``max_retries`` (2), ``timeout``
    (seconds without a byte), ``native_output`` (structured output through a forced tool),
    ``thinking`` (passed through, e.g. ``{"type": "enabled", "budget_tokens": 4000}``),
    ``default_headers``, and ``client`` (a ready ``AsyncAnthropic``, which makes the key and URL
    arguments unused).
    """
    unknown = set(options) - _OPTIONS
    if unknown:
        raise ConfigurationError(
            f"unknown option(s) for the Anthropic adapter: {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(_OPTIONS))}"
        )
    client = options.get("client")
    factory = None
    if client is None:
        factory = _client_factory(base_url, api_key, options)
        client = factory()
    return AnthropicModel(
        model_name,
        client=client,
        client_factory=factory,
        settings=settings,
        provider=provider,
        native_output=bool(options.get("native_output", False)),
        thinking=options.get("thinking"),
        plain_any_size=options.get("timeout") is not None,
    )


def _client_factory(
    base_url: str | None, api_key: str | None, options: Mapping[str, Any]
) -> Callable[[], AsyncAnthropic]:
    env = options.get("api_key_env") or "ANTHROPIC_API_KEY"
    key = api_key or os.environ.get(env)
    if not key:
        raise ConfigurationError(f"no Anthropic API key: set the {env} environment variable or pass api_key=...")
    idle = idle_timeout(options.get("timeout", DEFAULT_TIMEOUT))
    extra: dict[str, Any] = {"timeout": anthropic.Timeout(idle, connect=min(idle, DEFAULT_CONNECT_TIMEOUT))}
    if options.get("default_headers"):
        extra["default_headers"] = dict(options["default_headers"])
    return functools.partial(
        AsyncAnthropic,
        api_key=key,
        base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL") or None,
        max_retries=check_retries(options.get("max_retries", 2)),
        **extra,
    )


class AnthropicModel(ProviderModel):
    """A Claude model behind the Anthropic Messages API.

    Streams when ``respond`` gets an ``on_event`` handler (or ``settings.stream`` is True) and
    makes a plain request otherwise. Both read the raw wire JSON once, without building SDK
    objects.
    """

    def __init__(
        self,
        model_name: str,
        *,
        client: AsyncAnthropic,
        client_factory: Callable[[], AsyncAnthropic] | None = None,
        settings: ModelSettings | None = None,
        provider: str = PROVIDER,
        native_output: bool = False,
        thinking: Mapping[str, Any] | None = None,
        plain_any_size: bool = False,
    ) -> None:
        timeout = client.timeout
        self._init_common(
            model_name,
            provider=provider,
            settings=settings,
            clients=PerLoop(client, client_factory, _close),
            secret=client.api_key,
            attempts=client.max_retries + 1,
            idle_timeout=timeout.read if isinstance(timeout, anthropic.Timeout) else timeout,
        )
        self._native_output = native_output
        self._thinking = thinking
        self._plain_limit = None if plain_any_size else _PLAIN_MAX_TOKENS
        profile = lookup_profile(model_name)
        self._default_max_tokens = profile.max_output_tokens if profile else DEFAULT_MAX_TOKENS

    @property
    def base_url(self) -> str:
        """The API's base URL."""
        return str(self._clients.first.base_url)

    def _wants_stream(self, settings: ModelSettings, on_event: EventHandler | None) -> bool:
        if settings.stream is not None:
            return settings.stream
        too_long = self._plain_limit is not None and self._max_tokens(settings) > self._plain_limit
        return on_event is not None or too_long

    def _max_tokens(self, settings: ModelSettings) -> int:
        return settings.max_tokens or self._default_max_tokens

    async def _send(
        self, request: ModelRequest, settings: ModelSettings, stream: bool, on_event: EventHandler | None
    ) -> ModelResponse:
        max_tokens = self._max_tokens(settings)
        body, output_tool = build_body(
            request,
            model=self._name,
            settings=settings,
            max_tokens=max_tokens,
            thinking=self._thinking,
            native_output=self._native_output,
        )
        # Only the three required fields go through the SDK's signature; the rest of the body rides
        # in extra_body, so fields an SDK version does not list (or no longer lists) still reach the API.
        model, max_tokens, messages = body.pop("model"), body.pop("max_tokens"), body.pop("messages")
        extra_body = {**body, **settings.extra}
        sent = {"model": model, "max_tokens": max_tokens, "messages": messages, **extra_body}
        self._sent({**sent, "stream": True} if stream else sent)
        if stream:
            return await self._stream(model, max_tokens, messages, extra_body, on_event, output_tool)
        timeout = None
        if self._plain_limit is not None and max_tokens > self._plain_limit:  # plain forced by settings
            timeout = max(600.0, 3600.0 * max_tokens / 128_000)
        raw = await self._clients.get().messages.with_raw_response.create(
            model=model, max_tokens=max_tokens, messages=messages, extra_body=extra_body, timeout=timeout or NOT_GIVEN
        )
        data = json.loads(await raw.read())
        self._received(data)
        return parse_message(data, output_tool)

    async def _stream(
        self,
        model: str,
        max_tokens: int,
        messages: list[Any],
        extra_body: dict[str, Any],
        on_event: EventHandler | None,
        output_tool: str | None,
    ) -> ModelResponse:
        raw = await self._clients.get().messages.with_raw_response.create(
            model=model, max_tokens=max_tokens, messages=messages, stream=True, extra_body=extra_body
        )
        response = raw.http_response
        try:
            events = self._tapped(AsyncStream.raw_events(response), _sse_json)
            return await read_stream(events, on_event, output_tool)
        except ProviderError:
            raise
        except Exception as exc:  # the stream broke after the request succeeded: no retry was made
            self._fail(exc, 1)
        finally:
            await response.aclose()

    def _error(self, exc: Exception, attempts: int) -> ProviderError | None:
        if isinstance(exc, anthropic.APIStatusError):
            body = exc.body
            error = body.get("error") if isinstance(body, dict) else None
            error = error if isinstance(error, dict) else {}
            message = error.get("message")
            return provider_error(
                self.provider,
                status=exc.status_code if exc.status_code >= 300 else None,  # >= 300: not an error event in a 200
                codes=[error.get("type")],
                message=message if isinstance(message, str) else str(exc),
                headers=exc.response.headers,
                body=body,
                secret=self._secret,
            )
        if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
            return self._transport_error(exc, attempts, timed_out=True)
        if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError):
            return self._transport_error(exc, attempts, timed_out=False)
        if isinstance(exc, anthropic.APIResponseValidationError | json.JSONDecodeError):
            return ModelResponseError(f"Anthropic answered something unreadable: {exc}", provider=self.provider)
        return None


def _sse_json(sse: Any) -> Any:
    try:
        return {"event": sse.event, "data": json.loads(sse.data)}
    except ValueError:
        return {"event": sse.event, "data": sse.data}


async def _close(client: AsyncAnthropic) -> None:
    await client.close()
