"""Anthropic SDK and HTTP failures mapped to tooloop's :class:`ProviderError` tree.

Messages carry the status, Anthropic's error type and its message, never the request headers,
so an API key cannot leak into an error or a log line.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping
from typing import Any

import anthropic
import httpx2

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

__all__ = ["error_for", "map_exception"]

_PROVIDER = "anthropic"
_CONTEXT_PHRASES = ("prompt is too long", "exceed context limit", "context window", "context length")
_TYPE_ERRORS: dict[str, type[ProviderError]] = {
    "authentication_error": AuthenticationError,
    "permission_error": AuthenticationError,
    "rate_limit_error": RateLimitError,
    "overloaded_error": ProviderOverloadedError,
    "api_error": ProviderOverloadedError,
    "timeout_error": ProviderTimeoutError,
    "invalid_request_error": BadRequestError,
    "not_found_error": BadRequestError,
    "request_too_large": BadRequestError,
}


def error_for(
    status: int | None,
    error_type: str | None,
    message: str,
    *,
    body: Any = None,
    headers: Mapping[str, str] | None = None,
) -> ProviderError:
    """The tooloop error for an Anthropic error response (or an ``error`` event mid-stream)."""
    cls = _class_for(status, error_type, message)
    prefix = f"Anthropic {status}" if status else "Anthropic stream error"
    text = f"{prefix} ({error_type}): {message}" if error_type else f"{prefix}: {message}"
    kwargs: dict[str, Any] = {"status_code": status, "provider": _PROVIDER, "body": body}
    if cls is RateLimitError:
        return RateLimitError(text, retry_after=retry_after(headers), **kwargs)
    return cls(text, **kwargs)


def _class_for(status: int | None, error_type: str | None, message: str) -> type[ProviderError]:
    lowered = message.lower()
    if status in (400, 413) or error_type in ("invalid_request_error", "request_too_large"):
        if any(phrase in lowered for phrase in _CONTEXT_PHRASES):
            return ContextLengthError
    if status in (401, 403):
        return AuthenticationError
    if status == 429:
        return RateLimitError
    if status is not None and (status >= 500 or status == 408):
        return ProviderOverloadedError if status != 504 else ProviderTimeoutError
    if error_type in _TYPE_ERRORS:
        return _TYPE_ERRORS[error_type]
    return BadRequestError if status is not None and status < 500 else ProviderOverloadedError


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def map_exception(exc: BaseException, secret: str | None = None) -> ProviderError | None:
    """The tooloop error for an SDK or transport exception, or None when it is not one of those.

    ``secret`` (the API key) is masked wherever the provider echoed it.
    """
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body
        error = body.get("error") if isinstance(body, dict) else None
        error_type = error.get("type") if isinstance(error, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        status = exc.status_code if exc.status_code >= 300 else None  # an error event inside a 200 stream
        return error_for(
            status,
            error_type if isinstance(error_type, str) else None,
            scrub(message if isinstance(message, str) else str(exc), secret),
            body=scrub_body(body, secret),
            headers=exc.response.headers,
        )
    if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
        return ProviderTimeoutError("Anthropic request timed out", provider=_PROVIDER)
    if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError):
        return ProviderConnectionError(scrub(f"connection to Anthropic failed: {exc}", secret), provider=_PROVIDER)
    if isinstance(exc, anthropic.APIResponseValidationError | json.JSONDecodeError):
        return ModelResponseError(f"Anthropic answered something unreadable: {exc}", provider=_PROVIDER)
    return None
