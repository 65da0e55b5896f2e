"""The Anthropic Messages API adapter.

``get_model("anthropic:claude-sonnet-4-5")`` creates an :class:`AnthropicModel` through
:func:`create`. By default its requests go out on the lean transport (:mod:`._lean_openai`, the
same Stainless-style client the Chat Completions adapter uses: the ``anthropic`` SDK is generated
by the same tool and retries the same way), which sends the headers the SDK sends (the key as a
bearer token, ``anthropic-version``, ``default_headers``) and keeps its base URL, retries and
timeouts at a fraction of the client CPU, without importing the SDK. ``transport="sdk"`` sends
them through ``AsyncAnthropic`` (always the case for a ``client`` you pass, and when a proxy is
configured for the URL).

Either way this module builds the request body (:mod:`._anthropic_request`), reads the raw JSON
answer or SSE event stream (:mod:`._anthropic_response`) and maps failures through the one error
table (:mod:`._errors`).
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ConfigurationError, ModelResponseError, ProviderError
from ..events import EventHandler
from ..messages import ModelResponse
from ._adapter import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, ProviderModel, check_retries, idle_timeout
from ._anthropic_request import PROVIDER, build_body
from ._anthropic_response import parse_message, read_stream
from ._errors import provider_error, timeout_error
from ._lean_http import ConnectTimeout, ReadTimeout, Response, TransportError, sse_events
from ._lean_openai import LeanOpenAI, LeanStatusError, lean_eligible, loads
from ._per_loop import PerLoop
from .base import ModelRequest, ModelSettings
from .profiles import lookup_profile

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["ANTHROPIC_VERSION", "AnthropicModel", "create"]

DEFAULT_MAX_TOKENS = 8192
"""``max_tokens`` for models the profile table does not know (Anthropic requires a value)."""

ANTHROPIC_VERSION = "2026-10-21"
"""The ``anthropic-version`` header the lean path sends: the API version the ``anthropic`` SDK sends."""

_PATH = "/v1/messages"
_ANTHROPIC_URL = "https://api.anthropic.com"

_PLAIN_MAX_TOKENS = 8192
# A plain answer arrives in one piece when the model is done, so the idle timeout must cover the
# whole generation; above this max_tokens a request without a listener streams quietly (unless
# the timeout option is set), and a plain request forced by settings gets a longer idle timeout.

_OPTIONS = frozenset(
    {"max_retries", "timeout", "native_output", "thinking", "client", "default_headers", "api_key_env", "transport"}
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
    to ``ANTHROPIC_BASE_URL``, then ``https://api.anthropic.com``. Options: ``max_retries`` (2),
    ``timeout`` (seconds without a byte), ``native_output`` (structured output through a forced
    tool), ``thinking`` (passed through, e.g. ``{"type": "enabled", "budget_tokens": 4000}``),
    ``default_headers``, ``client`` (a ready ``AsyncAnthropic``, which makes the key and URL
    arguments unused) and ``transport`` (``"lean"``, the default, or ``"sdk"``: see the module
    docstring).
    """
    unknown = set(options) - _OPTIONS
    if unknown:
        raise ConfigurationError(
            f"unknown option(s) for the Anthropic adapter: {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(_OPTIONS))}"
        )
    transport = options.get("transport", "lean")
    if transport not in ("lean", "sdk"):
        raise ConfigurationError(f"transport must be 'lean' or 'sdk', not {transport!r}")
    common: dict[str, Any] = {
        "settings": settings,
        "provider": provider,
        "native_output": bool(options.get("native_output", False)),
        "thinking": options.get("thinking"),
        "plain_any_size": options.get("timeout") is not None,
    }
    if options.get("client") is not None:
        return AnthropicModel(model_name, client=options["client"], **common)
    key = _key(api_key, options.get("api_key_env"))
    max_retries = check_retries(options.get("max_retries", 2))
    idle = idle_timeout(options.get("timeout", DEFAULT_TIMEOUT))
    connect = min(idle, DEFAULT_CONNECT_TIMEOUT)
    headers = options.get("default_headers")
    url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
    if transport == "lean" and lean_eligible(url or _ANTHROPIC_URL):
        lean = functools.partial(
            LeanOpenAI,
            url or _ANTHROPIC_URL,
            _lean_headers(key, headers),
            max_retries=max_retries,
            connect_timeout=connect,
        )
        return AnthropicModel(model_name, lean=lean(read_timeout=idle), lean_factory=lean, secret=key, **common)
    factory = _sdk().client_factory(key, url, max_retries, idle, connect, headers)
    return AnthropicModel(model_name, client=factory(), client_factory=factory, **common)


