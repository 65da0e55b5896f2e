"""Keeping API keys out of error messages, error bodies and exception chains."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "looks_secret", "scrub", "scrub_body", "scrub_json"]

MASK = "***"


def scrub(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` masked."""
    if secret and secret in text:
        return text.replace(secret, MASK)
    return text


def scrub_body(body: Any, secret: str | None) -> Any:
    """An error body (JSON-like or not) with ``secret`` masked wherever it appears."""
    if not secret or body is None:
        return body
    try:
        encoded = json.dumps(body)
    except (TypeError, ValueError):
        return scrub(str(body), secret)
    if secret not in encoded:
        return body
    return json.loads(encoded.replace(secret, MASK))


REDACTED = "<redacted>"
"""What a redacted secret is replaced with (cassette files, inspected payloads)."""

_SECRET_WORDS = frozenset(
    {"apikey", "authorization", "token", "secret", "password", "passwd", "cookie", "credential", "credentials"}
)
_WORD = re.compile(r"[a-z0-9]+")


def looks_secret(key: str) -> bool:
    """True when a mapping key names a credential (``api_key``, ``Authorization``, ``x-api-key``...).

    Words are compared whole, so ``max_tokens`` or ``input_tokens`` are kept while ``token``,
    ``access_token`` or ``x-goog-api-key`` are scrubbed.
    """
    lowered = key.lower()
    if "apikey" in lowered.replace("-", "").replace("_", ""):
        return True
    return any(word in _SECRET_WORDS for word in _WORD.findall(lowered))


def scrub_json(value: Any) -> Any:
    """A copy of a JSON-compatible ``value`` with every secret-looking key's value redacted.

    Strings that carry a bearer token (``"Bearer ..."``) are redacted wherever they are.
    """
    if isinstance(value, Mapping):
        return {key: REDACTED if looks_secret(str(key)) else scrub_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [scrub_json(item) for item in value]
    if isinstance(value, str) and value[:7].lower() == "bearer ":
        return REDACTED
    return value
