"""Google Gemini adapter (``"google:..."`` / ``"gemini:..."``), on the Gemini API's wire format.

By default requests go out on the lean transport (:class:`tooloop.transport.client.Client`): ``POST
{base_url}/v1beta/models/{model}:generateContent`` (plain) or ``:streamGenerateContent?alt=sse``
(streamed), with the headers, timeouts and server-side deadline ``google-genai`` would use, at a
fraction of its client CPU. ``transport="sdk"`` sends them through ``google-genai``'s
``client.aio.models.generate_content`` / ``generate_content_stream`` instead (always the case for a
``client`` you pass, and when a proxy is configured for the URL). Either way the adapter builds
one request body in the wire format and reads the answer as the wire's JSON, with its own retries.

The body is built by :mod:`.request`, a plain answer and the chunks of a stream are read by
:mod:`.response` (the SSE events split by :mod:`.stream`); :mod:`.sdk` is the SDK fallback.
Gemini-only data (thought parts, ``thoughtSignature`` values, Gemini's own function-call ids) is
kept as ``ThinkingPart(provider="google")`` and under the ``"google"`` key of ``provider_data``,
and is sent back to Gemini only. With ``ModelSettings(cache="explicit")`` the stable prefix goes
into a ``cachedContents`` resource (:mod:`.caching`). See docs/providers.md.
"""

from __future__ import annotations

import asyncio
import math
import os
import platform
import re
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from ...errors import ConfigurationError, ProviderError
from ...events import EventHandler
from ...messages import ModelResponse
from ...transport.client import StatusError, StreamError, lean_eligible
from ...transport.perloop import PerLoop
from ...transport.retry import RetryPolicy, retry_after
from ..adapter import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_TIMEOUT,
    USER_AGENT,
    ErrorBody,
    ProviderModel,
    check_retries,
    checked_headers,
    idle_timeout,
)
from ..base import ModelRequest, ModelSettings
from ..payloads import listening
from .caching import ExplicitCache
from .chunks import ChunkShapeError, chunk_from
from .request import PROVIDER, GeminiRequest, generation
from .response import Reader, google_body, read_error
from .stream import GeminiClient, GeminiEvents

if TYPE_CHECKING:
    from google import genai

    from .sdk import SdkChannel, SdkEvents

__all__ = ["GeminiModel", "create"]

_API_VERSION = "v1beta"
_KEY_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
_BASE_URL_ENV = "GOOGLE_GEMINI_BASE_URL"
_DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/"
_OPTIONS = frozenset({"max_retries", "timeout", "client", "transport"})
_BAD_NAME = re.compile(r"\.\.|[?&#%\s\x00-\x1f\x7f]")
_SERVER_DEADLINE = 600  # seconds Google may spend on one generation, however slowly it streams


def create(
    model_name: str,
    *,
    provider: str = PROVIDER,
    base_url: str | None = None,
    api_key: str | None = None,
    settings: ModelSettings | None = None,
    **options: Any,
) -> GeminiModel:
    """Registry factory for ``"google:<model>"`` and ``"gemini:<model>"``.

    Options: ``max_retries`` (default 2), ``timeout`` (seconds without a byte), ``client`` (a
    ready ``genai.Client``), ``transport`` (``"lean"``, the default, or ``"sdk"``: see the module
    docstring).
    """
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ConfigurationError(f"unknown option(s) for {provider!r} models: {', '.join(unknown)}")
    return GeminiModel(model_name, base_url=base_url, api_key=api_key, settings=settings, provider=provider, **options)


