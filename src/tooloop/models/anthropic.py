"""The Anthropic Messages API adapter, on the official ``anthropic`` SDK (``AsyncAnthropic``).

``get_model("anthropic:claude-sonnet-4-5")`` creates an :class:`AnthropicModel` through
:func:`create`. The SDK sends the requests and retries them (``max_retries``, default 2); this
module builds the request body (:mod:`._anthropic_request`), reads the raw JSON answer or the raw
SSE event stream (:mod:`._anthropic_response`) and maps failures to tooloop errors
(:mod:`._anthropic_errors`).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from anthropic import NOT_GIVEN, AsyncAnthropic, AsyncStream

from ..errors import ConfigurationError, ProviderError
from ..events import EventHandler
from ..messages import ModelResponse
from ._anthropic_errors import map_exception
from ._anthropic_request import PROVIDER, build_body
from ._anthropic_response import parse_message, read_stream
from ._per_loop import ClientModel, PerLoop
from .base import ModelRequest, ModelSettings
from .profiles import lookup_profile

__all__ = ["AnthropicModel", "create"]

DEFAULT_MAX_TOKENS = 8192
"""``max_tokens`` for models the profile table does not know (Anthropic requires a value)."""

_PLAIN_MAX_TOKENS = 8192
# The SDK refuses a non-streamed request that may run longer than ten minutes (judged from
# max_tokens) unless a timeout is set; above this, a request without a listener streams quietly.

_OPTIONS = frozenset({"max_retries", "timeout", "native_output", "thinking", "client", "default_headers"})


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

    ``api_key`` defaults to ``ANTHROPIC_API_KEY`` and ``base_url`` to ``ANTHROPIC_BASE_URL``, then
    the SDK's default. Options: ``max_retries`` (2), ``timeout`` (seconds), ``native_output``
    (structured output through a forced tool), ``thinking`` (passed through, e.g.
    ``{"type": "enabled", "budget_tokens": 4000}``), ``default_headers``, and ``client`` (a ready
    ``AsyncAnthropic``, which makes the key and URL arguments unused).
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
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ConfigurationError(
                "no Anthropic API key: set the ANTHROPIC_API_KEY environment variable or pass api_key=..."
            )
        extra: dict[str, Any] = {}
        if options.get("timeout") is not None:
            extra["timeout"] = options["timeout"]
        if options.get("default_headers"):
            extra["default_headers"] = dict(options["default_headers"])
        factory = functools.partial(
            AsyncAnthropic,
            api_key=key,
            base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL") or None,
            max_retries=options.get("max_retries", 2),
            **extra,
        )
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


class AnthropicModel(ClientModel):
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
        self._name = model_name
        self._clients = PerLoop(client, client_factory, _close)
        self._settings = settings or ModelSettings()
        self.provider = provider
        self._native_output = native_output
        self._thinking = thinking
        self._plain_limit = None if plain_any_size else _PLAIN_MAX_TOKENS
        profile = lookup_profile(model_name)
        self._default_max_tokens = profile.max_output_tokens if profile else DEFAULT_MAX_TOKENS

    @property
    def name(self) -> str:
        """The model's name, e.g. ``"claude-sonnet-4-5"``."""
        return self._name

    def __repr__(self) -> str:
        return f"AnthropicModel({self._name!r})"

    async def respond(self, request: ModelRequest, on_event: EventHandler | None = None) -> ModelResponse:
        """Send ``request`` to the Messages API and return the complete response."""
        settings = self._settings.merged(request.settings)
        max_tokens = settings.max_tokens or self._default_max_tokens
        body, output_tool = build_body(
            request,
            model=self._name,
            settings=settings,
            max_tokens=max_tokens,
            thinking=self._thinking,
            native_output=self._native_output,
        )
        stream = settings.stream
        if stream is None:
            too_long = self._plain_limit is not None and max_tokens > self._plain_limit
            stream = on_event is not None or too_long
        # Only the three required fields go through the SDK's signature; the rest of the body rides
        # in extra_body, so fields an SDK version does not list (or no longer lists) still reach the API.
        model, max_tokens, messages = body.pop("model"), body.pop("max_tokens"), body.pop("messages")
        extra_body = {**body, **settings.extra}
        try:
            if stream:
                return await self._stream(model, max_tokens, messages, extra_body, on_event, output_tool)
            timeout = None
            if self._plain_limit is not None and max_tokens > self._plain_limit:  # plain forced by settings
                timeout = max(600.0, 3600.0 * max_tokens / 128_000)
            raw = await self._clients.get().messages.with_raw_response.create(
                model=model,
                max_tokens=max_tokens,
                messages=messages,
                extra_body=extra_body,
                timeout=timeout or NOT_GIVEN,
            )
            return parse_message(json.loads(await raw.read()), output_tool)
        except ProviderError:
            raise
        except Exception as exc:  # SDK, transport and decoding failures become tooloop errors
            secret = self._clients.first.api_key
            mapped = map_exception(exc, secret)
            if mapped is None:
                raise
            leaky = secret is not None and secret in f"{exc} {exc!r}"
            raise mapped from (None if leaky else exc)

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
            return await read_stream(AsyncStream.raw_events(response), on_event, output_tool)
        finally:
            await response.aclose()


async def _close(client: AsyncAnthropic) -> None:
    await client.close()
