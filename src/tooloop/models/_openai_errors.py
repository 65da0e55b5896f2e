"""Translate the ``openai`` SDK's exceptions into :mod:`tooloop.errors`, for every OpenAI adapter.

Used by the Chat Completions and the Responses adapters. The SDK has already retried what it
retries (429, 408, 409, 5xx and connection errors, honouring ``retry-after``) by the time an
exception reaches this module, so the mapping only decides which tooloop error the caller sees.
Errors reported inside a successful (200) stream, which have a code but no HTTP status, go through
:func:`stream_error`. The API key is scrubbed from every message and body it could echo.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, NoReturn

import openai

from ..errors import (
    AuthenticationError,
    BadRequestError,
    ContextLengthError,
    ModelResponseError,
    ProviderConnectionError,
    ProviderError,
    ProviderOverloadedError,
    ProviderTimeoutError,
    RateLimitError,
)
from ._secrets import scrub, scrub_body

__all__ = ["is_context_length", "map_openai_error", "parse_retry_after", "raise_mapped", "stream_error"]

_CONTEXT_CODES = frozenset({"context_length_exceeded", "string_above_max_length", "context_window_exceeded"})
_CONTEXT_PHRASES = (
    "maximum context length",
    "context length",
    "context window",
    "context_length_exceeded",
    "too many tokens",
    "prompt is too long",
    "exceeds the model's context",
)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` or ``retry-after`` (seconds); None when absent."""
    if not headers:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def is_context_length(code: object, message: str) -> bool:
    """True when an error code or message says the prompt does not fit the context window."""
    if isinstance(code, str) and code in _CONTEXT_CODES:
        return True
    lowered = message.lower()
    return any(phrase in lowered for phrase in _CONTEXT_PHRASES)


def map_openai_error(exc: BaseException, *, provider: str, secret: str | None = None) -> ProviderError:
    """The tooloop error for an exception raised by the ``openai`` SDK (or while reading its stream)."""
    message = scrub(_message(exc), secret)
    if isinstance(exc, openai.APITimeoutError):
        return ProviderTimeoutError(message, provider=provider)
    if isinstance(exc, openai.APIConnectionError):
        return ProviderConnectionError(message, provider=provider)
    if isinstance(exc, openai.APIStatusError):
        return _status_error(exc, message, provider, scrub_body(exc.body, secret))
    if isinstance(exc, openai.APIError):  # an error event inside a stream: no HTTP status
        return stream_error(exc.code, exc.type, message, provider=provider, body=scrub_body(exc.body, secret))
    if isinstance(exc, json.JSONDecodeError | ValueError):
        return ModelResponseError(f"{provider} sent data that is not valid JSON: {message}", provider=provider)
    return ProviderError(message, provider=provider)


def _status_error(exc: openai.APIStatusError, message: str, provider: str, body: Any) -> ProviderError:
    status = exc.status_code
    common: dict[str, Any] = {"status_code": status, "provider": provider, "body": body}
    if status in (401, 403):
        return AuthenticationError(message, **common)
    if status == 429:
        headers = exc.response.headers if exc.response is not None else None
        return RateLimitError(message, retry_after=parse_retry_after(headers), **common)
    if status == 408:
        return ProviderTimeoutError(message, **common)
    if status >= 500 or status == 409:
        return ProviderOverloadedError(message, **common)
    if status in (400, 413, 422) and is_context_length(exc.code, message):
        return ContextLengthError(message, **common)
    return BadRequestError(message, **common)


def stream_error(code: object, kind: object, message: str, *, provider: str, body: Any = None) -> ProviderError:
    """The tooloop error for a failure reported inside a 200 stream or a failed response.

    ``code`` and ``kind`` are the error object's ``code`` and ``type`` (either may be missing).
    """
    label = " ".join(str(v) for v in (code, kind) if v)
    if is_context_length(code, message):
        return ContextLengthError(message, provider=provider, body=body)
    if "rate_limit" in label:
        return RateLimitError(message, provider=provider, body=body)
    if not label or any(word in label for word in ("server_error", "overloaded", "slow_down")):
        return ProviderOverloadedError(message, provider=provider, body=body)
    if label.startswith("invalid"):
        return BadRequestError(message, provider=provider, body=body)
    return ProviderError(message, provider=provider, body=body)


def raise_mapped(exc: BaseException, *, provider: str, secret: str | None) -> NoReturn:
    """Raise the tooloop error for ``exc``, chained to it unless its text holds the API key."""
    error = map_openai_error(exc, provider=provider, secret=secret)
    raise error from (None if secret and secret in str(exc) else exc)


def _message(exc: BaseException) -> str:
    text = str(exc)
    return text if text else type(exc).__name__
