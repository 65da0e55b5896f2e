"""The one shape every provider adapter has, and the prologue they share.

An adapter subclasses :class:`ProviderModel` and writes three things: ``_send`` (build the
request, send it plain or streamed, read the answer), ``_read_error`` (the codes, message and
body of its provider's error JSON) and ``base_url``. Everything else is here: the name and
``repr``, merging the request's settings into the model's, choosing between a stream and a plain
request, and turning failures into tooloop errors without leaking the key, once for every
provider: the transport's few errors (:mod:`tooloop.transport.client`), whichever path raised
them (an SDK fallback's ``translate`` turns its SDK's exceptions into the same ones), go through
the one error table (:mod:`.error_table`).
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from typing import Any, ClassVar, NoReturn, Self

from .._version import __version__
from ..errors import ConfigurationError, ModelResponseError, ProviderError
from ..events import EventHandler
from ..messages import ModelResponse
from ..transport.client import Channel, StatusError, StreamError, Translate, UnreadableError
from ..transport.http import (
    ConnectTimeout,
    ReadTimeout,
    RedirectError,
    TransportError,
    WriteTimeout,
    check_headers,
)
from ..transport.perloop import PerLoop
from ._secrets import scrub
from .base import ModelRequest, ModelSettings
from .error_table import connection_error, provider_error, timeout_error
from .inputs import ALL_INPUTS
from .payloads import listening, report, tap

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "USER_AGENT",
    "ClientModel",
    "ErrorBody",
    "ProviderModel",
    "check_retries",
    "exposes_key",
    "has_tool_search",
    "root_cause",
]

ErrorBody = tuple[list[object], str, object]
"""What a provider reads from its error JSON: the error codes, the message, the body kept on the error."""

_NOT_JSON = (json.JSONDecodeError, UnicodeDecodeError)

DEFAULT_TIMEOUT = 120.0
"""Seconds a request or stream may go without receiving a byte before it fails as a timeout."""

DEFAULT_CONNECT_TIMEOUT = 10.0
"""Seconds to open a connection."""

USER_AGENT = f"tooloop/{__version__}"
"""What the lean transports send as ``User-Agent``."""


class ClientModel:
    """Base of the adapters that own clients: ``aclose()`` and ``async with`` close them."""

    _channel: Channel

    async def aclose(self) -> None:
        """Close the clients' connections (the model cannot be used afterwards)."""
        await self._channel.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class ProviderModel(ClientModel, ABC):
    """Base of the provider adapters: ``respond`` is the shared prologue around ``_send``."""

    provider: str
    _name: str
    _settings: ModelSettings
    _secret: str | None
    _attempts: int
    """Requests one ``respond`` may make: the SDK's retries plus the first."""
    _idle_timeout: float | None
    _clients: PerLoop[Any]
    _translate: Translate | None = None
    """Set on the SDK path: the SDK fallback's translation of its exceptions."""
    _unreadable: tuple[type[Exception], ...] = ()
    """A provider's own exceptions for an answer that is JSON but not what its API sends."""
    input_kinds: frozenset[str] = ALL_INPUTS
    """The attachment kinds this model takes in user messages (see :mod:`.inputs`)."""

    def _init_common(
        self,
        name: str,
        *,
        provider: str,
        settings: ModelSettings | None,
        channel: Channel,
        secret: str | None,
        attempts: int | None = None,
    ) -> None:
        """``channel``: the lean transport or the SDK fallback, chosen by the caller; ``attempts``
        when the adapter retries itself (else the channel's)."""
        self._name = name
        self.provider = provider
        self._settings = settings or ModelSettings()
        self._channel = channel
        self._clients = channel.clients
        self._translate = channel.translate
        self._secret = secret
        self._attempts = attempts if attempts is not None else channel.attempts
        self._idle_timeout = channel.read_timeout

    @property
    def name(self) -> str:
        """The model's name as the provider knows it, e.g. ``"gpt-4.1"``."""
        return self._name

    @property
    def base_url(self) -> str:
        """The URL requests go to."""
        return self._channel.base_url

    @property
    def settings(self) -> ModelSettings:
        """The model's default settings (a request's own settings override them)."""
        return self._settings

    @property
    def native_output(self) -> bool:
        """Whether ``ModelRequest.output`` reaches the provider's own structured output; when it
        does not, the loop puts the schema in the instructions instead."""
        return False

    @property
    def native_tool_search(self) -> bool:
        """Whether the provider searches deferred tools itself (``ModelRequest.tool_search``);
        when it does not, tool search runs here (BM25)."""
        return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r}, provider={self.provider!r}, base_url={self.base_url!r})"

    def respond(
        self, request: ModelRequest, on_event: EventHandler | None = None
    ) -> Coroutine[Any, Any, ModelResponse]:
        """Send ``request``; stream when ``on_event`` is given (or ``settings.stream`` says so)."""
        settings = self._settings.merged(request.settings)
        stream = self._wants_stream(settings, on_event)
        if self._maps_errors:  # the adapter's coroutine is the request's: one level fewer while it waits
            return self._send(request, settings, stream, on_event)  # type: ignore[return-value]
        return self._mapped(self._send, request, settings, stream, on_event)

    _maps_errors: ClassVar[bool] = False
    """True when ``_send`` does nothing but hand out a coroutine that does all the work and raises
    what :meth:`_raised` gives for what fails (so the adapter's errors need no coroutine of their own)."""

    async def _mapped(
        self,
        send: Callable[[ModelRequest, ModelSettings, bool, EventHandler | None], Awaitable[ModelResponse]],
        request: ModelRequest,
        settings: ModelSettings,
        stream: bool,
        on_event: EventHandler | None,
    ) -> ModelResponse:
        """``send``'s answer (called here, so what it raises before its first wait is mapped too),
        what fails turned into a tooloop error (:meth:`_raised`)."""
        try:
            return await send(request, settings, stream, on_event)
        except Exception as exc:
            error = self._raised(exc)
        error.__context__ = None  # see _raised
        raise error

    def _raised(self, exc: Exception) -> ProviderError:
        """The error to raise for ``exc``, which failed a request: ``exc`` itself when it is a tooloop
        error, else :meth:`_failure` (``exc`` raised again when it is not a provider failure).

        Raise it outside the handler with no context (``error.__context__ = None``): the SDK's
        exception (which may quote the key) is not kept as the error's context; it stays its cause
        only when no exception of it quotes the key."""
        return exc if isinstance(exc, ProviderError) else self._failure(exc, self._attempts)

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

    def _error(self, exc: Exception, attempts: int) -> ProviderError | None:
        """The tooloop error for an exception of the transport or the SDK; None for anything else."""
        if self._translate is not None:
            exc = self._translate(exc) or exc
        if isinstance(exc, TransportError):
            return self._transport_error(
                exc, attempts, timed_out=isinstance(exc, ReadTimeout | ConnectTimeout | WriteTimeout)
            )
        if isinstance(exc, StatusError | StreamError):
            codes, message, body = self._read_error(exc)
            return provider_error(
                self.provider,
                status=exc.status,
                codes=codes,
                message=message,
                headers=exc.headers,
                body=body,
                secret=self._secret,
            )
        if isinstance(exc, _NOT_JSON):  # a body or event that is not JSON
            return ModelResponseError(
                f"{self.provider} sent data that is not valid JSON: {exc}", provider=self.provider
            )
        if isinstance(exc, (UnreadableError, *self._unreadable)):  # JSON, but not what the API sends
            return ModelResponseError(
                f"{self.provider} sent an answer tooloop cannot read: {exc}", provider=self.provider
            )
        return None

    @abstractmethod
    def _read_error(self, error: StatusError | StreamError) -> ErrorBody:
        """The codes, message and body of a failure the server reported (in ``error.body`` / ``document``)."""

    def _fail(self, exc: Exception, attempts: int) -> NoReturn:
        """Raise the tooloop error for ``exc`` (``exc`` itself when it is not a provider failure)."""
        raise self._failure(exc, attempts)

    def _failure(self, exc: Exception, attempts: int) -> ProviderError:
        """The tooloop error for ``exc``, caused by ``exc`` unless an exception of its chain quotes
        the key (raises ``exc`` itself when it is not a provider failure)."""
        error = self._error(exc, attempts)
        if error is None:
            raise exc
        error.__cause__ = None if exposes_key(exc, self._secret) else exc
        error.__suppress_context__ = True
        return error

    def _transport_error(self, exc: BaseException, attempts: int, *, timed_out: bool) -> ProviderError:
        if isinstance(exc, RedirectError):
            return ProviderError(scrub(f"{self.provider}: {exc}", self._secret), provider=self.provider)
        if timed_out:
            return timeout_error(
                self.provider,
                self.base_url,
                attempts,
                self._idle_timeout,
                writing=isinstance(exc, WriteTimeout),
                connecting=str(exc) if isinstance(exc, ConnectTimeout) else None,
                secret=self._secret,
            )
        cause = root_cause(exc)
        detail = str(cause) or type(cause).__name__
        return connection_error(self.provider, self.base_url, attempts, detail, secret=self._secret)