class GeminiModel(ProviderModel):
    """A Gemini model behind the ``Model`` protocol.

    The API key is ``api_key``, else ``GEMINI_API_KEY``, else ``GOOGLE_API_KEY``; the base URL
    ``base_url``, else ``GOOGLE_GEMINI_BASE_URL``, else Google's. Retryable errors (429, 5xx,
    connection failures before anything streamed) are retried ``max_retries`` times, honouring
    the server's ``Retry-After`` header or ``RetryInfo.retryDelay``. ``transport`` chooses the
    lean path (default) or ``google-genai`` (``"sdk"``; implied by ``client``).
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
        client: genai.Client | None = None,
        transport: str = "lean",
    ):
        if transport not in ("lean", "sdk"):
            raise ConfigurationError(f"transport must be 'lean' or 'sdk', not {transport!r}")
        if not model_name or _BAD_NAME.search(model_name):
            raise ConfigurationError(f"not a Gemini model name: {model_name!r}")
        self._retry = RetryPolicy(check_retries(max_retries), max_wait=60.0)
        self._request = GeminiRequest(model_name)
        resource = model_name if model_name.startswith(("models/", "tunedModels/")) else f"models/{model_name}"
        self._explicit = ExplicitCache(resource)
        self._native = generation(model_name) >= 3
        self._base = base_url or os.environ.get(_BASE_URL_ENV) or _DEFAULT_BASE_URL
        idle = idle_timeout(timeout)
        key = api_key or next((os.environ[name] for name in _KEY_ENV if os.environ.get(name)), None)
        channel = self._channel_for(model_name, key, base_url, idle, transport, client)
        if settings is not None:
            channel.check_extra(settings.extra)
        self._init_common(
            model_name, provider=provider, settings=settings, channel=channel, secret=key, attempts=self._retry.attempts
        )
        self._channel: GeminiClient | SdkChannel = channel

    def _channel_for(
        self, name: str, key: str | None, base_url: str | None, idle: float, transport: str, client: Any
    ) -> GeminiClient | SdkChannel:
        if client is not None:
            from .sdk import SdkChannel, close_client

            return SdkChannel(PerLoop(client, None, close_client), name, self._base, idle)
        key = _checked_key(key)
        # The SDK sends its timeout as Google's X-Server-Timeout, a deadline for the whole
        # generation on Google's side; that deadline stays generous.
        deadline = str(max(_SERVER_DEADLINE, math.ceil(idle)))
        checked_headers(PROVIDER, {"x-goog-api-key": key}, key)  # on either path
        if transport == "lean" and lean_eligible(self._base):
            resource = name if name.startswith(("models/", "tunedModels/")) else f"models/{name}"
            return GeminiClient(
                self._base,
                f"{_API_VERSION}/{resource}",
                _headers(key, deadline),
                connect_timeout=min(idle, DEFAULT_CONNECT_TIMEOUT),
                read_timeout=idle,
            )
        from .sdk import SdkChannel, client_factory, close_client

        make = client_factory(key, base_url, idle, deadline)
        return SdkChannel(PerLoop(make(), make, close_client), name, self._base, idle)

    @property
    def base_url(self) -> str:
        """The API's base URL."""
        return self._base

    @property
    def native_output(self) -> bool:
        """True from Gemini 3 on, where ``responseJsonSchema`` also works beside tools."""
        return self._native

    @property
    def transport(self) -> str:
        """``"lean"`` or ``"sdk"``: the path this model's requests take."""
        return "sdk" if self._translate is not None else "lean"

    def _send(
        self, request: ModelRequest, settings: ModelSettings, stream: bool, on_event: EventHandler | None
    ) -> Awaitable[ModelResponse]:
        # Not a coroutine itself: what it returns is respond's, one level fewer in every waiting
        # conversation; it does all the work, and raises what _raised says.
        return self._answer(request, settings, stream, on_event)

    _maps_errors = True

    async def _answer(
        self, request: ModelRequest, settings: ModelSettings, stream: bool, on_event: EventHandler | None
    ) -> ModelResponse:
        """The answer to ``request``: its body built, sent, retried as the policy says, read."""
        try:
            body = self._request.body(request, settings)
            if settings.cache == "explicit" and "cachedContent" not in settings.extra:
                explicit = self._explicit.apply(body, settings.cache_ttl, self._channel.create_cache, self._cache_error)
                body = await explicit
            channel = self._channel
            sent = channel.prepare(body, settings.extra)
            del body
            shown = channel.shown(sent) if listening() else None
            # Encoded now (on the lean path), and the dicts let go: at thousands of conversations
            # waiting for their answers, every object kept alive meanwhile is scanned by the garbage
            # collector. Every attempt sends the same bytes.
            payload: Any = channel.encode(sent)  # bytes, or the dicts themselves for the SDK
            del sent
            attempt = 0
            while True:
                # The reader is made once the answer is there: nothing of it waits with the request.
                reader: Reader | None = None
                try:
                    if shown is not None:
                        self._sent(shown)
                    if stream:
                        events = await channel.stream(payload)
                        reader = Reader(self._name, on_event)
                        if shown is not None:
                            return await self._tapped_stream(events, reader)
                        try:  # the hot path, inline: no coroutine, no iterator between the body and the reader
                            await events.read(reader.add_all)
                        except BaseException:
                            events.close()  # abandoned half way: the connection's state is unknown
                            raise
                        return reader.finish(streamed=True)
                    if shown is None:
                        chunk = await channel.generate(payload, True)
                    else:
                        data = await channel.generate(payload, False)
                        self._received(data)
                        chunk = chunk_from(data)
                    reader = Reader(self._name, on_event)
                    reader.add(chunk)
                    return reader.finish(streamed=False)
                except ProviderError:
                    raise
                except Exception as exc:
                    delay = self._next_attempt(exc, attempt, reader)
                await asyncio.sleep(delay)
                attempt += 1
        except Exception as exc:
            failure = self._raised(exc)
        failure.__context__ = None  # see _raised
        raise failure

    def _next_attempt(self, exc: Exception, attempt: int, reader: Reader | None) -> float:
        """Seconds to wait before retrying after attempt ``attempt`` failed with ``exc``; raises the
        tooloop error (or ``exc``, not a provider failure) when no attempt follows."""
        error = self._error(exc, attempt + 1)
        if error is None:
            raise exc
        delay = self._delay(error, attempt, exc)
        emitted = reader is not None and reader.emitted
        if delay is None or attempt >= self._retry.max_retries or emitted:
            self._fail(exc, attempt + 1)
        return delay

    async def _tapped_stream(self, events: GeminiEvents | SdkEvents, reader: Reader) -> ModelResponse:
        """A streamed answer read chunk by chunk, shown to a payload listener once it ends."""
        try:
            add = reader.add
            async for chunk in self._tapped(aiter(events)):
                add(chunk_from(chunk))
        except BaseException:
            events.close()  # abandoned half way: the connection's state is unknown
            raise
        return reader.finish(streamed=True)

    _unreadable = (ChunkShapeError,)

    def _cache_error(self, exc: Exception) -> ProviderError | None:
        return self._error(exc, 1)

    def _delay(self, error: ProviderError, attempt: int, exc: Exception) -> float | None:
        """Seconds to wait before retrying (what the server asked, if it said), or None when retrying is pointless."""
        if not error.retryable:
            return None
        failure = self._translate(exc) if self._translate is not None else None
        failure = failure or exc
        wait = retry_after(failure.headers, google_body(failure)) if isinstance(failure, StatusError) else None
        if wait is not None and wait > self._retry.max_wait:
            return None  # a longer wait is the caller's decision, not a silent sleep
        return self._retry.delay(attempt, wait)

    def _read_error(self, error: StatusError | StreamError) -> ErrorBody:
        return read_error(error)


def _checked_key(key: str | None) -> str:
    if not key:
        raise ConfigurationError(
            "no Gemini API key: pass api_key=... or set GEMINI_API_KEY (or GOOGLE_API_KEY) in the environment"
        )
    if any(c in key for c in "\r\n\0"):
        raise ConfigurationError("the Gemini API key contains a line break or NUL")
    return key


def _headers(key: str, deadline: str) -> dict[str, str]:
    """The headers ``google-genai`` sends, with tooloop as the client library."""
    agent = f"{USER_AGENT} gl-python/{platform.python_version()}"
    return {
        "accept": "*/*",
        "accept-encoding": "gzip, deflate",
        "content-type": "application/json",
        "x-goog-api-key": key,
        "x-server-timeout": deadline,
        "user-agent": agent,
        "x-goog-api-client": agent,
    }
