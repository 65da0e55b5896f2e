"""The one error table: what a provider's failure means, whoever reported it and however.

Every adapter extracts the same four things from its SDK's exception (HTTP status, error codes,
message, headers) and calls :func:`provider_error`; a failure reported as an HTTP status and the
same failure reported as an ``error`` event inside a 200 stream get the same class. Transport
failures go through :func:`connection_error` and :func:`timeout_error`, whose messages name the
URL, the attempts made and what to check, never the key.

Order of the decision:

1. a prompt that does not fit (a context-length code or phrase, on a 4xx or a status-less error)
   is :class:`ContextLengthError`;
2. a code that means a rejected key is :class:`AuthenticationError` whatever the status;
3. the status table (401/403, 408, 409, 429, 504, 529), then any other 5xx as overloaded, any
   other 4xx as a bad request;
4. without a status, the code table (OpenAI codes, Anthropic error types, Groq codes, Google
   statuses); no code at all is a server-side failure, an unknown code a plain
   :class:`ProviderError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import (
    AuthenticationError,
    BadRequestError,
    ContextLengthError,
    ProviderConnectionError,
    ProviderError,
    ProviderOverloadedError,
    ProviderTimeoutError,
    RateLimitError,
)
from ..transport.retry import retry_after
from ._secrets import scrub, scrub_body

__all__ = [
    "CONTEXT_PHRASES",
    "connection_error",
    "error_class",
    "is_context_length",
    "provider_error",
    "retry_after",
    "timeout_error",
]

CONTEXT_PHRASES = (
    "maximum context length",
    "context length",
    "context window",
    "context_length_exceeded",
    "too many tokens",
    "prompt is too long",
    "exceeds the model's context",
    "exceed context limit",
    "exceeds the maximum number of tokens",
    "input token count",
)
"""Lower-case phrases of the providers' "the prompt does not fit" messages."""

_CONTEXT_CODES = frozenset({"context_length_exceeded", "string_above_max_length", "context_window_exceeded"})
_AUTH_CODES = frozenset({"invalid_api_key", "api_key_invalid", "authentication_error", "unauthenticated"})

_STATUS: dict[int, type[ProviderError]] = {
    401: AuthenticationError,
    403: AuthenticationError,
    408: ProviderTimeoutError,
    409: ProviderOverloadedError,
    429: RateLimitError,
    504: ProviderTimeoutError,
    529: ProviderOverloadedError,
}

_CODES: dict[str, type[ProviderError]] = {
    # authentication
    "permission_error": AuthenticationError,
    "permission_denied": AuthenticationError,
    # rate limits
    "rate_limit_exceeded": RateLimitError,
    "rate_limit_error": RateLimitError,
    "resource_exhausted": RateLimitError,
    # the provider failed or is busy
    "server_error": ProviderOverloadedError,
    "server_is_overloaded": ProviderOverloadedError,
    "overloaded_error": ProviderOverloadedError,
    "api_error": ProviderOverloadedError,
    "slow_down": ProviderOverloadedError,
    "internal": ProviderOverloadedError,
    "unavailable": ProviderOverloadedError,
    # timeouts
    "timeout_error": ProviderTimeoutError,
    "deadline_exceeded": ProviderTimeoutError,
    # the request was rejected
    "invalid_request_error": BadRequestError,
    "invalid_argument": BadRequestError,
    "invalid_prompt": BadRequestError,
    "not_found_error": BadRequestError,
    "request_too_large": BadRequestError,
    "tool_use_failed": BadRequestError,
    "failed_precondition": BadRequestError,
}


def is_context_length(codes: Iterable[object], message: str) -> bool:
    """True when an error code or the message says the prompt does not fit the context window."""
    if any(isinstance(code, str) and code.lower() in _CONTEXT_CODES for code in codes):
        return True
    lowered = message.lower()
    return any(phrase in lowered for phrase in CONTEXT_PHRASES)


def error_class(status: int | None, codes: Iterable[object], message: str) -> type[ProviderError]:
    """The error class for a failure with this HTTP status (None inside a stream), codes and message."""
    labels = [code.lower() for code in codes if isinstance(code, str) and code]
    client_side = status is None or (400 <= status < 500 and status not in (401, 403, 429))
    if client_side and is_context_length(labels, message):
        return ContextLengthError
    if any(label in _AUTH_CODES for label in labels):
        return AuthenticationError
    if status is not None:
        known = _STATUS.get(status)
        if known is not None:
            return known
        if 300 <= status < 400:  # a redirect that was not followed: trying again will not help
            return ProviderError
        if status >= 500:
            return ProviderOverloadedError
        if status >= 400:
            return BadRequestError
    for label in labels:
        if label in _CODES:
            return _CODES[label]
    return ProviderOverloadedError if not labels else ProviderError


def provider_error(
    provider: str,
    *,
    status: int | None,
    codes: Iterable[object] = (),
    message: str,
    headers: Mapping[str, str] | None = None,
    body: Any = None,
    secret: str | None = None,
) -> ProviderError:
    """The tooloop error for one failure: HTTP status (None for an error inside a stream), codes, text."""
    labels = [code for code in codes if isinstance(code, str) and code]
    cls = error_class(status, labels, message)
    where = f"{provider} {status}" if status is not None else f"{provider} stream error"
    label = f" ({', '.join(dict.fromkeys(labels))})" if labels else ""
    text = scrub(f"{where}{label}: {message}", secret)
    kwargs: dict[str, Any] = {"status_code": status, "provider": provider, "body": scrub_body(body, secret)}
    if cls is RateLimitError:
        return RateLimitError(text, retry_after=retry_after(headers, body), **kwargs)
    return cls(text, **kwargs)


def connection_error(
    provider: str, url: str, attempts: int, detail: str, *, secret: str | None = None
) -> ProviderError:
    """The server could not be reached (refused, reset, DNS): name where, how often, and what to check."""
    text = (
        f"cannot reach {provider} at {url} ({detail}) after {_attempts(attempts)}; check that the server "
        "is running and listening there, and that base_url or the provider's base URL variable points at it"
    )
    return ProviderConnectionError(scrub(text, secret), provider=provider)


def timeout_error(
    provider: str,
    url: str,
    attempts: int,
    idle: float | None,
    *,
    writing: bool = False,
    connecting: str | None = None,
    secret: str | None = None,
) -> ProviderError:
    """The server took the request and then sent nothing for ``idle`` seconds (or, ``writing``, stopped
    taking the request's bytes; or, ``connecting``, the transport's message, never took the connection)."""
    if connecting is not None:
        text = (
            f"{provider} at {url} did not accept a connection in time ({connecting}; {_attempts(attempts)}); "
            "the server is down, overloaded or unreachable from here"
        )
        return ProviderTimeoutError(scrub(text, secret), provider=provider)
    if writing:
        waited = f"took none of the request for {idle:g} s" if idle is not None else "stopped reading the request"
    else:
        waited = f"sent nothing for {idle:g} s" if idle is not None else "did not answer in time"
    text = (
        f"{provider} at {url} {waited} ({_attempts(attempts)}); the server is stalled or overloaded, "
        "or the model needs longer: raise the timeout option if it does"
    )
    return ProviderTimeoutError(scrub(text, secret), provider=provider)


def _attempts(count: int) -> str:
    return "1 attempt" if count == 1 else f"{count} attempts"