def _sdk() -> ModuleType:
    """The SDK path's module; a clear error when the ``anthropic`` package is not installed."""
    try:
        from . import _anthropic_sdk
    except ImportError as exc:
        raise ConfigurationError(
            f"{exc}: transport='sdk' (also chosen when a proxy is configured for the URL) needs the "
            'anthropic SDK: pip install "tooloop[anthropic]"'
        ) from exc
    return _anthropic_sdk


def _key(api_key: str | None, env: str | None) -> str:
    env = env or "ANTHROPIC_API_KEY"
    key = api_key or os.environ.get(env)
    if not key:
        raise ConfigurationError(f"no Anthropic API key: set the {env} environment variable or pass api_key=...")
    return key


def _lean_headers(key: str, extra: Mapping[str, str] | None) -> dict[str, str]:
    """The headers the SDK sends: the key, the API version, ``ANTHROPIC_CUSTOM_HEADERS``, defaults."""
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": f"tooloop/{importlib.metadata.version('tooloop')}",
        "anthropic-version": ANTHROPIC_VERSION,
        "Authorization": f"Bearer {key}",
        "Accept-Encoding": "gzip, deflate",
    }
    return {**headers, **_custom_headers(os.environ.get("ANTHROPIC_CUSTOM_HEADERS")), **(extra or {})}


def _custom_headers(variable: str | None) -> dict[str, str]:
    """``Name: value`` lines, as the SDK reads them from ``ANTHROPIC_CUSTOM_HEADERS``."""
    headers = {}
    for line in (variable or "").split("\n"):
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip()] = value.strip()
    return headers


class _Events(Protocol):
    """A streamed answer: ``(event name, data)`` pairs, and ``close`` to let the connection go."""

    def __aiter__(self) -> AsyncIterator[tuple[str | None, bytes]]: ...

    async def close(self) -> None: ...


class _LeanEvents:
    """The events of one SSE answer on the lean transport."""

    __slots__ = ("_response",)

    def __init__(self, response: Response) -> None:
        self._response = response

    def __aiter__(self) -> AsyncIterator[tuple[str | None, bytes]]:
        return sse_events(self._response.iter_bytes())

    async def close(self) -> None:
        """Drop the connection unless the body was read to its end (then it is back in the pool)."""
        self._response.close()


