"""Gemini's explicit context cache (``ModelSettings(cache="explicit")``).

The stable prefix of a request (system instruction, tools, tool config) is made a
``cachedContents`` resource once per prefix and lifetime (``cache_ttl``: ``"300s"`` or
``"3600s"``); the requests that follow name it in ``cachedContent`` and leave those three fields
out, as the API requires. Gemini bills the cached tokens at its cache-read price (they come back
as ``cachedContentTokenCount``), plus storage by the hour, which no response reports.

A resource is made again shortly before its lifetime ends. When the API will not make one (a
prefix below the model's minimum size is a 400), the request goes without it and the refusal is
remembered for that prefix; any other failure only skips it this time. Either is logged on
``tooloop.models`` at WARNING, once per prefix.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ...errors import BadRequestError, ProviderError

__all__ = ["ExplicitCache"]

_log = logging.getLogger("tooloop.models")
_PREFIX = ("systemInstruction", "tools", "toolConfig")
_SECONDS = {"1h": 3600, "5m": 300, None: 300}
_MARGIN = 30.0
"""Seconds before a resource's end when a new one is made (a request in flight must still find it)."""


class ExplicitCache:
    """One model's ``cachedContents`` resources, by prefix and lifetime."""

    __slots__ = ("_made", "_refused", "_resource")

    def __init__(self, resource: str) -> None:
        self._resource = resource
        self._made: dict[str, tuple[str, float]] = {}
        """prefix key -> (resource name, monotonic time after which a new one is made)"""
        self._refused: set[str] = set()

    async def apply(
        self,
        body: dict[str, Any],
        ttl: str | None,
        create: Callable[[dict[str, Any]], Awaitable[Any]],
        failure: Callable[[Exception], ProviderError | None],
    ) -> dict[str, Any]:
        """``body`` naming the cached prefix instead of carrying it (made first if need be), or
        ``body`` itself when it has no prefix or no resource could be made."""
        prefix = {name: body[name] for name in _PREFIX if name in body}
        if not prefix:
            return body
        seconds = _SECONDS[ttl]
        key = hashlib.sha256(json.dumps([prefix, seconds], sort_keys=True).encode()).hexdigest()
        made = self._made.get(key)
        now = time.monotonic()
        if made is None or now >= made[1]:
            if key in self._refused:
                return body
            name = await self._create(key, {"model": self._resource, **prefix, "ttl": f"{seconds}s"}, create, failure)
            if name is None:
                return body
            made = self._made[key] = (name, now + seconds - _MARGIN)
        rest = {field: value for field, value in body.items() if field not in prefix}
        rest["cachedContent"] = made[0]
        return rest

    async def _create(
        self,
        key: str,
        resource: dict[str, Any],
        create: Callable[[dict[str, Any]], Awaitable[Any]],
        failure: Callable[[Exception], ProviderError | None],
    ) -> str | None:
        try:
            answer = await create(resource)
        except Exception as exc:
            error = failure(exc)
            if error is None:
                raise
            if isinstance(error, BadRequestError):
                self._refused.add(key)
            _log.warning("Gemini cached content not made (%s): the request carries its prefix instead", error)
            return None
        name = answer.get("name") if isinstance(answer, dict) else None
        if not isinstance(name, str) or not name:
            _log.warning("Gemini answered the cached content without a name: the request carries its prefix instead")
            return None
        return name
