"""Keeping API keys out of error messages, error bodies and exception chains."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["scrub", "scrub_body"]

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