class AnthropicModel(ProviderModel):
    """A Claude model behind the Anthropic Messages API.

    Streams when ``respond`` gets an ``on_event`` handler (or ``settings.stream`` is True) and
    makes a plain request otherwise. Both read the raw wire JSON once, without building SDK
    objects. ``client`` is an ``AsyncAnthropic`` (its key, base URL, retries and timeout are used
    as they are); without one, use :func:`create` (or ``get_model``).
    """

    def __init__(
        self,
        model_name: str,
        *,
        client: AsyncAnthropic | None = None,
        client_factory: Callable[[], AsyncAnthropic] | None = None,
        lean: LeanOpenAI | None = None,
        lean_factory: Callable[..., LeanOpenAI] | None = None,
        secret: str | None = None,
        settings: ModelSettings | None = None,
        provider: str = PROVIDER,
        native_output: bool = False,
        thinking: Mapping[str, Any] | None = None,
        plain_any_size: bool = False,
    ) -> None:
        if lean is not None:
            clients: PerLoop[Any] = lean.pools
            attempts, idle = lean.max_retries + 1, lean.pools.first.read_timeout
        elif client is not None:
            from ._anthropic_sdk import client_limits, close_client

            clients = PerLoop(client, client_factory, close_client)
            secret, attempts, idle = client_limits(client)
        else:
            raise ConfigurationError("AnthropicModel needs an AsyncAnthropic client (or use get_model)")
        self._init_common(
            model_name,
            provider=provider,
            settings=settings,
            clients=clients,
            secret=secret,
            attempts=attempts,
            idle_timeout=idle,
        )
        self._lean = lean
        self._lean_factory = lean_factory
        self._long: dict[float, LeanOpenAI] = {}
        self._native_output = native_output
        self._thinking = thinking
        self._plain_limit = None if plain_any_size else _PLAIN_MAX_TOKENS
        profile = lookup_profile(model_name)
        self._default_max_tokens = profile.max_output_tokens if profile else DEFAULT_MAX_TOKENS

    @property
    def base_url(self) -> str:
        """The API's base URL."""
        if self._lean is not None:  # written as the SDK writes it: a path ends with "/"
            endpoint = self._lean.endpoint
            return endpoint.url + "/" if endpoint.path else endpoint.url
        return str(self._clients.first.base_url)

    async def aclose(self) -> None:
        """Close the model's connections (the model cannot be used afterwards)."""
        await super().aclose()
        long, self._long = self._long, {}
        for lean in long.values():
            await lean.aclose()

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
        if settings.extra:
            body.update(settings.extra)
        if stream:
            body["stream"] = True
            self._sent(body)
            return await self._stream(body, on_event, output_tool)
        self._sent(body)
        data = await self._plain(body, max_tokens)
        self._received(data)
        return parse_message(data, output_tool)

    async def _plain(self, body: dict[str, Any], max_tokens: int) -> Any:
        long = self._plain_limit is not None and max_tokens > self._plain_limit  # plain forced by settings
        timeout = max(600.0, 3600.0 * max_tokens / 128_000) if long else None
        if self._lean is None:
            from ._anthropic_sdk import post_plain

            return await post_plain(self._clients.get(), body, timeout)
        if timeout is None or self._lean_factory is None:
            return await self._lean.post_json(_PATH, body)
        lean = self._long_client(timeout)
        try:
            return await lean.post_json(_PATH, body)
        except ReadTimeout:
            raise timeout_error(self.provider, self.base_url, self._attempts, timeout, secret=self._secret) from None

    def _long_client(self, timeout: float) -> LeanOpenAI:
        """A client like the model's own whose idle timeout covers a whole long plain answer."""
        lean = self._long.get(timeout)
        if lean is None:
            assert self._lean_factory is not None
            lean = self._long[timeout] = self._lean_factory(read_timeout=timeout)
        return lean

    async def _stream(
        self, body: dict[str, Any], on_event: EventHandler | None, output_tool: str | None
    ) -> ModelResponse:
        events: _Events
        if self._lean is not None:
            events = _LeanEvents(await self._lean.post(_PATH, body))
        else:
            from ._anthropic_sdk import open_stream

            events = await open_stream(self._clients.get(), body)
        try:
            return await read_stream(self._tapped(aiter(events), _payload), on_event, output_tool)
        except ProviderError:
            raise
        except Exception as exc:  # the stream broke after the request succeeded: no retry was made
            self._fail(exc, 1)
        finally:
            await events.close()

    def _error(self, exc: Exception, attempts: int) -> ProviderError | None:
        if isinstance(exc, TransportError):
            return self._transport_error(exc, attempts, timed_out=isinstance(exc, ReadTimeout | ConnectTimeout))
        if isinstance(exc, LeanStatusError):
            return self._table(exc.status, exc.message, exc.headers, exc.document)
        if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):  # a body or event that is not JSON
            return self._unreadable(exc)
        if "anthropic" not in sys.modules:  # only the SDK path raises the SDK's exceptions
            return None
        from ._anthropic_sdk import sdk_failure

        failure = sdk_failure(exc)
        if failure is None:
            return None
        if failure.transport is not None:
            return self._transport_error(exc, attempts, timed_out=failure.transport == "timeout")
        if failure.unreadable:
            return self._unreadable(exc)
        return self._table(failure.status, failure.message, failure.headers, failure.body)

    def _unreadable(self, exc: Exception) -> ProviderError:
        return ModelResponseError(f"Anthropic answered something unreadable: {exc}", provider=self.provider)

    def _table(
        self, status: int | None, default: str, headers: Mapping[str, str] | None, body: object
    ) -> ProviderError:
        error = body.get("error") if isinstance(body, dict) else None
        error = error if isinstance(error, dict) else {}
        message = error.get("message")
        return provider_error(
            self.provider,
            status=status,
            codes=[error.get("type")],
            message=message if isinstance(message, str) else default,
            headers=headers,
            body=body,
            secret=self._secret,
        )


def _payload(event: tuple[str | None, bytes]) -> dict[str, Any]:
    """One stream event as a payload listener sees it."""
    name, data = event
    return {"event": name, "data": loads(data) if data else None}
