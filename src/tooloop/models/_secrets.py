"""Keeping API keys out of error messages, error bodies and exception chains."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "looks_secret", "scrub", "scrub_body", "scrub_json"]

MASK = "***"


_EDGE = "[A-Za-z0-9_\\-]"
"""A character a key is made of: an occurrence of the key with one of these next to it is part of
a longer word (``"k"`` in ``"check"``), not the key."""


def scrub(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` masked wherever it stands as a value of its own (``Bearer KEY``,
    ``key=KEY``, ``"KEY"``, ``KEY.``), never inside a longer word: a one-letter key must not
    rewrite every word holding that letter."""
    if not secret:
        return text
    secret = _core(secret)
    if secret not in text:
        return text
    return re.sub(f"(?<!{_EDGE}){re.escape(secret)}(?!{_EDGE})", MASK, text)


def _core(secret: str) -> str:
    """The secret without surrounding blanks: a key read from a file with its trailing newline
    shows escaped (``b'Bearer sk-...\\n'``) in the messages of the SDKs' HTTP stack."""
    return secret.strip() or secret


def scrub_body(body: Any, secret: str | None) -> Any:
    """An error body with ``secret`` masked field by field: a field named like a credential
    (``api_key``, ``key``, ``authorization``...) that holds the key is masked whole, other strings
    as :func:`scrub` does."""
    if not secret or body is None or isinstance(body, bool | int | float):
        return body
    if isinstance(body, Mapping):
        return {key: _field(str(key), value, secret) for key, value in body.items()}
    if isinstance(body, list | tuple):
        return [scrub_body(item, secret) for item in body]
    return scrub(body if isinstance(body, str) else str(body), secret)


def _field(key: str, value: Any, secret: str) -> Any:
    if isinstance(value, str) and _core(secret) in value and (looks_secret(key) or key.lower() == "key"):
        return MASK
    return scrub_body(value, secret)


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