def exposes_key(exc: BaseException, secret: str | None) -> bool:
    """True when ``exc``, or an exception it was raised from or while handling, quotes ``secret``
    (in its text, its repr, or the body or response it carries)."""
    if not secret:
        return False
    secret = secret.strip() or secret  # a key with a trailing newline shows escaped (b'...\\n') in messages
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if secret in f"{current} {current!r} {getattr(current, 'body', '')} {getattr(current, 'response', '')}":
            return True
        pending += [current.__cause__, current.__context__]
    return False


_FAMILIES = {
    "anthropic": (re.compile(r"claude-[a-z]+-(\d+)(?:-(\d{1,2}))?(?!\d)"), (4, 5)),
    "openai": (re.compile(r"gpt-(\d+)(?:\.(\d+))?"), (5, 4)),
}


def has_tool_search(family: str, model: str, option: object) -> bool:
    """Whether a model has its provider's tool search: ``option`` (the adapter's
    ``native_tool_search``) when it is a bool, else by the model's name: Claude 4.5 models and
    later (``claude-sonnet-4-5``, ``claude-opus-5``), OpenAI's ``gpt-5.4`` and later, the first
    versions that have it. A name the rule does not read (a deployment alias) has none."""
    if option is not None:
        if not isinstance(option, bool):
            raise ConfigurationError(f"native_tool_search takes True, False or None, not {option!r}")
        return option
    pattern, first = _FAMILIES[family]
    found = pattern.search(model.lower())
    if found is None:
        return False
    return (int(found.group(1)), int(found.group(2) or 0)) >= first


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception ``exc`` was raised from (the transport's own error)."""
    seen = {id(exc)}
    while True:
        inner = exc.__cause__ or exc.__context__
        if inner is None or id(inner) in seen:
            return exc
        seen.add(id(inner))
        exc = inner


def check_max_connections(value: object) -> int | None:
    """``max_connections`` when it is None or a positive int."""
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ConfigurationError(f"max_connections must be a positive int, not {value!r}")
    return value


def checked_headers(provider: str, headers: Mapping[str, str], secret: str | None) -> Mapping[str, str]:
    """``headers`` when HTTP allows every name and value; else :class:`ConfigurationError` naming the
    header, never showing a value (the key is one of them)."""
    try:
        check_headers(headers, secret)
    except ValueError as exc:
        raise ConfigurationError(f"{provider!r} model: {exc}") from None
    return headers


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
