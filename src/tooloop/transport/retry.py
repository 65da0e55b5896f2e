"""The one retry policy: which failures are tried again, after how long, how many times.

What is retried: a failure below HTTP (no connection, a reset, a stall), and the statuses the
error table calls retryable (408 timeout, 409 conflict, 429 rate limit, any 5xx), unless the
server says otherwise with ``x-should-retry``. How long to wait: what the server asked
(``retry-after-ms``, ``retry-after`` in seconds or as an HTTP date, Google's
``RetryInfo.retryDelay`` in the error body), when that is at most :attr:`RetryPolicy.max_wait`
(a longer wait is the caller's decision, not a silent sleep: the failure is reported with the
wait it asked for); else an exponential backoff from 0.5 s up to 8 s with jitter, as the SDKs do.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["RetryPolicy", "retry_after", "retryable_status"]

_INITIAL_DELAY = 0.5
_MAX_DELAY = 8.0


def retryable_status(status: int) -> bool:
    """True for the statuses worth trying again: 408, 409, 429 and every 5xx."""
    return status in (408, 409, 429) or status >= 500


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``max_retries`` more attempts after the first; a server's wait obeyed up to ``max_wait`` seconds."""

    max_retries: int = 2
    max_wait: float = 120.0

    @property
    def attempts(self) -> int:
        """Requests one call may make: the retries plus the first."""
        return self.max_retries + 1

    def should_retry(self, status: int, headers: Mapping[str, str], wait: float | None) -> bool:
        """Whether a response with this error ``status`` is worth another attempt (retries left aside)."""
        if wait is not None and wait > self.max_wait:
            return False
        verdict = headers.get("x-should-retry")
        if verdict in ("true", "false"):
            return verdict == "true"
        return retryable_status(status)

    def delay(self, attempt: int, wait: float | None) -> float:
        """Seconds to sleep before attempt ``attempt + 1`` (``wait``: what the server asked, if it said)."""
        if wait is not None and 0 < wait <= self.max_wait:
            return wait
        import random  # here: a process that never retries does not load it

        return min(_INITIAL_DELAY * 2.0**attempt, _MAX_DELAY) * (1 - 0.25 * random.random())


def retry_after(headers: Mapping[str, str] | None, body: Any = None) -> float | None:
    """Seconds to wait: ``retry-after-ms``, ``retry-after`` (seconds or an HTTP date), or Google's
    ``RetryInfo.retryDelay`` in the error body; None when nobody said."""
    if headers:
        millis = _number(headers.get("retry-after-ms"))
        if millis is not None:
            return millis / 1000
        value = headers.get("retry-after")
        if value:
            seconds = _number(value)
            return seconds if seconds is not None else _http_date(value)
    return _retry_delay(body)


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _http_date(value: str) -> float | None:
    import email.utils  # here: HTTP dates are rare, and email.* costs a fresh process ~5 ms

    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _retry_delay(body: Any) -> float | None:
    error = body.get("error", body) if isinstance(body, Mapping) else None
    details = error.get("details") if isinstance(error, Mapping) else None
    for detail in details if isinstance(details, list) else ():
        delay = detail.get("retryDelay") if isinstance(detail, Mapping) else None
        if isinstance(delay, str) and delay.endswith("s"):
            return _number(delay[:-1])
    return None
