"""The exact payloads exchanged with a provider, for people who want to see what was sent.

An adapter reports the JSON body it sends and the JSON it receives (the body of a plain
response, or every chunk of a stream) to the listener of the current context, if there is one;
otherwise reporting costs one context-variable lookup. The loop installs the listener from
``Hooks(on_provider_payload=...)``. Credentials never appear: values under keys that name one
(``api_key``, ``Authorization``...), bearer tokens and the model's own key are redacted.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any, Literal

from .._json import to_jsonable
from ._secrets import REDACTED, scrub_json

__all__ = [
    "PayloadListener",
    "ProviderPayload",
    "listen",
    "listening",
    "report",
    "start_listening",
    "stop_listening",
    "tap",
]


@dataclass(frozen=True, slots=True)
class ProviderPayload:
    """One payload exchanged with a provider: JSON-compatible ``data``, credentials redacted.

    ``data`` is the request body, the body of a plain response, or, for a streamed response
    (``streamed=True``), the list of its chunks in order.
    """

    direction: Literal["request", "response"]
    provider: str
    model: str
    data: Any
    streamed: bool = False

    def to_json(self, indent: int | None = 2) -> str:
        """``data`` as JSON text."""
        return json.dumps(self.data, indent=indent, ensure_ascii=False)


PayloadListener = Callable[[ProviderPayload], None]
"""Receives each payload of the requests made in its context."""

_listener: ContextVar[PayloadListener | None] = ContextVar("tooloop_payload_listener", default=None)


def listening() -> bool:
    """True when someone receives payloads in this context (adapters skip the work otherwise)."""
    return _listener.get() is not None


@contextlib.contextmanager
def listen(listener: PayloadListener) -> Iterator[None]:
    """Send the payloads of requests made inside the block to ``listener``."""
    token = start_listening(listener)
    try:
        yield
    finally:
        stop_listening(token)


def start_listening(listener: PayloadListener) -> Token[PayloadListener | None]:
    """Send the payloads of requests made from now on in this context to ``listener``, until
    :func:`stop_listening` is given the token returned (:func:`listen` as two calls)."""
    return _listener.set(listener)


def stop_listening(token: Token[PayloadListener | None]) -> None:
    """End what :func:`start_listening` began (the listener before it is back)."""
    _listener.reset(token)


def report(
    direction: Literal["request", "response"],
    provider: str,
    model: str,
    data: Any,
    *,
    secret: str | None = None,
    streamed: bool = False,
) -> None:
    """Hand ``data`` to the current listener, if any, redacted."""
    listener = _listener.get()
    if listener is None:
        return
    clean = _redact(scrub_json(to_jsonable(data)), secret)
    listener(ProviderPayload(direction, provider, model, clean, streamed))


async def tap(
    chunks: AsyncIterator[Any],
    provider: str,
    model: str,
    secret: str | None = None,
    convert: Callable[[Any], Any] | None = None,
) -> AsyncIterator[Any]:
    """Pass ``chunks`` through and report them all (each through ``convert``) as one streamed
    response when they end."""
    seen: list[Any] = []
    try:
        async for chunk in chunks:
            seen.append(chunk if convert is None else convert(chunk))
            yield chunk
    finally:
        report("response", provider, model, seen, secret=secret, streamed=True)


def _redact(value: Any, secret: str | None) -> Any:
    if not secret:
        return value
    if isinstance(value, dict):
        return {key: _redact(item, secret) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact(item, secret) for item in value]
    if isinstance(value, str) and secret in value:
        return value.replace(secret, REDACTED)
    return value
