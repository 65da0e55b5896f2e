"""The one shape every provider adapter has, and the prologue they share.

An adapter subclasses :class:`ProviderModel` and writes three things: ``_send`` (build the
request, send it plain or streamed, read the answer), ``_error`` (extract status, codes, message
and headers from its SDK's exception for the error table in :mod:`._errors`) and ``base_url``.
Everything else is here: the name and ``repr``, merging the request's settings into the
model's, choosing between a stream and a plain request, turning failures into tooloop errors
without leaking the key, and the default idle timeout.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NoReturn

from .._version import __version__
from ..errors import ConfigurationError, ProviderError
from ..events import EventHandler
from ..messages import ModelResponse
from ._errors import connection_error, timeout_error
from ._per_loop import ClientModel, PerLoop
from .base import ModelRequest, ModelSettings
from .payloads import listening, report, tap

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "DEFAULT_TIMEOUT", "USER_AGENT", "ProviderModel", "check_retries", "root_cause"]

DEFAULT_TIMEOUT = 120.0
"""Seconds a request or stream may go without receiving a byte before it fails as a timeout."""

DEFAULT_CONNECT_TIMEOUT = 10.0
"""Seconds to open a connection."""

USER_AGENT = f"tooloop/{__version__}"
"""What the lean transports send as ``User-Agent``."""


class ProviderModel(ClientModel, ABC):
    """Base of the provider adapters: ``respond`` is the shared prologue around ``_send``."""

    provider: str
    _name: str
    _settings: ModelSettings
    _secret: str | None
    _attempts: int
    """Requests one ``respond`` may make: the SDK's retries plus the first."""
    _idle_timeout: float | None

    def _init_common(
        self,
        name: str,
        *,
        provider: str,
        settings: ModelSettings | None,
        clients: PerLoop[Any],
        secret: str | None,
        attempts: int,
        idle_timeout: float | None,
    ) -> None:
        self._name = name
        self.provider = provider
        self._settings = settings or ModelSettings()
        self._clients = clients
        self._secret = secret
        self._attempts = attempts
        self._idle_timeout = idle_timeout

    @property
    def name(self) -> str:
        """The model's name as the provider knows it, e.g. ``"gpt-4.1"``."""
        return self._name

    @property
    @abstractmethod
    def base_url(self) -> str:
        """The URL requests go to."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r}, provider={self.provider!r}, base_url={self.base_url!r})"

    async def respond(self, request: ModelRequest, on_event: EventHandler | None = None) -> ModelResponse:
        """Send ``request``; stream when ``on_event`` is given (or ``settings.stream`` says so)."""
        settings = self._settings.merged(request.settings)
        stream = self._wants_stream(settings, on_event)
        try:
            return await self._send(request, settings, stream, on_event)
        except ProviderError:
            raise
        except Exception as exc:
            self._fail(exc, self._attempts)

    def _sent(self, body: Any) -> None:
        """Show the request body to a payload listener (see :mod:`.payloads`)."""
        report("request", self.provider, self._name, body, secret=self._secret)

    def _received(self, data: Any) -> None:
        """Show a plain response's body to a payload listener."""
        report("response", self.provider, self._name, data, secret=self._secret)

    def _tapped(self, chunks: AsyncIterator[Any], convert: Callable[[Any], Any] | None = None) -> AsyncIterator[Any]:
        """``chunks``, shown to a payload listener once the stream ends (unchanged when nobody listens)."""
        if not listening():
            return chunks
        return tap(chunks, self.provider, self._name, self._secret, convert)

    def _wants_stream(self, settings: ModelSettings, on_event: EventHandler | None) -> bool:
        return settings.stream if settings.stream is not None else on_event is not None

    @abstractmethod
    def _send(
        self, request: ModelRequest, settings: ModelSettings, stream: bool, on_event: EventHandler | None
    ) -> Awaitable[ModelResponse]:
        """Build the request, send it, read the answer (an ``async def``, or a function returning one's coroutine)."""

    @abstractmethod
    def _error(self, exc: Exception, attempts: int) -> ProviderError | None:
        """The tooloop error for an exception of the SDK or its transport; None for anything else."""

    def _fail(self, exc: Exception, attempts: int) -> NoReturn:
        """Raise the tooloop error for ``exc`` (``exc`` itself when it is not a provider failure).

        The chain to ``exc`` is cut when its text holds the key.
        """
        error = self._error(exc, attempts)
        if error is None:
            raise exc
        leaky = self._secret is not None and self._secret in f"{exc} {exc!r} {root_cause(exc)!r}"
        raise error from (None if leaky else exc)

    def _transport_error(self, exc: BaseException, attempts: int, *, timed_out: bool) -> ProviderError:
        if timed_out:
            return timeout_error(self.provider, self.base_url, attempts, self._idle_timeout, secret=self._secret)
        cause = root_cause(exc)
        detail = str(cause) or type(cause).__name__
        return connection_error(self.provider, self.base_url, attempts, detail, secret=self._secret)


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception ``exc`` was raised from (the transport's own error)."""
    seen = {id(exc)}
    while True:
        inner = exc.__cause__ or exc.__context__
        if inner is None or id(inner) in seen:
            return exc
        seen.add(id(inner))
        exc = inner


def check_retries(max_retries: object) -> int:
    """``max_retries`` when it is a non-negative int."""
    if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
        raise ConfigurationError(f"max_retries must be a non-negative int, not {max_retries!r}")
    return max_retries


def idle_timeout(value: object) -> float:
    """The idle timeout option: seconds without a byte before a request or stream fails."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigurationError(f"timeout must be a positive number of seconds, not {value!r}")
    return float(value)
